/*
 * Interface of the native training attention and rotary embedding (attention.c) for their N-API binding
 * (attention-addon.c): the geometry of one call, the per-instruction-set kernel table and the job that
 * splits a call over the thread pool. Is not: the arithmetic (attention-body.c) or argument checking.
 *
 * Legend: B = batch, Hq/Hkv = query/key-value heads, T = queries, S = keys, D = head dim.
 */
#ifndef GRPO_ATTENTION_H
#define GRPO_ATTENTION_H

#include <stdint.h>

#include "thread-pool.h"

/*
 * One causal attention call. q, the output and their gradients share q_strides; k, v and their gradients
 * share kv_strides: element strides along (batch, head, position), the head dim being contiguous, so both
 * [B, heads, T, D] and the projections' [B, T, heads, D] are read in place. Query t sits at key position
 * offset + t. A key is visible to a query when s < S, s <= offset + t (if causal), key_mask[b·S + s] != 0
 * and segment_ids[b·S + s] == segment_ids[b·S + offset + t] (each when not NULL; the caller ensures
 * 0 <= offset and offset + T <= S when segment_ids is given).
 */
typedef struct {
  int64_t B, Hq, Hkv, T, S, D, offset;
  int causal;
  float scale;
  int64_t q_strides[3], kv_strides[3];
  const uint8_t *key_mask;
  const int32_t *segment_ids;
} attention_geometry;

typedef struct {
  const char *name;
  /* Items w = b·Hq + h in [begin, end): out rows and log_sum_exp[w·T + t]. Returns -1 when out of memory. */
  int (*forward)(const attention_geometry *g, const float *q, const float *k, const float *v, float *out,
                 float *log_sum_exp, int64_t begin, int64_t end);
  /* Items w = b·Hkv + g in [begin, end): grad_q rows of the group's query heads, grad_k and grad_v rows s < S. */
  int (*backward)(const attention_geometry *g, const float *q, const float *k, const float *v, const float *grad_out,
                  const float *log_sum_exp, float *grad_q, float *grad_k, float *grad_v, int64_t begin, int64_t end);
  /* Rows r in [begin, end) of x [rows, H, D]: rotate-half with angle row (r % period); direction ±1. */
  void (*rope)(const float *x, const float *cos, const float *sin, int64_t period, int64_t H, int64_t D,
               int direction, float *out, int64_t begin, int64_t end);
} attention_kernel_set;

typedef enum { ATTENTION_FORWARD, ATTENTION_BACKWARD, ATTENTION_ROPE } attention_job_kind;

typedef struct {
  attention_job_kind kind;
  const attention_kernel_set *k;
  const attention_geometry *geometry;
  int threads;
  int64_t count;          /* items: b·Hq + h (forward), b·Hkv + g (backward), rows (rope) */
  const float *in[5];     /* q, k, v, grad_out, log_sum_exp; rope: x, cos, sin */
  float *out[3];          /* out, log_sum_exp / grad_q, grad_k, grad_v; rope: out */
  int64_t period, H, D;   /* rope only */
  int direction;          /* rope only */
  int failed;             /* set when a part ran out of memory */
} attention_job;

/* The kernel set for a gemm kernel name ("avx512", "avx2", "generic"); the context already checked the CPU. */
const attention_kernel_set *attention_kernels_named(const char *name);

/* Runs `job` on the calling thread, or on `threads` pool threads when it has more than one item. */
void run_attention(thread_pool *pool, int threads, attention_job *job);

#endif
