/*
 * AVX2 + FMA micro-kernel: a 6 x 16 register tile (12 ymm accumulators, 2 B vectors, 2 broadcasts), and a
 * 4 x 16 one (8 accumulators) for a last row tile of at most 4 rows (M = 64 = 10 x 6 + 4 while decoding).
 *
 * Is: the innermost loop of the packed SGEMM for CPUs with AVX2 but no AVX-512, compiled through a
 * function target attribute and chosen at run time (gemm_kernel_avx2), the few-rows kernels, and the
 * panel packers (one MR-row panel of A or of a transposed A, one NR-column panel of a transposed B).
 * Is not: blocking (gemm.c) or the choice of what to pack when (gemm-pack.c).
 */
#include "gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma")))
#define MR 6
#define NR 16

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS_4(X) X(0) X(1) X(2) X(3)
#define DECLARE(i) __m256 c##i##0, c##i##1;
#define ZERO(i) c##i##0 = c##i##1 = _mm256_setzero_ps();
#define ASM_ZERO(i) "vxorps %[c" #i "0], %[c" #i "0], %[c" #i "0]\n\tvxorps %[c" #i "1], %[c" #i "1], %[c" #i "1]\n\t"
/* The accumulators as asm operands, `how` their constraint. */
#define ACCUMULATORS_4(how) \
  [c00] how(c00), [c01] how(c01), [c10] how(c10), [c11] how(c11), [c20] how(c20), [c21] how(c21), [c30] how(c30), \
      [c31] how(c31)
#define ACCUMULATORS_6(how) ACCUMULATORS_4(how), [c40] how(c40), [c41] how(c41), [c50] how(c50), [c51] how(c51)
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

/*
 * One k step in assembly: two B vectors into ymm0/ymm1, each A value broadcast (ymm2/ymm3 alternating) into
 * two FMAs. %[c<i><j>] are the 12 accumulators, which the clobbers of ymm0-ymm3 leave in ymm4-ymm15.
 * The A offsets are literal bytes (6 floats a step), so the assembler sees plain displacements; B is advanced
 * by ldb after each step.
 */
#define ASM_BROADCAST(offset, reg, i)                    \
  "vbroadcastss " #offset "(%[a]), %%ymm" #reg "\n\t"     \
  "vfmadd231ps %%ymm0, %%ymm" #reg ", %[c" #i "0]\n\t"    \
  "vfmadd231ps %%ymm1, %%ymm" #reg ", %[c" #i "1]\n\t"
#define ASM_STEP_4(a0, a1, a2, a3)                                                        \
  "vmovups (%[b]), %%ymm0\n\t"                                                          \
  "vmovups 32(%[b]), %%ymm1\n\t"                                                        \
  "add %[ldb_bytes], %[b]\n\t"                                                          \
  ASM_BROADCAST(a0, 2, 0) ASM_BROADCAST(a1, 3, 1) ASM_BROADCAST(a2, 2, 2) ASM_BROADCAST(a3, 3, 3)
#define ASM_STEP(a0, a1, a2, a3, a4, a5) ASM_STEP_4(a0, a1, a2, a3) ASM_BROADCAST(a4, 2, 4) ASM_BROADCAST(a5, 3, 5)

/*
 * The k loop is written in assembly because GCC, given the same loop in intrinsics, spilled accumulators to
 * the stack (12 accumulators + 2 B vectors + a broadcast fill 15 of the 16 ymm registers) and the reload
 * stalled every iteration (perf: the spilled FMA took a third of the kernel's samples, the kernel ran at
 * ~80% of OpenBLAS's). Unrolled by 4 so the loop overhead is small next to the 6-cycle FMA bound per step;
 * A is prefetched 8 steps ahead (it streams from L2, while the B panel stays in L1), and once per 4 steps
 * (4 lines of B) the line at b + prefetch_offset into L2 (gemm.h). The sums are the intrinsics version's, in
 * the same order: each accumulator starts at zero and gets a[k] * b[k] for k = 0, 1, ... by FMA.
 * The 4-step loop zeroes the accumulators itself, so they are outputs only: GCC allows 30 operands, in-outs
 * count twice, and the prefetch offset is one more than the in-out form of the 6-row tile leaves room for.
 * The loops end when a reaches its end pointer (no counter, for the same reason).
 */
AVX2_FN static void kernel_6x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                                float *restrict c, int64_t ldc, int add, int64_t prefetch_offset) {
  ROWS(DECLARE)
  ROWS(PREFETCH_C)
  const float *quads_end = a + (kc / 4) * 4 * MR, *a_end = a + kc * MR;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
  if (a < quads_end)
    __asm__ volatile(ROWS(ASM_ZERO)
                     "1:\n\t"
                     "prefetcht0 192(%[a])\n\t"
                     "prefetcht0 256(%[a])\n\t"
                     "prefetcht1 (%[b], %[prefetch_offset])\n\t"
                     ASM_STEP(0, 4, 8, 12, 16, 20) ASM_STEP(24, 28, 32, 36, 40, 44)
                     ASM_STEP(48, 52, 56, 60, 64, 68) ASM_STEP(72, 76, 80, 84, 88, 92)
                     "add $96, %[a]\n\t"
                     "cmp %[end], %[a]\n\t"
                     "jne 1b\n\t"
                     : [a] "+r"(a), [b] "+r"(b), ACCUMULATORS_6("=&x")
                     : [ldb_bytes] "r"(ldb_bytes), [end] "r"(quads_end), [prefetch_offset] "r"(prefetch_offset)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
  else {
    ROWS(ZERO)
  }
  if (a < a_end)
    __asm__ volatile("1:\n\t"
                     ASM_STEP(0, 4, 8, 12, 16, 20)
                     "add $24, %[a]\n\t"
                     "cmp %[end], %[a]\n\t"
                     "jne 1b\n\t"
                     : [a] "+r"(a), [b] "+r"(b), ACCUMULATORS_6("+x")
                     : [ldb_bytes] "r"(ldb_bytes), [end] "r"(a_end)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
  ROWS(STORE)
}

/*
 * The 6 x 16 kernel's product for tiles of at most 4 rows, on the same packed A (6 floats a step, of which it
 * reads the first 4), so that a last row tile of 4 (M = 64 = 10 x 6 + 4 while decoding) costs 4 rows, not 6
 * plus a copy through edge_tile. Each accumulator gets the same FMAs in the same order as in kernel_6x16, so
 * its rows are bit for bit those the 6-row kernel would give. 8 accumulators still cover the FMA latency
 * (4 cycles x 2 pipes on Zen3).
 */
AVX2_FN static void kernel_4x16(int64_t kc, const float *restrict a, const float *restrict b, int64_t ldb,
                                float *restrict c, int64_t ldc, int add, int64_t prefetch_offset) {
  ROWS_4(DECLARE)
  ROWS_4(PREFETCH_C)
  const float *quads_end = a + (kc / 4) * 4 * MR, *a_end = a + kc * MR;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
  if (a < quads_end)
    __asm__ volatile(ROWS_4(ASM_ZERO)
                     "1:\n\t"
                     "prefetcht0 192(%[a])\n\t"
                     "prefetcht0 256(%[a])\n\t"
                     "prefetcht1 (%[b], %[prefetch_offset])\n\t"
                     ASM_STEP_4(0, 4, 8, 12) ASM_STEP_4(24, 28, 32, 36)
                     ASM_STEP_4(48, 52, 56, 60) ASM_STEP_4(72, 76, 80, 84)
                     "add $96, %[a]\n\t"
                     "cmp %[end], %[a]\n\t"
                     "jne 1b\n\t"
                     : [a] "+r"(a), [b] "+r"(b), ACCUMULATORS_4("=&x")
                     : [ldb_bytes] "r"(ldb_bytes), [end] "r"(quads_end), [prefetch_offset] "r"(prefetch_offset)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
  else {
    ROWS_4(ZERO)
  }
  if (a < a_end)
    __asm__ volatile("1:\n\t"
                     ASM_STEP_4(0, 4, 8, 12)
                     "add $24, %[a]\n\t"
                     "cmp %[end], %[a]\n\t"
                     "jne 1b\n\t"
                     : [a] "+r"(a), [b] "+r"(b), ACCUMULATORS_4("+x")
                     : [ldb_bytes] "r"(ldb_bytes), [end] "r"(a_end)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
  ROWS_4(STORE)
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

/* In-register 8 x 8 transpose: unpack 32-bit, shuffle 64-bit, then swap 128-bit lanes. */
AVX2_FN static inline __attribute__((always_inline)) void transpose_8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* Packs a transposed-B panel 8 k x 8 columns at a time through transpose_8x8; the last kc % 8 k one by one. */
AVX2_FN static void pack_bt_16(const float *b, int64_t ldb, int64_t kc, int64_t cols, float *dst) {
  const int64_t k8 = kc & ~(int64_t)7;
  for (int64_t k0 = 0; k0 < k8; k0 += 8)
    for (int half = 0; half < 2; half++) {
      __m256 r[8];
      for (int j = 0; j < 8; j++) {
        int64_t col = half * 8 + j;
        r[j] = col < cols ? _mm256_loadu_ps(b + col * ldb + k0) : _mm256_setzero_ps();
      }
      transpose_8x8(r);
      for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (k0 + k) * NR + half * 8, r[k]);
    }
  for (int64_t k = k8; k < kc; k++)
    for (int64_t col = 0; col < NR; col++) dst[k * NR + col] = col < cols ? b[col * ldb + k] : 0.0f;
}

/* The 6 floats of one packed-A step: 4 + 2, so nothing is written past the panel. */
AVX2_FN static inline void store_6(float *dst, __m256 v) {
  __m128 low = _mm256_castps256_ps128(v);
  _mm_storeu_ps(dst, low);
  _mm_storel_pi((__m64 *)(dst + 4), _mm256_extractf128_ps(v, 1));
}

/* Packs a plain-A panel: 6 rows (+2 zero rows) x 8 k transposed at a time, 6 lanes stored per k. */
AVX2_FN static void pack_a_6(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst) {
  const int64_t k8 = kc & ~(int64_t)7;
  for (int64_t k0 = 0; k0 < k8; k0 += 8) {
    __m256 r[8];
    for (int i = 0; i < 8; i++) r[i] = i < rows && i < MR ? _mm256_loadu_ps(a + i * lda + k0) : _mm256_setzero_ps();
    transpose_8x8(r);
    for (int k = 0; k < 8; k++) store_6(dst + (k0 + k) * MR, r[k]);
  }
  for (int64_t k = k8; k < kc; k++)
    for (int64_t i = 0; i < MR; i++) dst[k * MR + i] = i < rows ? a[i * lda + k] : 0.0f;
}

/* Packs a transposed-A panel: for each k the 6 rows are contiguous, copied as 4 + 2 floats. */
AVX2_FN static void pack_at_6(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst) {
  if (rows < MR) {
    for (int64_t k = 0; k < kc; k++)
      for (int64_t i = 0; i < MR; i++) dst[k * MR + i] = i < rows ? a[k * lda + i] : 0.0f;
    return;
  }
  for (int64_t k = 0; k < kc; k++) {
    const float *src = a + k * lda;
    _mm_storeu_ps(dst + k * MR, _mm_loadu_ps(src));
    _mm_storel_pi((__m64 *)(dst + k * MR + 4), _mm_castpd_ps(_mm_load_sd((const double *)(src + 4))));
  }
}

/*
 * Block sizes measured on an AMD Zen3 (32 KiB L1d, 512 KiB L2 per core, 32 MiB L3): KC = 256 keeps the 16 KiB
 * B panel in L1; MC = 168 rows (a 168 KiB A block) was as fast as 336 on one thread within the noise and
 * leaves L2 room for the B panels streaming through, and it bounds the row chunks of the shared mode.
 */
static const gemm_kernel avx2_kernel = {"avx2",  MR,          NR,      256,    168,        4096,     kernel_6x16,
                                        4,       kernel_4x16, dot_2x4, rows_4, pack_bt_16, pack_a_6, pack_at_6};

const gemm_kernel *gemm_kernel_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &avx2_kernel : 0;
}
#else
const gemm_kernel *gemm_kernel_avx2(void) { return 0; }
#endif
