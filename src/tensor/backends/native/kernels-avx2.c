/*
 * AVX2 + FMA micro-kernel: a 6 x 16 register tile (12 ymm accumulators, 2 B vectors, 1 broadcast).
 *
 * Is: the innermost loop of the packed SGEMM for CPUs with AVX2 but no AVX-512, compiled through a
 * function target attribute and chosen at run time (gemm_kernel_avx2).
 * Is not: blocking or packing (gemm.c).
 */
#include "gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma")))
#define MR 6
#define NR 16

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define DECLARE(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
#define UPDATE(i)                                    \
  {                                                  \
    __m256 ai = _mm256_broadcast_ss(a + (i));        \
    c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);      \
    c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);      \
  }
#define STORE(i)                                                          \
  {                                                                       \
    float *ci = c + (i) * ldc;                                            \
    if (add) {                                                            \
      c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(ci));              \
      c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(ci + 8));          \
    }                                                                     \
    _mm256_storeu_ps(ci, c##i##0);                                        \
    _mm256_storeu_ps(ci + 8, c##i##1);                                    \
  }

AVX2_FN static void kernel_6x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                                   float *restrict c, int64_t ldc, int add) {
  ROWS(DECLARE)
  for (int64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_loadu_ps(b);
    __m256 b1 = _mm256_loadu_ps(b + 8);
    ROWS(UPDATE)
    a += MR;
    b += ldb;
  }
  ROWS(STORE)
}

static const gemm_kernel avx2_kernel = {"avx2", MR, NR, kernel_6x16};

const gemm_kernel *gemm_kernel_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &avx2_kernel : 0;
}
#else
const gemm_kernel *gemm_kernel_avx2(void) { return 0; }
#endif
