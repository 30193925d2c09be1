/*
 * Interface of the native row kernels (row-kernels.c) for their N-API binding (row-kernels-addon.c):
 * the per-instruction-set kernel table, the job that splits one kernel call over the thread pool, and
 * the two entry points. Is not: the arithmetic (row-kernels-body.c) or argument checking.
 */
#ifndef GRPO_ROW_KERNELS_H
#define GRPO_ROW_KERNELS_H

#include <stdint.h>

#include "thread-pool.h"

/* One AdamW step over [begin, end), in double exactly as optimizer.ts (no fused multiply-adds). */
typedef struct {
  double beta1, beta2, epsilon, step_size, bias_correction2_sqrt, decay_factor;
} adamw_scalars;

typedef struct {
  const char *name;
  void (*exp)(const float *x, float *out, int64_t n);
  void (*log_sum_exp)(const float *logits, int64_t V, float *shift, double *log_total, float *entropy, int64_t begin,
                      int64_t end);
  void (*softmax_grad)(const float *logits, int64_t V, const float *shift, const double *log_total,
                       const float *row_grad, float *out, int64_t begin, int64_t end);
  void (*rms_norm_forward)(const float *x, const float *w, int64_t D, double eps, float *out, float *inverse_rms,
                           int64_t begin, int64_t end);
  void (*rms_norm_backward)(const float *x, const float *w, const float *inverse_rms, const float *g, int64_t D,
                            float *grad_x, float *grad_w_part, int64_t begin, int64_t end);
  void (*adamw)(float *p, const float *g, float *m, float *v, const adamw_scalars *k, int64_t begin, int64_t end);
  void (*sample)(const float *logits, int64_t V, double temperature, const double *uniforms, int32_t *ids,
                 double *logprobs, int64_t begin, int64_t end);
} row_kernel_set;

/* ---- splitting a kernel over the pool: each thread takes a contiguous share of [0, count). ---- */

typedef enum { JOB_LOG_SUM_EXP, JOB_SOFTMAX_GRAD, JOB_RMS_FORWARD,
               JOB_RMS_BACKWARD, JOB_ADAMW, JOB_SAMPLE } row_job_kind;

typedef struct {
  row_job_kind kind;
  const row_kernel_set *k;
  int threads;
  int64_t count, width; /* items (rows or elements) and the row width where there is one */
  int64_t align;        /* shares start at multiples of this (whole vectors for element-wise jobs) */
  const float *in[4];
  float *out[4];
  double *doubles;
  const double *doubles_in;
  int32_t *ints;
  double scalar;
  const adamw_scalars *adamw;
} row_job;

/* Element-wise jobs split at multiples of 16 elements: whole vectors for every instruction set. */
#define ROW_ALIGN 16

/* The kernel set for a gemm kernel name ("avx512", "avx2", "generic"); the context already checked the CPU. */
const row_kernel_set *row_kernels_named(const char *name);

/* Runs `j` on the calling thread, or on `threads` pool threads when the work is large enough. */
void run_rows(thread_pool *pool, int threads, row_job *j);

#endif
