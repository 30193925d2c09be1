/*
 * Row-wise kernels of the `native` backend: SwiGLU forward/backward, RMSNorm forward/backward, the
 * per-row log-sum-exp (and entropy) of logits, the softmax part of log-softmax-gather's gradient, and
 * the AdamW update. The JavaScript loops in src/tensor/fused.ts and src/nn/optimizer.ts are the spec.
 *
 * Is: arithmetic on flat float arrays, split over the gemm context's thread pool. The exponential is a
 * Cephes-style range reduction plus degree-6 polynomial on GCC vectors (≤ 2 ulp over float32, checked
 * against Math.exp in row-kernels.test.ts), with NaN, ±Infinity, overflow and underflow handled as
 * Math.exp rounded to float32 does. Reductions over a row accumulate in double, as the JS loops do.
 * row-kernels-body.c is compiled once per instruction set (AVX-512, AVX2, portable); each context uses
 * the set named like its gemm kernel, so `isa` picks (and tests can force) both paths alike.
 * Is not: argument checking (addon.c checks lengths for memory safety) or gradient bookkeeping.
 *
 * Compiled as part of addon.c (included there), so binding.gyp keeps its source list.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thread-pool.h"

/* The helpers are always inlined into the cloned kernels, so the vector ABI warning does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* No fused multiply-adds anywhere: the kernels reproduce the JS loops' roundings (exp's accuracy does not need them). */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define INLINE static inline __attribute__((always_inline))

/* One AdamW step over [begin, end), in double exactly as optimizer.ts (no fused multiply-adds). */
typedef struct {
  double beta1, beta2, epsilon, step_size, bias_correction2_sqrt, decay_factor;
} adamw_scalars;

typedef struct {
  const char *name;
  void (*exp)(const float *x, float *out, int64_t n);
  void (*swiglu_forward)(const float *gate, const float *up, float *out, float *activated, int64_t begin, int64_t end);
  void (*swiglu_backward)(const float *gate, const float *up, const float *activated, const float *g, float *grad_gate,
                          float *grad_up, int64_t begin, int64_t end);
  void (*log_sum_exp)(const float *logits, int64_t V, float *shift, double *log_total, float *entropy, int64_t begin,
                      int64_t end);
  void (*softmax_grad)(const float *logits, int64_t V, const float *shift, const double *log_total,
                       const float *row_grad, float *out, int64_t begin, int64_t end);
  void (*rms_norm_forward)(const float *x, const float *w, int64_t D, double eps, float *out, float *inverse_rms,
                           int64_t begin, int64_t end);
  void (*rms_norm_backward)(const float *x, const float *w, const float *inverse_rms, const float *g, int64_t D,
                            float *grad_x, float *grad_w_part, int64_t begin, int64_t end);
  void (*adamw)(float *p, const float *g, float *m, float *v, const adamw_scalars *k, int64_t begin, int64_t end);
} row_kernel_set;

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
static const row_kernel_set *row_kernels_named(const char *name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcmp(name, "avx512") == 0) return &row_kernels_avx512;
  if (strcmp(name, "avx2") == 0) return &row_kernels_avx2;
#endif
  (void)name;
  return &row_kernels_generic;
}

/* ---- splitting a kernel over the pool: each thread takes a contiguous share of [0, count). ---- */

typedef enum { JOB_SWIGLU_FORWARD, JOB_SWIGLU_BACKWARD, JOB_LOG_SUM_EXP, JOB_SOFTMAX_GRAD, JOB_RMS_FORWARD,
               JOB_RMS_BACKWARD, JOB_ADAMW } row_job_kind;

typedef struct {
  row_job_kind kind;
  const row_kernel_set *k;
  int threads;
  int64_t count, width; /* items (rows or elements) and the row width where there is one */
  int64_t align;        /* shares start at multiples of this (whole vectors for element-wise jobs) */
  const float *in[5];
  float *out[4];
  double *doubles;
  double scalar;
  const adamw_scalars *adamw;
} row_job;

static void run_row_job(void *arg, int thread) {
  const row_job *j = arg;
  int64_t per = (j->count + j->threads - 1) / j->threads;
  per = (per + j->align - 1) / j->align * j->align;
  int64_t begin = per * thread, end = begin + per < j->count ? begin + per : j->count;
  if (begin >= end) return;
  switch (j->kind) {
    case JOB_SWIGLU_FORWARD: j->k->swiglu_forward(j->in[0], j->in[1], j->out[0], j->out[1], begin, end); break;
    case JOB_SWIGLU_BACKWARD:
      j->k->swiglu_backward(j->in[0], j->in[1], j->in[2], j->in[3], j->out[0], j->out[1], begin, end);
      break;
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
  }
}

/* Element-wise jobs split at multiples of 16 elements: whole vectors for every instruction set. */
#define ROW_ALIGN 16

/* Below this many element visits a second thread's wake-up costs more than it saves. */
#define ROW_PARALLEL_MIN_WORK 32768

static void run_rows(thread_pool *pool, int threads, row_job *j) {
  double work = (double)j->count * (double)(j->width > 0 ? j->width : 1);
  j->threads = work < ROW_PARALLEL_MIN_WORK ? 1 : threads;
  if (j->threads == 1)
    run_row_job(j, 0);
  else
    thread_pool_run(pool, run_row_job, j);
}
