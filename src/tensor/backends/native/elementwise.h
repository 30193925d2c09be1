/*
 * Interface of the native element-wise sum, sum of squares, scaling and strided copy (elementwise.c) for its N-API binding (elementwise-addon.c).
 * Is not: the arithmetic or argument checking.
 */
#ifndef GRPO_ELEMENTWISE_H
#define GRPO_ELEMENTWISE_H

#include <stdint.h>

#include "thread-pool.h"

/* out[i] = a[i] + b[i] for i < n, split over the pool when n is large; out may be a or b. */
void elementwise_add(thread_pool *pool, int threads, const float *a, const float *b, float *out, int64_t n);

/* Σ x[i]² for i < n, each square and sum in double (gradient clipping's norm). */
double elementwise_sum_of_squares(thread_pool *pool, int threads, const float *x, int64_t n);

/* x[i] = (float)(x[i]·factor) in place for i < n, the product in double (gradient clipping's scaling). */
void elementwise_scale(thread_pool *pool, int threads, float *x, double factor, int64_t n);

/*
 * Block i < count: target[target_start + i·target_stride ..] = source[source_start + i·source_stride ..], `length`
 * floats each (Backend.copyBlocks), on the calling thread: a decode step's copies are a few MB, bound by memory.
 */
void copy_blocks(const float *source, float *target, int64_t count, int64_t length, int64_t source_start,
                 int64_t source_stride, int64_t target_start, int64_t target_stride);

#endif
