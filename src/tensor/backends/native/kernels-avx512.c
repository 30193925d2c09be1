/*
 * AVX-512 micro-kernel: a 14 x 32 register tile (28 zmm accumulators, 2 B vectors, 1 broadcast), and an
 * 8 x 32 one for a last row tile of at most 8 rows (M = 64 = 4 x 14 + 8 while decoding).
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
#define ROWS_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
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

/*
 * One kernel per row count: every row's accumulators get the same FMAs in the same order, and A advances by MR
 * floats a step in both, so kernel_8x32 reads the 14-row packed A and gives kernel_14x32's bits for its rows.
 * As in the AVX2 kernel, the line at b + prefetch_offset goes to L2 once per 256 bytes of B (every 2 steps).
 */
#define MICRO_KERNEL(name, ROWS_OF)                                                                   \
  AVX512_FN static void name(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb, \
                             float *restrict c, int64_t ldc, int add, int64_t prefetch_offset) {        \
    ROWS_OF(DECLARE)                                                                                    \
    for (int64_t k = 0; k < kc; k++) {                                                                  \
      if ((k & 1) == 0) /* once per 256 bytes of B (gemm.h) */                                          \
        _mm_prefetch((const char *)b + prefetch_offset, _MM_HINT_T1);                                   \
      __m512 b0 = _mm512_loadu_ps(b);                                                                   \
      __m512 b1 = _mm512_loadu_ps(b + 16);                                                              \
      ROWS_OF(UPDATE)                                                                                   \
      a += MR;                                                                                          \
      b += ldb;                                                                                         \
    }                                                                                                   \
    ROWS_OF(STORE)                                                                                      \
  }
MICRO_KERNEL(kernel_14x32, ROWS)
MICRO_KERNEL(kernel_8x32, ROWS_8)

#define DOT_ROWS(X) X(0) X(1) X(2) X(3)
#define DOT_DECLARE(i) __m512 s##i##0 = _mm512_setzero_ps(), s##i##1 = _mm512_setzero_ps(), \
                              s##i##2 = _mm512_setzero_ps(), s##i##3 = _mm512_setzero_ps();
#define DOT_UPDATE(i)                                   \
  {                                                     \
    __m512 x = LOAD(a##i + k);                          \
    s##i##0 = _mm512_fmadd_ps(x, y0, s##i##0);          \
    s##i##1 = _mm512_fmadd_ps(x, y1, s##i##1);          \
    s##i##2 = _mm512_fmadd_ps(x, y2, s##i##2);          \
    s##i##3 = _mm512_fmadd_ps(x, y3, s##i##3);          \
  }
#define DOT_STORE(i)                                                          \
  if (i0 + (i) < m) {                                                        \
    float sums[4] = {_mm512_reduce_add_ps(s##i##0), _mm512_reduce_add_ps(s##i##1), \
                     _mm512_reduce_add_ps(s##i##2), _mm512_reduce_add_ps(s##i##3)}; \
    float *ci = c + (i0 + (i)) * ldc + j0;                                    \
    for (int64_t q = 0; q < 4 && j0 + q < n; q++) ci[q] = add ? ci[q] + sums[q] : sums[q]; \
  }

/* 4 rows of A x 4 rows of B per step; out-of-range rows are clamped to the last one and not stored. */
AVX512_FN static void dot_4x4(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float *c, int64_t ldc, int add) {
  const int64_t k16 = kc & ~(int64_t)15;
  const __mmask16 tail = (__mmask16)((1u << (kc & 15)) - 1u);
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const float *b0 = b + j0 * ldb, *b1 = b + (j0 + 1 < n ? j0 + 1 : n - 1) * ldb;
    const float *b2 = b + (j0 + 2 < n ? j0 + 2 : n - 1) * ldb, *b3 = b + (j0 + 3 < n ? j0 + 3 : n - 1) * ldb;
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
      const float *a0 = a + i0 * lda, *a1 = a + (i0 + 1 < m ? i0 + 1 : m - 1) * lda;
      const float *a2 = a + (i0 + 2 < m ? i0 + 2 : m - 1) * lda, *a3 = a + (i0 + 3 < m ? i0 + 3 : m - 1) * lda;
      DOT_ROWS(DOT_DECLARE)
      int64_t k = 0;
#define LOAD(p) _mm512_loadu_ps(p)
      for (; k < k16; k += 16) {
        __m512 y0 = LOAD(b0 + k), y1 = LOAD(b1 + k), y2 = LOAD(b2 + k), y3 = LOAD(b3 + k);
        DOT_ROWS(DOT_UPDATE)
      }
#undef LOAD
#define LOAD(p) _mm512_maskz_loadu_ps(tail, p)
      if (tail) {
        __m512 y0 = LOAD(b0 + k), y1 = LOAD(b1 + k), y2 = LOAD(b2 + k), y3 = LOAD(b3 + k);
        DOT_ROWS(DOT_UPDATE)
      }
#undef LOAD
      DOT_ROWS(DOT_STORE)
    }
  }
}

/* Up to 4 rows of C, 16 columns per vector, 8 rows of B per pass so C is loaded and stored once per 8 k. */
AVX512_FN static void rows_4(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                             int64_t ldb, float *c, int64_t ldc, int add) {
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    const int64_t rows = m - i0 < 4 ? m - i0 : 4;
    const float *ai[4];
    float *ci[4];
    for (int r = 0; r < 4; r++) {
      int64_t row = i0 + (r < rows ? r : rows - 1); /* clamped duplicates are computed, never stored */
      ai[r] = a + row * lda;
      ci[r] = c + row * ldc;
    }
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
      const int64_t kb = kc - k0 < 8 ? kc - k0 : 8;
      const int first = k0 == 0 && !add;
      for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512 s0, s1, s2, s3;
        if (first) {
          s0 = s1 = s2 = s3 = _mm512_setzero_ps();
        } else {
          s0 = _mm512_maskz_loadu_ps(mask, ci[0] + j);
          s1 = _mm512_maskz_loadu_ps(mask, ci[1] + j);
          s2 = _mm512_maskz_loadu_ps(mask, ci[2] + j);
          s3 = _mm512_maskz_loadu_ps(mask, ci[3] + j);
        }
        for (int64_t k = k0; k < k0 + kb; k++) {
          __m512 y = _mm512_maskz_loadu_ps(mask, b + k * ldb + j);
          s0 = _mm512_fmadd_ps(_mm512_set1_ps(ai[0][k]), y, s0);
          s1 = _mm512_fmadd_ps(_mm512_set1_ps(ai[1][k]), y, s1);
          s2 = _mm512_fmadd_ps(_mm512_set1_ps(ai[2][k]), y, s2);
          s3 = _mm512_fmadd_ps(_mm512_set1_ps(ai[3][k]), y, s3);
        }
        _mm512_mask_storeu_ps(ci[0] + j, mask, s0);
        if (rows > 1) _mm512_mask_storeu_ps(ci[1] + j, mask, s1);
        if (rows > 2) _mm512_mask_storeu_ps(ci[2] + j, mask, s2);
        if (rows > 3) _mm512_mask_storeu_ps(ci[3] + j, mask, s3);
      }
    }
  }
}

/* In-register 16 x 16 transpose: unpack 32-bit, unpack 64-bit, then two rounds of 128-bit lane shuffles. */
AVX512_FN static void transpose_16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
    __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

/* Packs a transposed-B panel 16 k x 16 columns at a time through transpose_16x16. */
AVX512_FN static void pack_bt_32(const float *b, int64_t ldb, int64_t kc, int64_t cols, float *dst) {
  for (int64_t k0 = 0; k0 < kc; k0 += 16) {
    const int64_t kb = kc - k0 < 16 ? kc - k0 : 16;
    const __mmask16 mask = (__mmask16)((1u << kb) - 1u);
    for (int half = 0; half < 2; half++) {
      __m512 r[16];
      for (int j = 0; j < 16; j++) {
        int64_t col = half * 16 + j;
        r[j] = col < cols ? _mm512_maskz_loadu_ps(mask, b + col * ldb + k0) : _mm512_setzero_ps();
      }
      transpose_16x16(r);
      for (int64_t k = 0; k < kb; k++) _mm512_storeu_ps(dst + (k0 + k) * NR + half * 16, r[k]);
    }
  }
}

/* Packs a plain-A panel: 14 rows (+2 zero rows) x 16 k transposed at a time, 14 lanes stored per k. */
AVX512_FN static void pack_a_14(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst) {
  for (int64_t k0 = 0; k0 < kc; k0 += 16) {
    const int64_t kb = kc - k0 < 16 ? kc - k0 : 16;
    const __mmask16 mask = (__mmask16)((1u << kb) - 1u);
    __m512 r[16];
    for (int i = 0; i < 16; i++)
      r[i] = i < rows ? _mm512_maskz_loadu_ps(mask, a + i * lda + k0) : _mm512_setzero_ps();
    transpose_16x16(r);
    for (int64_t k = 0; k < kb; k++) _mm512_mask_storeu_ps(dst + (k0 + k) * MR, (__mmask16)((1u << MR) - 1u), r[k]);
  }
}

/* Packs a transposed-A panel: for each k the 14 rows are contiguous, one masked load and store. */
AVX512_FN static void pack_at_14(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst) {
  const __mmask16 load = (__mmask16)((1u << rows) - 1u), store = (__mmask16)((1u << MR) - 1u);
  for (int64_t k = 0; k < kc; k++) _mm512_mask_storeu_ps(dst + k * MR, store, _mm512_maskz_loadu_ps(load, a + k * lda));
}

/* Block sizes measured on a 2-core Sapphire Rapids (48 KiB L1d, 2 MiB L2 per core). */
static const gemm_kernel avx512_kernel = {"avx512",    MR,     NR,         256,       336,       4096,
                                          kernel_14x32, 8,      kernel_8x32, dot_4x4, rows_4, pack_bt_32,
                                          pack_a_14,    pack_at_14};

const gemm_kernel *gemm_kernel_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma") ? &avx512_kernel : 0;
}
#else
const gemm_kernel *gemm_kernel_avx512(void) { return 0; }
#endif
