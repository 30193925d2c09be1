/*
 * Portable micro-kernel: a 4 x 16 tile in plain C that the compiler may auto-vectorize.
 *
 * Is: the fallback for CPUs (or architectures) without AVX2, so the addon is always correct.
 * Is not: fast; on x86-64 with AVX2 or AVX-512 the dispatcher never picks it unless asked to.
 */
#include "gemm.h"

#define MR 4
#define NR 16

/* prefetch_offset (gemm.h) is ignored: this kernel is the portable fallback, not tuned for speed. */
static void kernel_4x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                        float *restrict c, int64_t ldc, int add, int64_t prefetch_offset) {
  (void)prefetch_offset;
  float acc[MR][NR] = {{0}};
  for (int64_t k = 0; k < kc; k++) {
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < NR; j++) acc[i][j] += a[i] * b[j];
    a += MR;
    b += ldb;
  }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) c[i * ldc + j] = add ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

static void dot_rows(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float *c, int64_t ldc, int add) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float sum = 0.0f;
      for (int64_t k = 0; k < kc; k++) sum += a[i * lda + k] * b[j * ldb + k];
      c[i * ldc + j] = add ? c[i * ldc + j] + sum : sum;
    }
}

static void axpy_rows(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b, int64_t ldb,
                      float *c, int64_t ldc, int add) {
  for (int64_t i = 0; i < m; i++) {
    float *ci = c + i * ldc;
    if (!add)
      for (int64_t j = 0; j < n; j++) ci[j] = 0.0f;
    for (int64_t k = 0; k < kc; k++) {
      const float aik = a[i * lda + k];
      const float *bk = b + k * ldb;
      for (int64_t j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

/* No short kernel: 4-row tiles leave no short last tile in the decode's M = 64. */
static const gemm_kernel generic_kernel = {"generic", MR,       NR,        256, 336, 4096, kernel_4x16, 0, 0,
                                           dot_rows,  axpy_rows, 0, 0, 0};

const gemm_kernel *gemm_kernel_generic(void) { return &generic_kernel; }
