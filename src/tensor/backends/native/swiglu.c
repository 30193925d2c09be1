/*
 * SwiGLU (silu(gate)·up) forward and backward of the `native` backend in float32, split over the gemm
 * context's thread pool. The spec is fused.ts's `swiglu` loops, which compute σ with a double exp.
 *
 * Is: swiglu-body.c compiled once per instruction set (AVX-512, AVX2, portable; each context uses the set
 * named like its gemm kernel), and the split of one call into contiguous shares of whole vectors.
 * Accuracy against the spec (stated and checked in swiglu-kernel.test.ts): the float exp is within 2 ulp and each of σ's, silu's and the products' roundings adds half an ulp, so outputs and
 * grad_up are within 8 ulp of the loops' values; grad_gate's σ(1 + x(1 − σ)) cancels near x ≈ −1.28, so
 * its error is bounded relative to |g·up|·σ·(1 + |x|) instead. Float32 is what the model's activations and
 * PyTorch's SiLU use; the double exp made this pass several times slower than the memory traffic it needs.
 * Is not: argument checking (swiglu-addon.c) or gradient bookkeeping (fused.ts).
 */
#include <stdint.h>
#include <string.h>

#include "swiglu.h"

/* The helpers are always inlined into the cloned kernels, so the vector ABI warning does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* No fused multiply-adds: every set then rounds alike, and the backward's recomputed output equals the forward's. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SW(name) name##_avx512
#define SW_BYTES 64
#define SW_TARGET __attribute__((target("avx512f,avx2,fma")))
#include "swiglu-body.c"
#undef SW
#undef SW_BYTES
#undef SW_TARGET
#define SW(name) name##_avx2
#define SW_BYTES 32
#define SW_TARGET __attribute__((target("avx2,fma")))
#include "swiglu-body.c"
#undef SW
#undef SW_BYTES
#undef SW_TARGET
#endif
#define SW(name) name##_generic
#define SW_BYTES 16
#define SW_TARGET
#include "swiglu-body.c"
#undef SW
#undef SW_BYTES
#undef SW_TARGET

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static const swiglu_kernel_set swiglu_avx512 = {"avx512", swiglu_forward_avx512, swiglu_backward_avx512};
static const swiglu_kernel_set swiglu_avx2 = {"avx2", swiglu_forward_avx2, swiglu_backward_avx2};
#endif
static const swiglu_kernel_set swiglu_generic = {"generic", swiglu_forward_generic, swiglu_backward_generic};

const swiglu_kernel_set *swiglu_kernels_named(const char *name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcmp(name, "avx512") == 0) return &swiglu_avx512;
  if (strcmp(name, "avx2") == 0) return &swiglu_avx2;
#endif
  (void)name;
  return &swiglu_generic;
}

typedef struct {
  const swiglu_kernel_set *k;
  int threads;
  int64_t n;
  const float *gate, *up, *g;
  float *grad_gate, *grad_up, *out;
} swiglu_job;

/* Shares start at multiples of 16 elements: whole vectors for every set, so no share splits a vector. */
#define SWIGLU_ALIGN 16
/* Below this many elements a second thread's wake-up costs more than it saves (a decode step's MLP). */
#define SWIGLU_PARALLEL_MIN 32768

static void run_share(void *arg, int thread) {
  const swiglu_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->n, j->threads, SWIGLU_ALIGN, thread, &begin, &end);
  if (begin >= end) return;
  if (j->g)
    j->k->backward(j->gate, j->up, j->g, j->grad_gate, j->grad_up, j->out, begin, end);
  else
    j->k->forward(j->gate, j->up, j->out, begin, end);
}

void swiglu_run(thread_pool *pool, int threads, const swiglu_kernel_set *k, int64_t n, const float *gate,
                const float *up, const float *g, float *grad_gate, float *grad_up, float *out) {
  swiglu_job job = {.k = k, .threads = n < SWIGLU_PARALLEL_MIN ? 1 : threads, .n = n, .gate = gate, .up = up,
                    .g = g, .grad_gate = grad_gate, .grad_up = grad_up, .out = out};
  if (job.threads == 1)
    run_share(&job, 0);
  else
    thread_pool_run(pool, run_share, &job);
}
