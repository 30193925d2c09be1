/*
 * N-API binding of the element-wise sum (elementwise.c): argument reading and length checks (memory safety:
 * every index the loop touches is inside its arrays), then one pool call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_floats, row_fail) it uses.
 * Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): addArrays(h, a, b, out) (out = a + b over a's length; out may be a or b);
 * sumOfSquares(h, x) → Σ x² (a number); scaleArray(h, x, factor) (x = x·factor in place).
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
