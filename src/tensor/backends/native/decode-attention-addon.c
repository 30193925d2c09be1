/*
 * N-API binding of decode attention over a shared prompt (decode-attention.c): argument reading and length
 * checks (memory safety: every index the kernel touches is inside its array), then one pool call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_count, arg_number,
 * arg_floats, row_fail) it uses.
 * Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): prefixAttention(h, q, promptKeys, promptValues, ownKeys, ownValues, out,
 * rows, Hq, Hkv, D, L, S, promptCapacity, ownCapacity, firstVisible, scale, rowOffsets: Float64Array | null),
 * rowOffsets holding each row's prompt key offset then value offset (floats into promptKeys, promptValues).
 */
#include <stdlib.h>

#include "decode-attention.h"

/* Rows whose offsets live on the stack; a longer call allocates them. */
#define STACK_OFFSET_ROWS 256

/*
 * rowOffsets (argument 17) as int64 key and value offsets, each a whole number with the row's prompt (`block`
 * floats) inside its array; *keys stays NULL for null. Returns 0 after throwing.
 */
static int row_offsets(row_args *a, int64_t rows, double block, size_t key_length, size_t value_length,
                       int64_t *stack, int64_t **keys, int64_t **values) {
  napi_valuetype type;
  double *given;
  *keys = *values = NULL;
  if (a->argc <= 17 || (napi_typeof(a->env, a->argv[17], &type) == napi_ok && type == napi_null)) return 1;
  if (!arg_doubles(a, 17, "rowOffsets", 2.0 * (double)rows, &given)) return 0;
  int64_t *offsets = rows <= STACK_OFFSET_ROWS ? stack : malloc((size_t)(2 * rows) * sizeof(int64_t));
  if (!offsets) return row_fail(a, "out of memory for the row offsets");
  for (int64_t b = 0; b < rows; b++) {
    double key = given[2 * b], value = given[2 * b + 1];
    if (!(key >= 0 && value >= 0 && key == (double)(int64_t)key && value == (double)(int64_t)value &&
          key + block <= (double)key_length && value + block <= (double)value_length)) {
      if (offsets != stack) free(offsets);
      return row_fail(a, "rowOffsets must be whole numbers with each row's prompt inside promptKeys and promptValues");
    }
    offsets[b] = (int64_t)key;
    offsets[rows + b] = (int64_t)value;
  }
  *keys = offsets;
  *values = offsets + rows;
  return 1;
}

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
                      counts[5], counts[6], counts[7], counts[8], (float)scale, NULL, NULL};
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
  size_t key_length = 0, value_length = 0;
  int64_t stack[2 * STACK_OFFSET_ROWS], *key_offsets, *value_offsets;
  if (!get_floats(env, a.argv[2], "promptKeys", &prompt_keys, &key_length) ||
      !get_floats(env, a.argv[3], "promptValues", &prompt_values, &value_length) ||
      !row_offsets(&a, d.rows, prompt, key_length, value_length, stack, &key_offsets, &value_offsets))
    return NULL;
  d.key_offsets = key_offsets;
  d.value_offsets = value_offsets;
  if (handle->busy) {
    row_fail(&a, "re-entered while a kernel is running");
  } else {
    handle->busy = 1;
    decode_attention_run(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx),
                         decode_attention_named(gemm_context_kernel(handle->ctx)->name), &d, q, prompt_keys,
                         prompt_values, own_keys, own_values, out);
    handle->busy = 0;
  }
  if (key_offsets && key_offsets != stack) free(key_offsets);
  return NULL;
}
