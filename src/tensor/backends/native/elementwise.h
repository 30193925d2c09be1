/*
 * Interface of the native element-wise sum (elementwise.c) for its N-API binding (elementwise-addon.c).
 * Is not: the arithmetic or argument checking.
 */
#ifndef GRPO_ELEMENTWISE_H
#define GRPO_ELEMENTWISE_H

#include <stdint.h>

#include "thread-pool.h"

/* out[i] = a[i] + b[i] for i < n, split over the pool when n is large; out may be a or b. */
void elementwise_add(thread_pool *pool, int threads, const float *a, const float *b, float *out, int64_t n);

#endif
