/*
 * N-API binding of the row kernels (row-kernels.c): argument reading and length checks (memory safety:
 * every index a kernel touches is inside its array), then one pool job per call.
 *
 * Is: included by addon.c after its helpers (get_handle, get_floats, CHECK); the kernels themselves are
 * their own translation unit (row-kernels.c, through row-kernels.h).
 * Is not: the friendly validation with tensor names (native-backend.ts) or the arithmetic.
 *
 * Exports (registered in addon.c): rowExp(x, out, isa); logSumExpRows(h, logits, rows, V, shift,
 * logTotal: Float64Array, entropy | null); softmaxGradRows(h, logits, rows, V, shift, logTotal, rowGrad,
 * out); rmsNormForward(h, x, w, rows, D, eps, out, inverseRms); rmsNormBackward(h, x, w, inverseRms, g,
 * rows, D, gradX, gradW); adamwUpdate(h, p, g, m, v, beta1, beta2, epsilon, stepSize, biasCorrection2Sqrt,
 * decayFactor); sampleRows(h, logits, rows, V, temperature, uniforms: Float64Array, ids: Int32Array,
 * logprobs: Float64Array).
 */
#include "row-kernels.h"

#define MAX_ROW_ARGS 18

typedef struct {
  napi_env env;
  napi_value argv[MAX_ROW_ARGS];
  size_t argc;
  const char *op;
} row_args;

static int row_fail(row_args *a, const char *what) {
  char message[160];
  snprintf(message, sizeof message, "grpo native %s: %s", a->op, what);
  napi_throw_range_error(a->env, NULL, message);
  return 0;
}

static int read_args(napi_env env, napi_callback_info info, const char *op, size_t expected, row_args *a) {
  a->env = env;
  a->op = op;
  a->argc = MAX_ROW_ARGS;
  if (napi_get_cb_info(env, info, &a->argc, a->argv, NULL, NULL) != napi_ok || a->argc < expected) {
    char message[96];
    snprintf(message, sizeof message, "grpo native %s: expected %zu arguments", op, expected);
    napi_throw_type_error(env, NULL, message);
    return 0;
  }
  return 1;
}

/* A Float32Array of at least `needed` elements (or NULL when `optional` and the argument is null). */
static int arg_floats(row_args *a, size_t index, const char *name, double needed, int optional, float **out) {
  napi_valuetype type;
  *out = NULL;
  if (optional && napi_typeof(a->env, a->argv[index], &type) == napi_ok && type == napi_null) return 1;
  size_t length = 0;
  if (!get_floats(a->env, a->argv[index], name, out, &length)) return 0;
  if ((double)length < needed) {
    char what[96];
    snprintf(what, sizeof what, "%s has %zu elements, needs %.0f", name, length, needed);
    return row_fail(a, what);
  }
  return 1;
}

static int arg_doubles(row_args *a, size_t index, const char *name, double needed, double **out) {
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length = 0;
  void *raw = NULL;
  if (napi_is_typedarray(a->env, a->argv[index], &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(a->env, a->argv[index], &type, &length, &raw, NULL, NULL) != napi_ok ||
      type != napi_float64_array)
  {
    char what[96];
    snprintf(what, sizeof what, "%s must be a Float64Array", name);
    return row_fail(a, what);
  }
  if ((double)length < needed) {
    char what[96];
    snprintf(what, sizeof what, "%s is too short for the rows", name);
    return row_fail(a, what);
  }
  *out = raw;
  return 1;
}

static int arg_count(row_args *a, size_t index, int64_t *out) {
  if (napi_get_value_int64(a->env, a->argv[index], out) != napi_ok || *out < 0)
    return row_fail(a, "row and width counts must be non-negative integers");
  return 1;
}

static int arg_number(row_args *a, size_t index, double *out) {
  if (napi_get_value_double(a->env, a->argv[index], out) != napi_ok) return row_fail(a, "expected a number");
  return 1;
}

/* Runs `job` on the handle's pool, refusing re-entry as matmul does. */
static napi_value run_handle_job(row_args *a, context_handle *handle, row_job *job) {
  if (handle->busy) {
    row_fail(a, "re-entered while a kernel is running");
    return NULL;
  }
  handle->busy = 1;
  job->k = row_kernels_named(gemm_context_kernel(handle->ctx)->name);
  run_rows(gemm_context_pool(handle->ctx), gemm_context_threads(handle->ctx), job);
  handle->busy = 0;
  return NULL;
}

static napi_value row_exp_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x, *out;
  size_t length = 0, isa_length = 0;
  char isa[32] = {0};
  if (!read_args(env, info, "rowExp", 3, &a) || !get_floats(env, a.argv[0], "x", &x, &length) ||
      !arg_floats(&a, 1, "out", (double)length, 0, &out))
    return NULL;
  const gemm_kernel *kernel = NULL;
  if (napi_get_value_string_utf8(env, a.argv[2], isa, sizeof isa, &isa_length) == napi_ok) kernel = kernel_for(isa);
  if (!kernel) {
    row_fail(&a, "isa must be one this CPU supports (auto, avx512, avx2, generic)");
    return NULL;
  }
  row_kernels_named(kernel->name)->exp(x, out, (int64_t)length);
  return NULL;
}

static napi_value log_sum_exp_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *logits, *shift, *entropy;
  double *log_total;
  int64_t rows, V;
  if (!read_args(env, info, "logSumExpRows", 7, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 2, &rows) || !arg_count(&a, 3, &V) ||
      !arg_floats(&a, 1, "logits", (double)rows * V, 0, &logits) || !arg_floats(&a, 4, "shift", rows, 0, &shift) ||
      !arg_doubles(&a, 5, "logTotal", rows, &log_total) || !arg_floats(&a, 6, "entropy", rows, 1, &entropy))
    return NULL;
  row_job job = {.kind = JOB_LOG_SUM_EXP, .count = rows, .width = V, .align = 1, .in = {logits},
                 .out = {shift, entropy}, .doubles = log_total};
  return run_handle_job(&a, handle, &job);
}

static napi_value softmax_grad_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *logits, *shift, *row_grad, *out;
  double *log_total;
  int64_t rows, V;
  if (!read_args(env, info, "softmaxGradRows", 8, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 2, &rows) || !arg_count(&a, 3, &V) ||
      !arg_floats(&a, 1, "logits", (double)rows * V, 0, &logits) || !arg_floats(&a, 4, "shift", rows, 0, &shift) ||
      !arg_doubles(&a, 5, "logTotal", rows, &log_total) || !arg_floats(&a, 6, "rowGrad", rows, 0, &row_grad) ||
      !arg_floats(&a, 7, "out", (double)rows * V, 0, &out))
    return NULL;
  row_job job = {.kind = JOB_SOFTMAX_GRAD, .count = rows, .width = V, .align = 1, .in = {logits, shift, row_grad},
                 .out = {out}, .doubles = log_total};
  return run_handle_job(&a, handle, &job);
}

static napi_value rms_norm_forward_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x, *w, *out, *inverse_rms;
  int64_t rows, D;
  double eps;
  if (!read_args(env, info, "rmsNormForward", 8, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 3, &rows) || !arg_count(&a, 4, &D) || !arg_number(&a, 5, &eps) ||
      !arg_floats(&a, 1, "x", (double)rows * D, 0, &x) || !arg_floats(&a, 2, "weight", D, 0, &w) ||
      !arg_floats(&a, 6, "out", (double)rows * D, 0, &out) || !arg_floats(&a, 7, "inverseRms", rows, 0, &inverse_rms))
    return NULL;
  row_job job = {.kind = JOB_RMS_FORWARD, .count = rows, .width = D, .align = 1, .in = {x, w},
                 .out = {out, inverse_rms}, .scalar = eps};
  return run_handle_job(&a, handle, &job);
}

static napi_value rms_norm_backward_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *x, *w, *inverse_rms, *g, *grad_x, *grad_w;
  int64_t rows, D;
  if (!read_args(env, info, "rmsNormBackward", 9, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 5, &rows) || !arg_count(&a, 6, &D) ||
      !arg_floats(&a, 1, "x", (double)rows * D, 0, &x) || !arg_floats(&a, 2, "weight", D, 0, &w) ||
      !arg_floats(&a, 3, "inverseRms", rows, 0, &inverse_rms) || !arg_floats(&a, 4, "g", (double)rows * D, 0, &g) ||
      !arg_floats(&a, 7, "gradX", (double)rows * D, 0, &grad_x) || !arg_floats(&a, 8, "gradWeight", D, 0, &grad_w))
    return NULL;
  int threads = gemm_context_threads(handle->ctx);
  float *parts = calloc((size_t)threads * (size_t)(D > 0 ? D : 1), sizeof(float));
  if (!parts) {
    napi_throw_error(env, NULL, "grpo native rmsNormBackward: out of memory");
    return NULL;
  }
  row_job job = {.kind = JOB_RMS_BACKWARD, .count = rows, .width = D, .align = 1, .in = {x, w, inverse_rms, g},
                 .out = {grad_x, parts}};
  run_handle_job(&a, handle, &job);
  /* Per-thread partial sums in thread order, so the result does not depend on timing. */
  for (int64_t i = 0; i < D; i++) {
    float total = 0.0f;
    for (int t = 0; t < threads; t++) total += parts[(int64_t)t * D + i];
    grad_w[i] = total;
  }
  free(parts);
  return NULL;
}

static napi_value adamw_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *p, *g, *m, *v;
  size_t n = 0;
  adamw_scalars k;
  if (!read_args(env, info, "adamwUpdate", 11, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !get_floats(env, a.argv[1], "parameter", &p, &n) || !arg_floats(&a, 2, "grad", (double)n, 0, &g) ||
      !arg_floats(&a, 3, "first", (double)n, 0, &m) || !arg_floats(&a, 4, "second", (double)n, 0, &v) ||
      !arg_number(&a, 5, &k.beta1) || !arg_number(&a, 6, &k.beta2) || !arg_number(&a, 7, &k.epsilon) ||
      !arg_number(&a, 8, &k.step_size) || !arg_number(&a, 9, &k.bias_correction2_sqrt) ||
      !arg_number(&a, 10, &k.decay_factor))
    return NULL;
  row_job job = {.kind = JOB_ADAMW, .count = (int64_t)n, .align = ROW_ALIGN, .in = {g}, .out = {p, m, v}, .adamw = &k};
  return run_handle_job(&a, handle, &job);
}

static napi_value sample_rows_binding(napi_env env, napi_callback_info info) {
  row_args a;
  float *logits;
  double *uniforms, *logprobs, temperature;
  int64_t rows, V;
  if (!read_args(env, info, "sampleRows", 8, &a)) return NULL;
  context_handle *handle = get_handle(env, a.argv[0]);
  if (!handle || !arg_count(&a, 2, &rows) || !arg_count(&a, 3, &V) || !arg_number(&a, 4, &temperature) ||
      !arg_floats(&a, 1, "logits", (double)rows * V, 0, &logits) || !arg_doubles(&a, 5, "uniforms", rows, &uniforms) ||
      !arg_doubles(&a, 7, "logprobs", rows, &logprobs))
    return NULL;
  if (!(temperature > 0) || V < 1 || V > INT32_MAX) {
    row_fail(&a, "temperature must be > 0 and V between 1 and 2^31 - 1");
    return NULL;
  }
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length = 0;
  void *ids = NULL;
  if (napi_is_typedarray(env, a.argv[6], &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, a.argv[6], &type, &length, &ids, NULL, NULL) != napi_ok || type != napi_int32_array ||
      (double)length < (double)rows) {
    row_fail(&a, "ids must be an Int32Array with one element per row");
    return NULL;
  }
  row_job job = {.kind = JOB_SAMPLE, .count = rows, .width = V, .align = 1, .in = {logits}, .doubles = logprobs,
                 .doubles_in = uniforms, .ints = ids, .scalar = temperature};
  return run_handle_job(&a, handle, &job);
}
