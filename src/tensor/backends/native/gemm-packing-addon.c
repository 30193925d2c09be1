/*
 * N-API binding of one panel packer (gemm_pack_panel), for the tests that compare each instruction set's
 * packing kernels with the plain C ones bit for bit (gemm-packing.test.ts).
 *
 * Is: included by addon.c after its helpers (CHECK, get_floats, kernel_for); argument reading and the bounds
 * checks that keep every index the packer touches inside the arrays.
 * Is not: used by the backend (the driver packs internally) or the packers themselves (gemm.c, kernels-*.c).
 *
 * Export (registered in addon.c): packPanel(isa, operand: 0 A | 1 transposed A | 2 transposed B, plain, src,
 * ld, kc, count, out), out at least kc x MR (A) or kc x NR (B) floats.
 */

static napi_value pack_panel_binding(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  char isa[32] = {0};
  size_t isa_length = 0;
  int32_t operand = -1;
  bool plain = false;
  int64_t ld = 0, kc = 0, count = 0;
  if (argc < 8 || napi_get_value_string_utf8(env, argv[0], isa, sizeof isa, &isa_length) != napi_ok ||
      napi_get_value_int32(env, argv[1], &operand) != napi_ok || napi_get_value_bool(env, argv[2], &plain) != napi_ok ||
      napi_get_value_int64(env, argv[4], &ld) != napi_ok || napi_get_value_int64(env, argv[5], &kc) != napi_ok ||
      napi_get_value_int64(env, argv[6], &count) != napi_ok) {
    napi_throw_type_error(env, NULL, "grpo native: packPanel(isa, operand, plain, src, ld, kc, count, out)");
    return NULL;
  }
  const gemm_kernel *kernel = kernel_for(isa);
  float *src, *out;
  size_t src_length, out_length;
  if (!kernel) {
    napi_throw_error(env, NULL, "grpo native packPanel: instruction set unknown or not supported by this CPU");
    return NULL;
  }
  if (!get_floats(env, argv[3], "src", &src, &src_length) || !get_floats(env, argv[7], "out", &out, &out_length))
    return NULL;
  const int64_t width = operand == GEMM_PANEL_B_TRANSPOSED ? kernel->nr : kernel->mr;
  /* A and transposed B: `count` rows of length kc, ld apart; transposed A: kc rows of length count, ld apart. */
  const int along_rows = operand != GEMM_PANEL_A_TRANSPOSED;
  const double last = along_rows ? (double)(count - 1) * ld + kc : (double)(kc - 1) * ld + count;
  if (operand < GEMM_PANEL_A || operand > GEMM_PANEL_B_TRANSPOSED || kc < 1 || count < 1 || count > width ||
      ld < (along_rows ? kc : count) || last > (double)src_length || (double)kc * width > (double)out_length) {
    napi_throw_range_error(env, NULL, "grpo native packPanel: operand, kc, count or ld out of range for the arrays");
    return NULL;
  }
  gemm_pack_panel(kernel, (gemm_panel)operand, plain, src, ld, kc, count, out);
  return NULL;
}
