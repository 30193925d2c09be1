/*
 * N-API binding of the training attention and RoPE (attention.c): argument reading and extent checks
 * (memory safety: every index a kernel touches is inside its array), then one pool job per call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_floats, arg_count,
 * arg_number, row_fail) it uses. Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): attentionForward(h, q, k, v, out, logSumExp, dims, scale, keyMask | null,
 * segmentIds | null); attentionBackward(h, q, k, v, gradOut, logSumExp, gradQ, gradK, gradV, dims, scale,
 * keyMask | null, segmentIds | null); ropeRows(h, x, cos, sin, rows, period, H, D, direction, out). dims is a
 * Float64Array [B, Hq, Hkv, T, S, D, offset, causal, qStride × 3, kvStride × 3] (strides along batch, head,
 * position; see attention.h).
 */
#include "attention.h"

#define ATTENTION_DIMS 14

/* A typed array of `type` with at least `needed` elements, or NULL when `optional` and the argument is null. */
static int arg_typed(row_args *a, size_t index, const char *name, napi_typedarray_type wanted, double needed,
                     int optional, void **out) {
  napi_valuetype value_type;
  *out = NULL;
  if (optional && napi_typeof(a->env, a->argv[index], &value_type) == napi_ok && value_type == napi_null) return 1;
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length = 0;
  char what[96];
  if (napi_is_typedarray(a->env, a->argv[index], &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(a->env, a->argv[index], &type, &length, out, NULL, NULL) != napi_ok || type != wanted) {
    snprintf(what, sizeof what, "%s has the wrong array type", name);
    return row_fail(a, what);
  }
  if ((double)length < needed) {
    snprintf(what, sizeof what, "%s has %zu elements, needs %.0f", name, length, needed);
    return row_fail(a, what);
  }
  return 1;
}

/* Reads dims and the masks into `g`; checks the geometry (not yet the arrays' extents). */
static int read_geometry(row_args *a, size_t dims_index, size_t scale_index, size_t mask_index,
                         attention_geometry *g) {
  double *dims, scale;
  void *mask, *segments;
  if (!arg_doubles(a, dims_index, "dims", ATTENTION_DIMS, &dims) || !arg_number(a, scale_index, &scale)) return 0;
  for (int i = 0; i < ATTENTION_DIMS; i++)
    if (dims[i] != (double)(int64_t)dims[i] || (i != 6 && dims[i] < 0) || (dims[i] > 1e15 || dims[i] < -1e15))
      return row_fail(a, "dims must be integers, non-negative but for the offset");
  *g = (attention_geometry){(int64_t)dims[0], (int64_t)dims[1], (int64_t)dims[2], (int64_t)dims[3], (int64_t)dims[4],
                            (int64_t)dims[5], (int64_t)dims[6], dims[7] != 0, (float)scale,
                            {(int64_t)dims[8], (int64_t)dims[9], (int64_t)dims[10]},
                            {(int64_t)dims[11], (int64_t)dims[12], (int64_t)dims[13]}, NULL, NULL};
  if (g->Hq < 1 || g->Hkv < 1 || g->Hq % g->Hkv != 0 || g->D < 1)
    return row_fail(a, "heads must divide (Hq % Hkv = 0) and D >= 1");
  double keys = (double)g->B * g->S;
  if (!arg_typed(a, mask_index, "keyMask", napi_uint8_array, keys, 1, &mask) ||
      !arg_typed(a, mask_index + 1, "segmentIds", napi_int32_array, keys, 1, &segments))
    return 0;
  if (segments && (g->offset < 0 || g->offset + g->T > g->S))
    return row_fail(a, "segmentIds needs 0 <= offset and offset + T <= S");
  g->key_mask = mask;
  g->segment_ids = segments;
  return 1;
}

/* Elements a strided [batch, heads, positions, D] array must hold (0 when any axis is empty). */
static double strided_extent(const attention_geometry *g, const int64_t strides[3], int64_t heads, int64_t positions) {
  if (g->B == 0 || positions == 0) return 0;
  return (double)(g->B - 1) * strides[0] + (double)(heads - 1) * strides[1] + (double)(positions - 1) * strides[2] +
         (double)g->D;
}

static napi_value run_attention_job(row_args *a, context_handle *handle, attention_job *job) {
  if (handle->busy) {
    row_fail(a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  job->k = attention_kernels_named(gemm_context_kernel(handle->ctx)->name);
  run_attention(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), job);
  handle->busy = 0;
  if (job->failed) napi_throw_error(a->env, NULL, "grpo native attention: out of memory");
  return NULL;
}

static napi_value attention_forward_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *q, *k, *v, *out, *log_sum_exp;
  attention_geometry g;
  if (!read_args(env, info, "attentionForward", 10, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !read_geometry(&a, 6, 7, 8, &g)) return NULL;
  double queries = strided_extent(&g, g.q_strides, g.Hq, g.T), keys = strided_extent(&g, g.kv_strides, g.Hkv, g.S);
  if (!arg_floats(&a, 1, "q", queries, 0, &q) || !arg_floats(&a, 2, "k", keys, 0, &k) ||
      !arg_floats(&a, 3, "v", keys, 0, &v) || !arg_floats(&a, 4, "out", queries, 0, &out) ||
      !arg_floats(&a, 5, "logSumExp", (double)g.B * g.Hq * g.T, 0, &log_sum_exp))
    return NULL;
  attention_job job = {.kind = ATTENTION_FORWARD, .geometry = &g, .count = g.B * g.Hq, .in = {q, k, v},
                       .out = {out, log_sum_exp}};
  return run_attention_job(&a, handle, &job);
}

static napi_value attention_backward_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *q, *k, *v, *grad_out, *log_sum_exp, *grad_q, *grad_k, *grad_v;
  attention_geometry g;
  if (!read_args(env, info, "attentionBackward", 13, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !read_geometry(&a, 9, 10, 11, &g)) return NULL;
  double queries = strided_extent(&g, g.q_strides, g.Hq, g.T), keys = strided_extent(&g, g.kv_strides, g.Hkv, g.S);
  if (!arg_floats(&a, 1, "q", queries, 0, &q) || !arg_floats(&a, 2, "k", keys, 0, &k) ||
      !arg_floats(&a, 3, "v", keys, 0, &v) || !arg_floats(&a, 4, "gradOut", queries, 0, &grad_out) ||
      !arg_floats(&a, 5, "logSumExp", (double)g.B * g.Hq * g.T, 0, &log_sum_exp) ||
      !arg_floats(&a, 6, "gradQ", queries, 0, &grad_q) || !arg_floats(&a, 7, "gradK", keys, 0, &grad_k) ||
      !arg_floats(&a, 8, "gradV", keys, 0, &grad_v))
    return NULL;
  attention_job job = {.kind = ATTENTION_BACKWARD, .geometry = &g, .count = g.B * g.Hkv,
                       .in = {q, k, v, grad_out, log_sum_exp}, .out = {grad_q, grad_k, grad_v}};
  return run_attention_job(&a, handle, &job);
}

static napi_value rope_rows_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x, *cos, *sin, *out;
  int64_t rows, period, H, D;
  double direction;
  if (!read_args(env, info, "ropeRows", 10, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 4, &rows) || !arg_count(&a, 5, &period) || !arg_count(&a, 6, &H) ||
      !arg_count(&a, 7, &D) || !arg_number(&a, 8, &direction))
    return NULL;
  if (D % 2 != 0 || (direction != 1 && direction != -1) || (rows > 0 && period < 1)) {
    row_fail(&a, "D must be even, direction ±1 and period >= 1");
    return NULL;
  }
  double angles = (double)(rows < period ? rows : period) * (double)(D / 2), elements = (double)rows * H * D;
  if (!arg_floats(&a, 1, "x", elements, 0, &x) || !arg_floats(&a, 2, "cos", angles, 0, &cos) ||
      !arg_floats(&a, 3, "sin", angles, 0, &sin) || !arg_floats(&a, 9, "out", elements, 0, &out))
    return NULL;
  attention_job job = {.kind = ATTENTION_ROPE, .count = rows, .in = {x, cos, sin}, .out = {out}, .period = period,
                       .H = H, .D = D, .direction = (int)direction};
  return run_attention_job(&a, handle, &job);
}
