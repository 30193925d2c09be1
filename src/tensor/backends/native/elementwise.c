/*
 * The element-wise float32 sum of the `native` backend (Backend.addArrays): a training step's residual sums
 * and the gradient accumulations of autograd, arrays of [tokens, hidden] floats that a single JavaScript loop
 * walked while the pool's other threads waited. The spec is the JS loop in recompute.ts / autograd.ts.
 * Also gradient clipping's two passes over every gradient (Backend.sumOfSquares, Backend.scaleArray; the
 * spec is nn/clip.ts's loops): Σ x² in double, and x·factor rounded to float32 in place.
 *
 * Is: one plain loop split into contiguous shares over the gemm context's thread pool. A float32 sum is
 * correctly rounded either way, so it equals the JS loop bit for bit (JS adds in double and rounds once,
 * which gives the same float for one addition). No per-instruction-set builds: the loop is bound by memory
 * bandwidth, and -O3 vectorises it with the baseline SSE2 already.
 * The sum of squares adds each share in order in double and then the shares' totals in thread order: the
 * JS loop's sum regrouped at the share boundaries (so within a few double roundings of it, not bit for bit).
 * And copy_blocks, the strided copy behind Backend.copyBlocks (a decode step's new keys and values into the
 * KV cache: one memcpy per row instead of a JavaScript loop per float).
 * Is not: argument checking (elementwise-addon.c) or broadcasting (elementwise.ts).
 */
#include <string.h>

#include "elementwise.h"

typedef struct {
  const float *a, *b;
  float *out;
  int64_t n;
  int threads;
} add_job;

/* Shares start at multiples of 16 floats (64 bytes: whole cache lines, so threads never share one). */
#define ADD_ALIGN 16
/* Below this many elements a second thread's wake-up costs more than it saves. */
#define ADD_PARALLEL_MIN 65536

static void add_share(void *arg, int thread) {
  const add_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->n, j->threads, ADD_ALIGN, thread, &begin, &end);
  const float *a = j->a, *b = j->b;
  float *out = j->out;
  for (int64_t i = begin; i < end; i++) out[i] = a[i] + b[i];
}

void elementwise_add(thread_pool *pool, int threads, const float *a, const float *b, float *out, int64_t n) {
  add_job job = {.a = a, .b = b, .out = out, .n = n, .threads = n < ADD_PARALLEL_MIN ? 1 : threads};
  if (job.threads == 1)
    add_share(&job, 0);
  else
    thread_pool_run(pool, add_share, &job);
}

/* The most shares a sum of squares is split into (its partial sums live on the caller's stack). */
#define SQUARES_MAX_THREADS 64

typedef struct {
  const float *x;
  float *out;
  int64_t n;
  int threads;
  double factor;
  double partial[SQUARES_MAX_THREADS];
} norm_job;

static void squares_share(void *arg, int thread) {
  norm_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->n, j->threads, ADD_ALIGN, thread, &begin, &end);
  double total = 0;
  for (int64_t i = begin; i < end; i++) total += (double)j->x[i] * (double)j->x[i];
  j->partial[thread] = total;
}

static void scale_share(void *arg, int thread) {
  norm_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->n, j->threads, ADD_ALIGN, thread, &begin, &end);
  for (int64_t i = begin; i < end; i++) j->out[i] = (float)((double)j->out[i] * j->factor);
}

static int norm_threads(int threads, int64_t n) {
  if (n < ADD_PARALLEL_MIN) return 1;
  return threads < SQUARES_MAX_THREADS ? threads : SQUARES_MAX_THREADS;
}

double elementwise_sum_of_squares(thread_pool *pool, int threads, const float *x, int64_t n) {
  norm_job job = {.x = x, .n = n, .threads = norm_threads(threads, n)};
  if (job.threads == 1)
    squares_share(&job, 0);
  else
    thread_pool_run(pool, squares_share, &job);
  double total = 0;
  for (int t = 0; t < job.threads; t++) total += job.partial[t];
  return total;
}

void elementwise_scale(thread_pool *pool, int threads, float *x, double factor, int64_t n) {
  norm_job job = {.out = x, .n = n, .threads = norm_threads(threads, n), .factor = factor};
  if (job.threads == 1)
    scale_share(&job, 0);
  else
    thread_pool_run(pool, scale_share, &job);
}

void copy_blocks(const float *source, float *target, int64_t count, int64_t length, int64_t source_start,
                 int64_t source_stride, int64_t target_start, int64_t target_stride) {
  for (int64_t i = 0; i < count; i++)
    memmove(target + target_start + i * target_stride, source + source_start + i * source_stride,
            (size_t)length * sizeof(float));
}
