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

#define PREFETCH_C(i)                                              \
  {                                                                \
    _mm_prefetch((const char *)(c + (i) * ldc), _MM_HINT_T0);      \
    _mm_prefetch((const char *)(c + (i) * ldc + 15), _MM_HINT_T0); \
  }
#define STEP(u)                                         \
  {                                                     \
    __m256 b0 = _mm256_loadu_ps(b + (u) * ldb);         \
    __m256 b1 = _mm256_loadu_ps(b + (u) * ldb + 8);     \
    const float *a_step = a;                            \
    {                                                   \
      const float *a = a_step + (u) * MR;               \
      ROWS(UPDATE)                                      \
    }                                                   \
  }

/* The C tile is fetched while the k loop runs (its rows are N apart: 12 lines the loop never touches), and
 * the loop is unrolled by 4 so the loop overhead is a quarter of the 6-cycle FMA bound per step. */
AVX2_FN static void kernel_6x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                                   float *restrict c, int64_t ldc, int add) {
  ROWS(DECLARE)
  ROWS(PREFETCH_C)
  int64_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    STEP(0) STEP(1) STEP(2) STEP(3)
    a += 4 * MR;
    b += 4 * ldb;
  }
  for (; k < kc; k++) {
    STEP(0)
    a += MR;
    b += ldb;
  }
  ROWS(STORE)
}

AVX2_FN static float sum8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

/* 2 rows of A x 4 rows of B per step (8 accumulators); out-of-range rows are clamped and not stored. */
AVX2_FN static void dot_2x4(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float *c, int64_t ldc, int add) {
  const int64_t k8 = kc & ~(int64_t)7;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const float *bj[4];
    for (int q = 0; q < 4; q++) bj[q] = b + (j0 + q < n ? j0 + q : n - 1) * ldb;
    for (int64_t i0 = 0; i0 < m; i0 += 2) {
      const float *a0 = a + i0 * lda, *a1 = a + (i0 + 1 < m ? i0 + 1 : m - 1) * lda;
      __m256 s[2][4];
      for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) s[r][q] = _mm256_setzero_ps();
      for (int64_t k = 0; k < k8; k += 8) {
        __m256 x0 = _mm256_loadu_ps(a0 + k), x1 = _mm256_loadu_ps(a1 + k);
        for (int q = 0; q < 4; q++) {
          __m256 y = _mm256_loadu_ps(bj[q] + k);
          s[0][q] = _mm256_fmadd_ps(x0, y, s[0][q]);
          s[1][q] = _mm256_fmadd_ps(x1, y, s[1][q]);
        }
      }
      for (int r = 0; r < 2 && i0 + r < m; r++) {
        const float *ar = r == 0 ? a0 : a1;
        float *ci = c + (i0 + r) * ldc + j0;
        for (int q = 0; q < 4 && j0 + q < n; q++) {
          float sum = sum8(s[r][q]);
          for (int64_t k = k8; k < kc; k++) sum += ar[k] * bj[q][k];
          ci[q] = add ? ci[q] + sum : sum;
        }
      }
    }
  }
}

/* Up to 4 rows of C, 8 columns per vector (scalar tail), 8 rows of B per pass. */
AVX2_FN static void rows_4(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                           int64_t ldb, float *c, int64_t ldc, int add) {
  const int64_t n8 = n & ~(int64_t)7;
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    const int64_t rows = m - i0 < 4 ? m - i0 : 4;
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
      const int64_t kb = kc - k0 < 8 ? kc - k0 : 8;
      const int first = k0 == 0 && !add;
      for (int64_t r = 0; r < rows; r++) {
        const float *ar = a + (i0 + r) * lda;
        float *cr = c + (i0 + r) * ldc;
        for (int64_t j = 0; j < n8; j += 8) {
          __m256 sum = first ? _mm256_setzero_ps() : _mm256_loadu_ps(cr + j);
          for (int64_t k = k0; k < k0 + kb; k++)
            sum = _mm256_fmadd_ps(_mm256_broadcast_ss(ar + k), _mm256_loadu_ps(b + k * ldb + j), sum);
          _mm256_storeu_ps(cr + j, sum);
        }
        for (int64_t j = n8; j < n; j++) {
          float sum = first ? 0.0f : cr[j];
          for (int64_t k = k0; k < k0 + kb; k++) sum += ar[k] * b[k * ldb + j];
          cr[j] = sum;
        }
      }
    }
  }
}

static const gemm_kernel avx2_kernel = {"avx2", MR, NR, kernel_6x16, dot_2x4, rows_4, 0, 0, 0};

const gemm_kernel *gemm_kernel_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &avx2_kernel : 0;
}
#else
const gemm_kernel *gemm_kernel_avx2(void) { return 0; }
#endif
