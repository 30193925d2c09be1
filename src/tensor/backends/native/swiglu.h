/*
 * Interface of the native float32 SwiGLU (swiglu.c) for its N-API binding (swiglu-addon.c): the
 * per-instruction-set kernels and the entry point that splits one call over the thread pool.
 * Is not: the arithmetic (swiglu-body.c) or argument checking.
 */
#ifndef GRPO_SWIGLU_H
#define GRPO_SWIGLU_H

#include <stdint.h>

#include "thread-pool.h"

typedef struct {
  const char *name;
  /* out = silu(gate)·up over elements [begin, end). */
  void (*forward)(const float *gate, const float *up, float *out, int64_t begin, int64_t end);
  /*
   * grad_gate = (g·up)·σ(gate)(1 + gate(1 − σ(gate))), grad_up = g·silu(gate) over [begin, end), and, when out is
   * not NULL, out = silu(gate)·up in the same pass (bit for bit `forward`'s values).
   */
  void (*backward)(const float *gate, const float *up, const float *g, float *grad_gate, float *grad_up, float *out,
                   int64_t begin, int64_t end);
} swiglu_kernel_set;

/* The kernel set for a gemm kernel name ("avx512", "avx2", "generic"); the context already checked the CPU. */
const swiglu_kernel_set *swiglu_kernels_named(const char *name);

/* One call over n elements: forward when g is NULL (grad_gate, grad_up unused), else backward. */
void swiglu_run(thread_pool *pool, int threads, const swiglu_kernel_set *k, int64_t n, const float *gate,
                const float *up, const float *g, float *grad_gate, float *grad_up, float *out);

#endif
