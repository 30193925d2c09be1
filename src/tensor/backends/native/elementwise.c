/*
 * The element-wise float32 sum of the `native` backend (Backend.addArrays): a training step's residual sums
 * and the gradient accumulations of autograd, arrays of [tokens, hidden] floats that a single JavaScript loop
 * walked while the pool's other threads waited. The spec is the JS loop in recompute.ts / autograd.ts.
 *
 * Is: one plain loop split into contiguous shares over the gemm context's thread pool. A float32 sum is
 * correctly rounded either way, so it equals the JS loop bit for bit (JS adds in double and rounds once,
 * which gives the same float for one addition). No per-instruction-set builds: the loop is bound by memory
 * bandwidth, and -O3 vectorises it with the baseline SSE2 already.
 * Is not: argument checking (elementwise-addon.c) or broadcasting (elementwise.ts).
 */
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
