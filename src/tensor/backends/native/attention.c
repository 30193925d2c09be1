/*
 * Causal attention for training (forward and backward) and the rotary embedding of the `native` backend.
 * The spec is tensor/fused.ts: causalAttention's matmul + softmax loops (attention-rows.ts) and rope's rotate.
 *
 * Is: the flash-attention scheme over (batch, head) items on the gemm context's thread pool. The forward
 * keeps one log-sum-exp per query row instead of the [B, Hq, T, S] probabilities; the backward recomputes
 * the probabilities from q·kᵀ and that log-sum-exp, one key-value head group per item so that the group's
 * key and value gradients have one writer. attention-body.c is compiled once per instruction set (AVX-512,
 * AVX2, portable) like row-kernels-body.c, and each context uses the set named like its gemm kernel.
 * Fused multiply-adds are allowed here (unlike row-kernels.c): attention is checked against the spec with a
 * tolerance, while RoPE is bit for bit either way (its products of two floats are exact in double).
 * Is not: argument checks (attention-addon.c, native-backend.ts) or gradient bookkeeping (fused.ts).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

/* The helpers are always inlined into the cloned kernels, so the vector ABI warning does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AK(name) name##_avx512
#define AK_BYTES 64
#define AK_TARGET __attribute__((target("avx512f,avx2,fma")))
#define AK_NAME "avx512"
#include "attention-body.c"
#undef AK
#undef AK_BYTES
#undef AK_TARGET
#undef AK_NAME
#define AK(name) name##_avx2
#define AK_BYTES 32
#define AK_TARGET __attribute__((target("avx2,fma")))
#define AK_NAME "avx2"
#include "attention-body.c"
#undef AK
#undef AK_BYTES
#undef AK_TARGET
#undef AK_NAME
#endif
#define AK(name) name##_generic
#define AK_BYTES 16
#define AK_TARGET
#define AK_NAME "generic"
#include "attention-body.c"
#undef AK
#undef AK_BYTES
#undef AK_TARGET
#undef AK_NAME

const attention_kernel_set *attention_kernels_named(const char *name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcmp(name, "avx512") == 0) return &attention_kernels_avx512;
  if (strcmp(name, "avx2") == 0) return &attention_kernels_avx2;
#endif
  (void)name;
  return &attention_kernels_generic;
}

/* Each thread takes a contiguous share of the items (every item costs about the same). */
static void run_attention_part(void *arg, int thread) {
  attention_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->count, j->threads, 1, thread, &begin, &end);
  if (begin >= end) return;
  int status = 0;
  switch (j->kind) {
    case ATTENTION_FORWARD:
      status = j->k->forward(j->geometry, j->in[0], j->in[1], j->in[2], j->out[0], j->out[1], begin, end);
      break;
    case ATTENTION_BACKWARD:
      status = j->k->backward(j->geometry, j->in[0], j->in[1], j->in[2], j->in[3], j->in[4], j->out[0], j->out[1],
                              j->out[2], begin, end);
      break;
    case ATTENTION_ROPE:
      j->k->rope(j->in[0], j->in[1], j->in[2], j->period, j->H, j->D, j->direction, j->out[0], begin, end);
      break;
  }
  if (status != 0) j->failed = 1; /* only ever set to 1, so concurrent parts agree */
}

/* Below this many rope elements a second thread's wake-up costs more than it saves. */
#define ROPE_PARALLEL_MIN_WORK 32768

void run_attention(thread_pool *pool, int threads, attention_job *job) {
  double work = job->kind == ATTENTION_ROPE ? (double)job->count * (double)job->H * (double)job->D : 1e9;
  job->threads = job->count < 2 || work < ROPE_PARALLEL_MIN_WORK ? 1 : threads;
  job->failed = 0;
  if (job->threads == 1)
    run_attention_part(job, 0);
  else
    thread_pool_run(pool, run_attention_part, job);
}
