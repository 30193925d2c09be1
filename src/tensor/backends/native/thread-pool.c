/*
 * Persistent pthread pool (see thread-pool.h). Workers sleep on a condition variable between jobs:
 * the machine is small and shared, so idle spinning would steal a core from the JavaScript thread.
 */
#include "thread-pool.h"

#include <pthread.h>
#include <stdlib.h>

struct thread_pool {
  int threads;
  pthread_t *workers;
  pthread_mutex_t mutex;
  pthread_cond_t start;
  pthread_cond_t done;
  unsigned long generation;
  int pending;
  int stopping;
  pool_job_fn job;
  void *arg;
};

typedef struct {
  thread_pool *pool;
  int index;
} worker_start;

static void *worker_main(void *raw) {
  worker_start start = *(worker_start *)raw;
  free(raw);
  thread_pool *pool = start.pool;
  unsigned long seen = 0;
  for (;;) {
    pthread_mutex_lock(&pool->mutex);
    while (pool->generation == seen && !pool->stopping) pthread_cond_wait(&pool->start, &pool->mutex);
    if (pool->stopping) {
      pthread_mutex_unlock(&pool->mutex);
      return NULL;
    }
    seen = pool->generation;
    pool_job_fn job = pool->job;
    void *arg = pool->arg;
    pthread_mutex_unlock(&pool->mutex);
    job(arg, start.index);
    pthread_mutex_lock(&pool->mutex);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->mutex);
  }
}

thread_pool *thread_pool_create(int threads) {
  if (threads < 1) threads = 1;
  thread_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->threads = threads;
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->start, NULL);
  pthread_cond_init(&pool->done, NULL);
  pool->workers = calloc((size_t)threads, sizeof(pthread_t));
  if (!pool->workers) {
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
  pool->stopping = 1;
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->mutex);
  if (pool->workers)
    for (int t = 1; t < pool->threads; t++) pthread_join(pool->workers[t], NULL);
  pthread_mutex_destroy(&pool->mutex);
  pthread_cond_destroy(&pool->start);
  pthread_cond_destroy(&pool->done);
  free(pool->workers);
  free(pool);
}

void thread_pool_run(thread_pool *pool, pool_job_fn job, void *arg) {
  if (pool->threads == 1) {
    job(arg, 0);
    return;
  }
  pthread_mutex_lock(&pool->mutex);
  pool->job = job;
  pool->arg = arg;
  pool->pending = pool->threads - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->mutex);
  job(arg, 0);
  pthread_mutex_lock(&pool->mutex);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
}
