/*
 * Persistent pthread pool (see thread-pool.h). A worker that finished a job spins briefly for the next
 * one (matrix products come back to back in a training step, and a futex wake-up costs more than a
 * small product), then sleeps on a condition variable so an idle pool does not steal a core.
 */
#include "thread-pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/*
 * About a millisecond of pause instructions on a recent x86 core: in a decode step the JavaScript between two
 * products (rope, residuals, sampling) takes up to a few hundred microseconds, and waking a sleeping worker
 * costs tens of microseconds in a VM, more than a 64-row product's share.
 */
#define SPIN_LIMIT 20000

struct thread_pool {
  int threads;
  pthread_t *workers;
  pthread_mutex_t mutex;
  pthread_cond_t start;
  atomic_ulong generation; /* bumped (release) after job/arg are written */
  atomic_int pending;      /* workers still running the current job */
  atomic_int stopping;
  pool_job_fn job;
  void *arg;
};

typedef struct {
  thread_pool *pool;
  int index;
} worker_start;

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Returns once the generation moved past `seen` or the pool is stopping. */
static unsigned long wait_for_job(thread_pool *pool, unsigned long seen) {
  for (int spins = 0; spins < SPIN_LIMIT; spins++) {
    unsigned long now = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (now != seen || atomic_load(&pool->stopping)) return now;
    cpu_relax();
  }
  pthread_mutex_lock(&pool->mutex);
  unsigned long now;
  while ((now = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen && !atomic_load(&pool->stopping))
    pthread_cond_wait(&pool->start, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
  return now;
}

static void *worker_main(void *raw) {
  worker_start start = *(worker_start *)raw;
  free(raw);
  thread_pool *pool = start.pool;
  unsigned long seen = 0;
  for (;;) {
    seen = wait_for_job(pool, seen);
    if (atomic_load(&pool->stopping)) return NULL;
    pool->job(pool->arg, start.index);
    atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
  }
}

thread_pool *thread_pool_create(int threads) {
  if (threads < 1) threads = 1;
  thread_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->threads = threads;
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->start, NULL);
  pool->workers = calloc((size_t)threads, sizeof(pthread_t));
  if (!pool->workers) {
    pool->threads = 1;
    thread_pool_destroy(pool);
    return NULL;
  }
  for (int t = 1; t < threads; t++) {
    worker_start *start = malloc(sizeof *start);
    if (start) {
      start->pool = pool;
      start->index = t;
    }
    if (!start || pthread_create(&pool->workers[t], NULL, worker_main, start) != 0) {
      free(start);
      pool->threads = t; /* only t threads exist; destroy joins exactly those */
      thread_pool_destroy(pool);
      return NULL;
    }
  }
  return pool;
}

void thread_pool_destroy(thread_pool *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mutex);
  atomic_store(&pool->stopping, 1);
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->mutex);
  if (pool->workers)
    for (int t = 1; t < pool->threads; t++) pthread_join(pool->workers[t], NULL);
  pthread_mutex_destroy(&pool->mutex);
  pthread_cond_destroy(&pool->start);
  free(pool->workers);
  free(pool);
}

void thread_pool_run(thread_pool *pool, pool_job_fn job, void *arg) {
  if (pool->threads == 1) {
    job(arg, 0);
    return;
  }
  pool->job = job;
  pool->arg = arg;
  atomic_store(&pool->pending, pool->threads - 1);
  pthread_mutex_lock(&pool->mutex); /* pairs with the sleepers' check-then-wait */
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->mutex);
  job(arg, 0);
  for (int spins = 0; atomic_load_explicit(&pool->pending, memory_order_acquire) > 0; spins++) {
    if (spins < SPIN_LIMIT)
      cpu_relax();
    else
      sched_yield();
  }
}
