/*
 * N-API binding of decode attention over a shared prompt (decode-attention.c): argument reading and length
 * checks (memory safety: every index the kernel touches is inside its array), then one pool call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_count, arg_number,
 * arg_floats, row_fail) it uses.
 * Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): prefixAttention(h, q, promptKeys, promptValues, ownKeys, ownValues, out,
 * rows, Hq, Hkv, D, L, S, promptCapacity, ownCapacity, firstVisible, scale).
 */
#include "decode-attention.h"

static napi_value prefix_attention_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *q, *prompt_keys, *prompt_values, *own_keys, *own_values, *out;
  int64_t counts[9];
  double scale;
  if (!read_args(env, info, "prefixAttention", 17, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle) return NULL;
  for (int i = 0; i < 9; i++)
    if (!arg_count(&a, 7 + (size_t)i, &counts[i])) return NULL;
  if (!arg_number(&a, 16, &scale)) return NULL;
  attention_dims d = {counts[0], counts[1], counts[2], counts[3], counts[4],
                      counts[5], counts[6], counts[7], counts[8], (float)scale};
  if (d.Hq < 1 || d.Hkv < 1 || d.Hq % d.Hkv != 0 || d.D < 1 || d.L > d.prompt_capacity || d.S > d.own_capacity) {
    row_fail(&a, "heads must divide (Hq % Hkv = 0), D >= 1, L <= promptCapacity and S <= ownCapacity");
    return NULL;
  }
  double own = (double)d.rows * d.Hkv * d.own_capacity * d.D, prompt = (double)d.Hkv * d.prompt_capacity * d.D;
  double queries = (double)d.rows * d.Hq * d.D;
  if (!arg_floats(&a, 1, "q", queries, 0, &q) || !arg_floats(&a, 2, "promptKeys", prompt, 0, &prompt_keys) ||
      !arg_floats(&a, 3, "promptValues", prompt, 0, &prompt_values) || !arg_floats(&a, 4, "ownKeys", own, 0, &own_keys) ||
      !arg_floats(&a, 5, "ownValues", own, 0, &own_values) || !arg_floats(&a, 6, "out", queries, 0, &out))
    return NULL;
  if (handle->busy) {
    row_fail(&a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  decode_attention_run(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx),
                       decode_attention_named(gemm_context_kernel(handle->ctx)->name), &d, q, prompt_keys,
                       prompt_values, own_keys, own_values, out);
  handle->busy = 0;
  return NULL;
}
