/*
 * N-API binding of the element-wise sum (elementwise.c): argument reading and length checks (memory safety:
 * every index the loop touches is inside its arrays), then one pool call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_floats, row_fail) it uses.
 * Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): addArrays(h, a, b, out) (out = a + b over a's length; out may be a or b);
 * sumOfSquares(h, x) → Σ x² (a number); scaleArray(h, x, factor) (x = x·factor in place); copyBlocks(h, source,
 * target, count, length, sourceStart, sourceStride, targetStart, targetStride).
 */
#include "elementwise.h"

static napi_value add_arrays_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x, *y, *out;
  size_t n = 0;
  if (!read_args(env, info, "addArrays", 4, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "a", &x, &n) || !arg_floats(&a, 2, "b", (double)n, 0, &y) ||
      !arg_floats(&a, 3, "out", (double)n, 0, &out))
    return NULL;
  if (handle->busy) {
    row_fail(&a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  elementwise_add(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), x, y, out, (int64_t)n);
  handle->busy = 0;
  return NULL;
}

static napi_value sum_of_squares_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x;
  size_t n = 0;
  if (!read_args(env, info, "sumOfSquares", 2, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "x", &x, &n)) return NULL;
  if (handle->busy) {
    row_fail(&a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  double total =
    elementwise_sum_of_squares(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), x, (int64_t)n);
  handle->busy = 0;
  napi_value result;
  CHECK(napi_create_double(env, total, &result));
  return result;
}

static napi_value scale_array_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x;
  size_t n = 0;
  double factor;
  if (!read_args(env, info, "scaleArray", 3, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "x", &x, &n) || !arg_number(&a, 2, &factor)) return NULL;
  if (handle->busy) {
    row_fail(&a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  elementwise_scale(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), x, factor, (int64_t)n);
  handle->busy = 0;
  return NULL;
}

/* Whether blocks of `length` floats at start + i·stride, i < count, lie inside an array of `size` floats. */
static int blocks_fit(int64_t count, int64_t length, int64_t start, int64_t stride, size_t size) {
  return count == 0 || length == 0 || (double)start + (double)(count - 1) * (double)stride + (double)length <= (double)size;
}

static napi_value copy_blocks_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *source, *target;
  size_t source_size = 0, target_size = 0;
  int64_t counts[6];
  if (!read_args(env, info, "copyBlocks", 9, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "source", &source, &source_size) ||
      !get_floats(env, a.argv[2], "target", &target, &target_size))
    return NULL;
  for (int i = 0; i < 6; i++)
    if (!arg_count(&a, 3 + (size_t)i, &counts[i])) return NULL;
  const int64_t count = counts[0], length = counts[1];
  if (!blocks_fit(count, length, counts[2], counts[3], source_size)) {
    row_fail(&a, "the blocks reach past the end of source");
    return NULL;
  }
  if (!blocks_fit(count, length, counts[4], counts[5], target_size)) {
    row_fail(&a, "the blocks reach past the end of target");
    return NULL;
  }
  copy_blocks(source, target, count, length, counts[2], counts[3], counts[4], counts[5]);
  return NULL;
}
