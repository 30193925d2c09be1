/*
 * Row-wise kernels of the `native` backend: RMSNorm forward/backward, the per-row log-sum-exp (and
 * entropy) of logits, the softmax part of log-softmax-gather's gradient, the AdamW update, one
 * categorical draw per row of logits. The JavaScript loops in src/tensor/fused.ts and src/nn/optimizer.ts
 * are the spec. (SwiGLU is swiglu.c's, decode attention decode-attention.c's.)
 *
 * Is: arithmetic on flat float arrays, split over the gemm context's thread pool. The exponential is a
 * Cephes-style range reduction plus degree-6 polynomial on GCC vectors (≤ 2 ulp over float32, checked
 * against Math.exp in row-kernels.test.ts), with NaN, ±Infinity, overflow and underflow handled as
 * Math.exp rounded to float32 does. Reductions over a row accumulate in double, as the JS loops do.
 * row-kernels-body.c is compiled once per instruction set (AVX-512, AVX2, portable); each context uses
 * the set named like its gemm kernel, so `isa` picks (and tests can force) both paths alike.
 * Is not: argument checking (addon.c checks lengths for memory safety) or gradient bookkeeping.
 *
 * Its own translation unit (binding.gyp); row-kernels.h is the interface the N-API binding uses.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "row-kernels.h"

/* The helpers are always inlined into the cloned kernels, so the vector ABI warning does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* No fused multiply-adds anywhere: the kernels reproduce the JS loops' roundings (exp's accuracy does not need them). */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RK(name) name##_avx512
#define RK_BYTES 64
#define RK_TARGET __attribute__((target("avx512f,avx2,fma")))
#define RK_NAME "avx512"
#include "row-kernels-body.c"
#undef RK
#undef RK_BYTES
#undef RK_TARGET
#undef RK_NAME
#define RK(name) name##_avx2
#define RK_BYTES 32
#define RK_TARGET __attribute__((target("avx2,fma")))
#define RK_NAME "avx2"
#include "row-kernels-body.c"
#undef RK
#undef RK_BYTES
#undef RK_TARGET
#undef RK_NAME
#endif
#define RK(name) name##_generic
#define RK_BYTES 16
#define RK_TARGET
#define RK_NAME "generic"
#include "row-kernels-body.c"
#undef RK
#undef RK_BYTES
#undef RK_TARGET
#undef RK_NAME

/* The set for a gemm kernel name ("avx512", "avx2", "generic"); the context already checked the CPU. */
const row_kernel_set *row_kernels_named(const char *name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcmp(name, "avx512") == 0) return &row_kernels_avx512;
  if (strcmp(name, "avx2") == 0) return &row_kernels_avx2;
#endif
  (void)name;
  return &row_kernels_generic;
}

/* ---- splitting a kernel over the pool: each thread takes a contiguous share of [0, count). ---- */

static void run_row_job(void *arg, int thread) {
  const row_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->count, j->threads, j->align, thread, &begin, &end);
  if (begin >= end) return;
  switch (j->kind) {
    case JOB_LOG_SUM_EXP: j->k->log_sum_exp(j->in[0], j->width, j->out[0], j->doubles, j->out[1], begin, end); break;
    case JOB_SOFTMAX_GRAD:
      j->k->softmax_grad(j->in[0], j->width, j->in[1], j->doubles, j->in[2], j->out[0], begin, end);
      break;
    case JOB_RMS_FORWARD:
      j->k->rms_norm_forward(j->in[0], j->in[1], j->width, j->scalar, j->out[0], j->out[1], begin, end);
      break;
    case JOB_RMS_BACKWARD:
      j->k->rms_norm_backward(j->in[0], j->in[1], j->in[2], j->in[3], j->width, j->out[0],
                            j->out[1] + (int64_t)thread * j->width, begin, end);
      break;
    case JOB_ADAMW: j->k->adamw(j->out[0], j->in[0], j->out[1], j->out[2], j->adamw, begin, end); break;
    case JOB_SAMPLE:
      j->k->sample(j->in[0], j->width, j->scalar, j->doubles_in, j->ints, j->doubles, begin, end);
      break;
  }
}

/* Below this many element visits a second thread's wake-up costs more than it saves. */
#define ROW_PARALLEL_MIN_WORK 32768

void run_rows(thread_pool *pool, int threads, row_job *j) {
  double work = (double)j->count * (double)(j->width > 0 ? j->width : 1);
  j->threads = work < ROW_PARALLEL_MIN_WORK ? 1 : threads;
  if (j->threads == 1)
    run_row_job(j, 0);
  else
    thread_pool_run(pool, run_row_job, j);
}
