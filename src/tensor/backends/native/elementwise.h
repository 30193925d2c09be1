/*
 * Interface of the native element-wise sum, sum of squares and scaling (elementwise.c) for its N-API binding (elementwise-addon.c).
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

#endif
