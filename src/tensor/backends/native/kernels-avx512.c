/*
 * AVX-512 micro-kernel: a 14 x 32 register tile (28 zmm accumulators, 2 B vectors, 1 broadcast).
 *
 * Is: the innermost loop of the packed SGEMM, compiled for AVX-512F through a function target
 * attribute so the rest of the addon still runs on CPUs without it (dispatch is in gemm_kernel_avx512).
 * Is not: blocking or packing (gemm.c).
 */
#include "gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define MR 14
#define NR 32

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define DECLARE(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
#define UPDATE(i)                                    \
  {                                                  \
    __m512 ai = _mm512_set1_ps(a[i]);                \
    c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);      \
    c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);      \
  }
#define STORE(i)                                                          \
  {                                                                       \
    float *ci = c + (i) * ldc;                                            \
    if (add) {                                                            \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(ci));              \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(ci + 16));         \
    }                                                                     \
    _mm512_storeu_ps(ci, c##i##0);                                        \
    _mm512_storeu_ps(ci + 16, c##i##1);                                   \
  }

AVX512_FN static void kernel_14x32(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                                   float *restrict c, int64_t ldc, int add) {
  ROWS(DECLARE)
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(b);
    __m512 b1 = _mm512_loadu_ps(b + 16);
    ROWS(UPDATE)
    a += MR;
    b += ldb;
  }
  ROWS(STORE)
}

static const gemm_kernel avx512_kernel = {"avx512", MR, NR, kernel_14x32};

const gemm_kernel *gemm_kernel_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma") ? &avx512_kernel : 0;
}
#else
const gemm_kernel *gemm_kernel_avx512(void) { return 0; }
#endif
