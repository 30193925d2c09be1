/*
 * Interface of the native decode attention over a shared prompt (decode-attention.c) for its N-API binding
 * (decode-attention-addon.c): the call's geometry, the per-instruction-set kernel and the entry point that
 * splits one call over the thread pool. Is not: the arithmetic (decode-attention-body.c) or argument checking.
 */
#ifndef GRPO_DECODE_ATTENTION_H
#define GRPO_DECODE_ATTENTION_H

#include <stdint.h>

#include "thread-pool.h"

/*
 * Geometry of one call (tensor/prefix-attention.ts's PrefixAttentionDims; see decode-attention-body.c). Rows
 * that continue different prompts of one prefill (same L and capacity, stored in one array) come in one call:
 * row b's prompt then starts at prompt_keys + key_offsets[b] and prompt_values + value_offsets[b] (floats);
 * NULL offsets: every row reads the prompt at offset 0.
 */
typedef struct {
  int64_t rows, Hq, Hkv, D, L, S, prompt_capacity, own_capacity, first_visible;
  float scale;
  const int64_t *key_offsets, *value_offsets;
} attention_dims;

typedef struct {
  const char *name;
  /* Work items [begin, end) of one call, numbered key-value head first (see decode-attention-body.c). */
  void (*run)(const attention_dims *d, const float *q, const float *prompt_keys, const float *prompt_values,
              const float *own_keys, const float *own_values, float *out, int64_t begin, int64_t end);
} decode_attention_kernel;

/* The kernel for a gemm kernel name ("avx512", "avx2", "generic"); the context already checked the CPU. */
const decode_attention_kernel *decode_attention_named(const char *name);

/* One call: every (row, query head) of d, on the calling thread or on `threads` pool threads. */
void decode_attention_run(thread_pool *pool, int threads, const decode_attention_kernel *k, const attention_dims *d,
                          const float *q, const float *prompt_keys, const float *prompt_values, const float *own_keys,
                          const float *own_values, float *out);

#endif
