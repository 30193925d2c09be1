/*
 * N-API binding of the native SGEMM: works in place on the Float32Arrays' memory, no copies.
 *
 * Is: argument checking (memory safety: every index the kernel touches is inside the arrays), instruction
 * set dispatch, and lifetime of gemm contexts (each owns its thread pool) as JavaScript externals.
 * Is not: the friendly validation with tensor names (native.ts does that first) or the arithmetic (gemm.c).
 *
 * Exports: createContext(threads, isa) -> handle; destroyContext(handle);
 * matmul(handle, a, b, out, batch, M, K, N, transposeA, transposeB, aBatchStride, bBatchStride, accumulate), b a
 * Float32Array or a Uint16Array of bfloat16 bits (widened while packing, gemm-half.c);
 * packMatrix(handle, b, K, N, transposeB) -> packed; releasePacked(packed); matmulPacked(handle, a, packed, out,
 * M, accumulate) (B packed once, for weights that stay constant while decoding);
 * contextInfo(handle) -> { isa, threads, mr, nr, packedMaxRows }; supportedIsas() -> string[] (best first);
 * the row kernels of row-kernels-addon.c (RMSNorm, log-sum-exp rows, softmax gradient, AdamW); the decode
 * attention over a shared prompt of decode-attention-addon.c; the training attention and RoPE of
 * attention-addon.c; the float32 SwiGLU of swiglu-addon.c; retainFreedMemory of heap-addon.c (malloc settings
 * for training's large arrays); addArrays, sumOfSquares, scaleArray and copyBlocks of elementwise-addon.c; and packPanel
 * of gemm-packing-addon.c (one panel packer, for its tests).
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

typedef struct {
  gemm_context *ctx;
  int busy;
} context_handle;

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error(env, NULL, "grpo native: N-API call failed: " #call); \
      return NULL;                                                    \
    }                                                                 \
  } while (0)

static const gemm_kernel *kernel_for(const char *isa) {
  if (strcmp(isa, "avx512") == 0) return gemm_kernel_avx512();
  if (strcmp(isa, "avx2") == 0) return gemm_kernel_avx2();
  if (strcmp(isa, "generic") == 0) return gemm_kernel_generic();
  if (strcmp(isa, "auto") == 0) {
    const gemm_kernel *k = gemm_kernel_avx512();
    if (!k) k = gemm_kernel_avx2();
    return k ? k : gemm_kernel_generic();
  }
  return NULL;
}

static void finalize_handle(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  context_handle *handle = data;
  gemm_context_destroy(handle->ctx);
  free(handle);
}

static napi_value create_context(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t threads = 0;
  char isa[32] = {0};
  size_t isa_length = 0;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &threads) != napi_ok ||
      napi_get_value_string_utf8(env, argv[1], isa, sizeof isa, &isa_length) != napi_ok) {
    napi_throw_type_error(env, NULL, "grpo native: createContext(threads: number, isa: string)");
    return NULL;
  }
  if (threads < 1 || threads > 256) {
    napi_throw_range_error(env, NULL, "grpo native: threads must be between 1 and 256");
    return NULL;
  }
  const gemm_kernel *kernel = kernel_for(isa);
  if (!kernel) {
    char message[128];
    snprintf(message, sizeof message, "grpo native: instruction set '%s' is unknown or not supported by this CPU", isa);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  context_handle *handle = calloc(1, sizeof *handle);
  if (handle) handle->ctx = gemm_context_create(kernel, threads);
  if (!handle || !handle->ctx) {
    free(handle);
    napi_throw_error(env, NULL, "grpo native: could not allocate workspaces or start threads");
    return NULL;
  }
  napi_value result;
  CHECK(napi_create_external(env, handle, finalize_handle, NULL, &result));
  return result;
}

static context_handle *get_handle(napi_env env, napi_value value) {
  void *data = NULL;
  if (napi_get_value_external(env, value, &data) != napi_ok || !data) {
    napi_throw_type_error(env, NULL, "grpo native: expected a context handle");
    return NULL;
  }
  context_handle *handle = data;
  if (!handle->ctx) {
    napi_throw_error(env, NULL, "grpo native: the backend was disposed");
    return NULL;
  }
  return handle;
}

static napi_value destroy_context(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  void *data = NULL;
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok || !data) return NULL;
  context_handle *handle = data;
  gemm_context_destroy(handle->ctx); /* the external itself is freed by its finalizer */
  handle->ctx = NULL;
  return NULL;
}

/* Reads a Float32Array's data pointer and length; throws naming `name` if it is anything else. */
static int get_floats(napi_env env, napi_value value, const char *name, float **data, size_t *length) {
  bool is_typed = false;
  napi_typedarray_type type;
  void *raw = NULL;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, value, &type, length, &raw, NULL, NULL) != napi_ok ||
      type != napi_float32_array) {
    char message[96];
    snprintf(message, sizeof message, "grpo native: %s must be a Float32Array", name);
    napi_throw_type_error(env, NULL, message);
    return 0;
  }
  *data = raw;
  return 1;
}

#include "row-kernels-addon.c"
#include "decode-attention-addon.c"
#include "attention-addon.c"
#include "swiglu-addon.c"
#include "heap-addon.c"
#include "elementwise-addon.c"
#include "gemm-packing-addon.c"

/* B of a product: a Float32Array, or a Uint16Array of bfloat16 bits (a frozen base weight, gemm-half.c). */
static int get_matrix_b(napi_env env, napi_value value, void **data, size_t *length, int *bfloat16) {
  bool is_typed = false;
  napi_typedarray_type type;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, value, &type, length, data, NULL, NULL) != napi_ok ||
      (type != napi_float32_array && type != napi_uint16_array)) {
    napi_throw_type_error(env, NULL, "grpo native: b must be a Float32Array or a Uint16Array of bfloat16 bits");
    return 0;
  }
  *bfloat16 = type == napi_uint16_array;
  return 1;
}

/* Elements a batch of `count` blocks of `block` elements spaced `stride` apart reaches. */
static double extent(double count, double stride, double block) {
  return count <= 0 || block <= 0 ? 0 : (count - 1) * stride + block;
}

static napi_value matmul(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 13) {
    napi_throw_type_error(env, NULL, "grpo native matmul: expected 13 arguments");
    return NULL;
  }
  context_handle *handle = get_handle(env, argv[0]);
  if (!handle) return NULL;
  float *a, *out;
  void *b;
  size_t a_length, b_length, out_length;
  int b_bfloat16 = 0;
  if (!get_floats(env, argv[1], "a", &a, &a_length) || !get_matrix_b(env, argv[2], &b, &b_length, &b_bfloat16) ||
      !get_floats(env, argv[3], "out", &out, &out_length))
    return NULL;
  int64_t dims[4], strides[2];
  bool flags[3];
  for (int i = 0; i < 4; i++) CHECK(napi_get_value_int64(env, argv[4 + i], &dims[i]));
  for (int i = 0; i < 2; i++) CHECK(napi_get_value_bool(env, argv[8 + i], &flags[i]));
  for (int i = 0; i < 2; i++) CHECK(napi_get_value_int64(env, argv[10 + i], &strides[i]));
  CHECK(napi_get_value_bool(env, argv[12], &flags[2]));
  gemm_shape shape = {dims[0],    dims[1],    dims[2],  dims[3],   flags[0],
                      flags[1],   strides[0], strides[1], flags[2], b_bfloat16};
  if (shape.batch < 0 || shape.M < 0 || shape.K < 0 || shape.N < 0 || strides[0] < 0 || strides[1] < 0) {
    napi_throw_range_error(env, NULL, "grpo native matmul: batch, M, K, N and strides must be >= 0");
    return NULL;
  }
  double batch = (double)shape.batch;
  if (extent(batch, (double)strides[0], (double)shape.M * shape.K) > (double)a_length ||
      extent(batch, (double)strides[1], (double)shape.K * shape.N) > (double)b_length ||
      batch * shape.M * shape.N > (double)out_length) {
    napi_throw_range_error(env, NULL, "grpo native matmul: an array is too short for the shape");
    return NULL;
  }
  if (handle->busy) {
    napi_throw_error(env, NULL, "grpo native matmul: re-entered while a product is running");
    return NULL;
  }
  handle->busy = 1;
  int status = gemm_run(handle->ctx, a, b, out, &shape);
  handle->busy = 0;
  if (status != 0) napi_throw_error(env, NULL, "grpo native matmul: out of memory");
  return NULL;
}

/* A packed B as a JavaScript external; `packed` is NULL once released. */
typedef struct {
  gemm_packed *packed;
} packed_handle;

static void finalize_packed(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  packed_handle *handle = data;
  gemm_packed_destroy(handle->packed);
  free(handle);
}

static napi_value pack_matrix(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 5) {
    napi_throw_type_error(env, NULL, "grpo native packMatrix: expected 5 arguments");
    return NULL;
  }
  context_handle *handle = get_handle(env, argv[0]);
  if (!handle) return NULL;
  float *b;
  size_t b_length;
  if (!get_floats(env, argv[1], "b", &b, &b_length)) return NULL;
  int64_t K, N;
  bool transpose_b;
  CHECK(napi_get_value_int64(env, argv[2], &K));
  CHECK(napi_get_value_int64(env, argv[3], &N));
  CHECK(napi_get_value_bool(env, argv[4], &transpose_b));
  if (K < 0 || N < 0 || (double)K * (double)N > (double)b_length) {
    napi_throw_range_error(env, NULL, "grpo native packMatrix: b is too short for K x N (or K, N < 0)");
    return NULL;
  }
  if (handle->busy) { /* the packing runs on the pool */
    napi_throw_error(env, NULL, "grpo native packMatrix: re-entered while a kernel is running");
    return NULL;
  }
  packed_handle *result_handle = calloc(1, sizeof *result_handle);
  handle->busy = 1;
  if (result_handle) result_handle->packed = gemm_pack(handle->ctx, b, K, N, transpose_b);
  handle->busy = 0;
  if (!result_handle || !result_handle->packed) {
    free(result_handle);
    napi_throw_error(env, NULL, "grpo native packMatrix: out of memory");
    return NULL;
  }
  napi_value result;
  CHECK(napi_create_external(env, result_handle, finalize_packed, NULL, &result));
  return result;
}

static packed_handle *get_packed(napi_env env, napi_value value) {
  void *data = NULL;
  if (napi_get_value_external(env, value, &data) != napi_ok || !data) {
    napi_throw_type_error(env, NULL, "grpo native: expected a packed matrix");
    return NULL;
  }
  return data;
}

static napi_value release_packed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  packed_handle *handle = argc < 1 ? NULL : get_packed(env, argv[0]);
  if (!handle) return NULL;
  gemm_packed_destroy(handle->packed); /* the external itself is freed by its finalizer */
  handle->packed = NULL;
  return NULL;
}

static napi_value matmul_packed(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) {
    napi_throw_type_error(env, NULL, "grpo native matmulPacked: expected 6 arguments");
    return NULL;
  }
  context_handle *handle = get_handle(env, argv[0]);
  if (!handle) return NULL;
  packed_handle *packed = get_packed(env, argv[2]);
  if (!packed) return NULL;
  if (!packed->packed) {
    napi_throw_error(env, NULL, "grpo native matmulPacked: the packed matrix was released");
    return NULL;
  }
  float *a, *out;
  size_t a_length, out_length;
  if (!get_floats(env, argv[1], "a", &a, &a_length) || !get_floats(env, argv[3], "out", &out, &out_length)) return NULL;
  int64_t M, K, N;
  bool accumulate;
  CHECK(napi_get_value_int64(env, argv[4], &M));
  CHECK(napi_get_value_bool(env, argv[5], &accumulate));
  gemm_packed_shape(packed->packed, &K, &N);
  if (M < 0 || M > gemm_packed_max_rows(handle->ctx) || (double)M * K > (double)a_length ||
      (double)M * N > (double)out_length) {
    napi_throw_range_error(env, NULL, "grpo native matmulPacked: M out of range or an array too short for the shape");
    return NULL;
  }
  if (handle->busy) {
    napi_throw_error(env, NULL, "grpo native matmulPacked: re-entered while a product is running");
    return NULL;
  }
  handle->busy = 1;
  int status = gemm_run_packed(handle->ctx, a, packed->packed, out, M, accumulate);
  handle->busy = 0;
  if (status != 0) napi_throw_error(env, NULL, "grpo native matmulPacked: matrix packed by another backend instance's kernel");
  return NULL;
}

static napi_value context_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result, value;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  context_handle *handle = argc < 1 ? NULL : get_handle(env, argv[0]);
  if (!handle) return NULL;
  const gemm_kernel *kernel = gemm_context_kernel(handle->ctx);
  CHECK(napi_create_object(env, &result));
  CHECK(napi_create_string_utf8(env, kernel->name, NAPI_AUTO_LENGTH, &value));
  CHECK(napi_set_named_property(env, result, "isa", value));
  CHECK(napi_create_int32(env, gemm_context_threads(handle->ctx), &value));
  CHECK(napi_set_named_property(env, result, "threads", value));
  CHECK(napi_create_int32(env, kernel->mr, &value));
  CHECK(napi_set_named_property(env, result, "mr", value));
  CHECK(napi_create_int32(env, kernel->nr, &value));
  CHECK(napi_set_named_property(env, result, "nr", value));
  CHECK(napi_create_int32(env, gemm_packed_max_rows(handle->ctx), &value));
  CHECK(napi_set_named_property(env, result, "packedMaxRows", value));
  return result;
}

static napi_value supported_isas(napi_env env, napi_callback_info info) {
  (void)info;
  const gemm_kernel *kernels[3] = {gemm_kernel_avx512(), gemm_kernel_avx2(), gemm_kernel_generic()};
  napi_value result, value;
  uint32_t count = 0;
  CHECK(napi_create_array(env, &result));
  for (int i = 0; i < 3; i++) {
    if (!kernels[i]) continue;
    CHECK(napi_create_string_utf8(env, kernels[i]->name, NAPI_AUTO_LENGTH, &value));
    CHECK(napi_set_element(env, result, count++, value));
  }
  return result;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"createContext", NULL, create_context, NULL, NULL, NULL, napi_default, NULL},
      {"destroyContext", NULL, destroy_context, NULL, NULL, NULL, napi_default, NULL},
      {"matmul", NULL, matmul, NULL, NULL, NULL, napi_default, NULL},
      {"packMatrix", NULL, pack_matrix, NULL, NULL, NULL, napi_default, NULL},
      {"releasePacked", NULL, release_packed, NULL, NULL, NULL, napi_default, NULL},
      {"matmulPacked", NULL, matmul_packed, NULL, NULL, NULL, napi_default, NULL},
      {"contextInfo", NULL, context_info, NULL, NULL, NULL, napi_default, NULL},
      {"supportedIsas", NULL, supported_isas, NULL, NULL, NULL, napi_default, NULL},
      {"packPanel", NULL, pack_panel_binding, NULL, NULL, NULL, napi_default, NULL},
      {"rowExp", NULL, row_exp_binding, NULL, NULL, NULL, napi_default, NULL},
      {"logSumExpRows", NULL, log_sum_exp_binding, NULL, NULL, NULL, napi_default, NULL},
      {"softmaxGradRows", NULL, softmax_grad_binding, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNormForward", NULL, rms_norm_forward_binding, NULL, NULL, NULL, napi_default, NULL},
      {"rmsNormBackward", NULL, rms_norm_backward_binding, NULL, NULL, NULL, napi_default, NULL},
      {"adamwUpdate", NULL, adamw_binding, NULL, NULL, NULL, napi_default, NULL},
      {"sampleRows", NULL, sample_rows_binding, NULL, NULL, NULL, napi_default, NULL},
      {"prefixAttention", NULL, prefix_attention_binding, NULL, NULL, NULL, napi_default, NULL},
      {"attentionForward", NULL, attention_forward_binding, NULL, NULL, NULL, napi_default, NULL},
      {"attentionBackward", NULL, attention_backward_binding, NULL, NULL, NULL, napi_default, NULL},
      {"ropeRows", NULL, rope_rows_binding, NULL, NULL, NULL, napi_default, NULL},
      {"swigluForwardFloat", NULL, swiglu_forward_float_binding, NULL, NULL, NULL, napi_default, NULL},
      {"swigluBackwardFloat", NULL, swiglu_backward_float_binding, NULL, NULL, NULL, napi_default, NULL},
      {"retainFreedMemory", NULL, retain_freed_memory_binding, NULL, NULL, NULL, napi_default, NULL},
      {"addArrays", NULL, add_arrays_binding, NULL, NULL, NULL, napi_default, NULL},
      {"sumOfSquares", NULL, sum_of_squares_binding, NULL, NULL, NULL, napi_default, NULL},
      {"scaleArray", NULL, scale_array_binding, NULL, NULL, NULL, napi_default, NULL},
      {"copyBlocks", NULL, copy_blocks_binding, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties) != napi_ok)
    return NULL;
  return exports;
}
