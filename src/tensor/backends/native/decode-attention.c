/*
 * Decode attention of the `native` backend: one query per row over a prompt shared by a group of rows, then
 * each row's own generated keys (Backend.prefixAttentionRows; tensor/prefix-attention.ts's loops are the spec).
 *
 * Is: decode-attention-body.c compiled once per instruction set (AVX-512, AVX2, portable; each context uses the
 * set named like its gemm kernel), and the split of one call into contiguous shares of (row, head) items.
 * Accuracy against the spec (checked in row-kernels.test.ts): the scores, the softmax and Σ p·v are summed in
 * other orders than the spec's matrix products, so results agree to float rounding (1e-5 absolute there).
 * Is not: argument checking (decode-attention-addon.c) or training attention (attention.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode-attention.h"

/* The helpers are always inlined into the cloned kernels, so the vector ABI warning does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* No fused multiply-adds: every instruction set then rounds alike (and as the kernel did inside row-kernels.c). */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DA(name) name##_avx512
#define DA_BYTES 64
#define DA_TARGET __attribute__((target("avx512f,avx2,fma")))
#include "decode-attention-body.c"
#undef DA
#undef DA_BYTES
#undef DA_TARGET
#define DA(name) name##_avx2
#define DA_BYTES 32
#define DA_TARGET __attribute__((target("avx2,fma")))
#include "decode-attention-body.c"
#undef DA
#undef DA_BYTES
#undef DA_TARGET
#endif
#define DA(name) name##_generic
#define DA_BYTES 16
#define DA_TARGET
#include "decode-attention-body.c"
#undef DA
#undef DA_BYTES
#undef DA_TARGET

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static const decode_attention_kernel decode_attention_set_avx512 = {"avx512", decode_attention_avx512};
static const decode_attention_kernel decode_attention_set_avx2 = {"avx2", decode_attention_avx2};
#endif
static const decode_attention_kernel decode_attention_set_generic = {"generic", decode_attention_generic};

const decode_attention_kernel *decode_attention_named(const char *name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (strcmp(name, "avx512") == 0) return &decode_attention_set_avx512;
  if (strcmp(name, "avx2") == 0) return &decode_attention_set_avx2;
#endif
  (void)name;
  return &decode_attention_set_generic;
}

typedef struct {
  const decode_attention_kernel *k;
  const attention_dims *d;
  int threads;
  const float *q, *prompt_keys, *prompt_values, *own_keys, *own_values;
  float *out;
} decode_attention_job;

static void run_share(void *arg, int thread) {
  const decode_attention_job *j = arg;
  int64_t begin, end;
  thread_pool_share(j->d->rows * j->d->Hq, j->threads, 1, thread, &begin, &end);
  if (begin < end)
    j->k->run(j->d, j->q, j->prompt_keys, j->prompt_values, j->own_keys, j->own_values, j->out, begin, end);
}

/* Below this many score and value visits (items × keys × D) a second thread's wake-up costs more than it saves. */
#define DECODE_ATTENTION_PARALLEL_MIN 32768

void decode_attention_run(thread_pool *pool, int threads, const decode_attention_kernel *k, const attention_dims *d,
                          const float *q, const float *prompt_keys, const float *prompt_values, const float *own_keys,
                          const float *own_values, float *out) {
  double work = (double)d->rows * (double)d->Hq * (double)(d->L + d->S) * (double)d->D;
  decode_attention_job job = {.k = k, .d = d, .threads = work < DECODE_ATTENTION_PARALLEL_MIN ? 1 : threads,
                              .q = q, .prompt_keys = prompt_keys, .prompt_values = prompt_values,
                              .own_keys = own_keys, .own_values = own_values, .out = out};
  if (job.threads == 1)
    run_share(&job, 0);
  else
    thread_pool_run(pool, run_share, &job);
}
