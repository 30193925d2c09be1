/*
 * A small persistent pthread pool: `threads - 1` workers plus the calling thread run one job together.
 *
 * Is: fork-join for one job at a time (the caller blocks until every part is done).
 * Is not: a task queue; nested or concurrent jobs on one pool are not supported.
 */
#ifndef GRPO_THREAD_POOL_H
#define GRPO_THREAD_POOL_H

#include <stdint.h>

typedef void (*pool_job_fn)(void *arg, int thread_index);
typedef struct thread_pool thread_pool;

/* Returns NULL when a thread could not be started. */
thread_pool *thread_pool_create(int threads);
void thread_pool_destroy(thread_pool *pool);
/* Calls job(arg, t) for t = 0..threads-1 (t = 0 on the caller) and waits for all of them. */
void thread_pool_run(thread_pool *pool, pool_job_fn job, void *arg);

/*
 * Thread `thread`'s contiguous share [*begin, *end) of [0, count) split `threads` ways, every share
 * starting at a multiple of `align` (whole vectors or cache lines); empty (*begin >= *end) past the end.
 */
static inline void thread_pool_share(int64_t count, int threads, int64_t align, int thread, int64_t *begin,
                                     int64_t *end) {
  int64_t per = (count + threads - 1) / threads;
  per = (per + align - 1) / align * align;
  *begin = per * thread;
  *end = *begin + per < count ? *begin + per : count;
}

#endif
