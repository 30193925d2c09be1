/*
 * N-API binding of the float32 SwiGLU (swiglu.c): argument reading and length checks (memory safety: every
 * index a kernel touches is inside its array), then one pool call.
 *
 * Is: included by addon.c after row-kernels-addon.c, whose helpers (read_args, arg_floats, row_fail) it uses.
 * Is not: the friendly validation (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): swigluForwardFloat(h, gate, up, out); swigluBackwardFloat(h, gate, up, g,
 * gradGate, gradUp, out | null) (out: the forward's values again, from the same pass).
 */
#include "swiglu.h"

/* Runs one SwiGLU call on the handle's pool, refusing re-entry as matmul does. */
static napi_value run_swiglu(row_args *a, context_handle *handle, size_t n, const float *gate, const float *up,
                             const float *g, float *grad_gate, float *grad_up, float *out) {
  if (handle->busy) {
    row_fail(a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  const swiglu_kernel_set *k = swiglu_kernels_named(gemm_context_kernel(handle->ctx)->name);
  swiglu_run(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), k, (int64_t)n, gate, up, g, grad_gate,
             grad_up, out);
  handle->busy = 0;
  return NULL;
}

static napi_value swiglu_forward_float_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *gate, *up, *out;
  size_t n = 0;
  if (!read_args(env, info, "swigluForwardFloat", 4, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "gate", &gate, &n) || !arg_floats(&a, 2, "up", (double)n, 0, &up) ||
      !arg_floats(&a, 3, "out", (double)n, 0, &out))
    return NULL;
  return run_swiglu(&a, handle, n, gate, up, NULL, NULL, NULL, out);
}

static napi_value swiglu_backward_float_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *gate, *up, *g, *grad_gate, *grad_up, *out;
  size_t n = 0;
  if (!read_args(env, info, "swigluBackwardFloat", 7, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "gate", &gate, &n) || !arg_floats(&a, 2, "up", (double)n, 0, &up) ||
      !arg_floats(&a, 3, "g", (double)n, 0, &g) || !arg_floats(&a, 4, "gradGate", (double)n, 0, &grad_gate) ||
      !arg_floats(&a, 5, "gradUp", (double)n, 0, &grad_up) || !arg_floats(&a, 6, "out", (double)n, 1, &out))
    return NULL;
  return run_swiglu(&a, handle, n, gate, up, g, grad_gate, grad_up, out);
}
