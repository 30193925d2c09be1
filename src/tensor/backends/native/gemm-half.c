/*
 * The bfloat16 B operand of the native SGEMM: a frozen LoRA base weight kept as bfloat16 bits (the upper
 * 16 bits of a float32) is widened while it is packed, so no float32 copy of the matrix ever exists.
 *
 * Is: the two places where gemm.c reads B, for a bfloat16 B: packing a KC x NC block into NR-column
 * panels (gemm_half_pack_b, the same layout pack_b writes), and the few-rows path (gemm_half_few_rows),
 * which widens a strip of B at a time into the thread's workspace and hands it to the instruction set's
 * own dot or row kernel. Widening is exact, every panel holds the very floats a widened copy would
 * give, and the micro-kernels and the order of their sums are the float32 path's, so a product with
 * bfloat16 B equals, bit for bit, the same product with B widened up front (native-backend.test.ts).
 * Is not: an instruction-set kernel (the arithmetic stays in kernels-*.c; this file is plain C that
 * every path shares), a bfloat16 product (every multiply-add is float32), or a packed-once copy
 * (gemm_pack takes float32 B only: a packed float32 copy is what a bfloat16 base exists to avoid).
 */
#include "gemm-half.h"

#include <string.h>

/* Columns (transposed B: rows) widened per call of the few-rows kernels: a multiple of every vector
 * width (8 and 16), and 256 x 64 floats stay within L2 next to A and C. */
#define STRIP 64

static inline float widen(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &word, sizeof value);
  return value;
}

void gemm_half_pack_b(const uint16_t *b, const gemm_shape *s, int nr, int64_t p0, int64_t kc, int64_t j0,
                      int64_t nc, float *dst) {
  for (int64_t jp = 0; jp < nc; jp += nr, dst += (int64_t)nr * kc) {
    int64_t cols = nc - jp < nr ? nc - jp : nr;
    if (s->transpose_b) {
      /* Stored [N, K]: column col of the panel is row j0 + jp + col of B, contiguous in k. Walking each
       * row once and scattering into the panel reads B in order; the panel (kc x nr) stays in L1/L2. */
      for (int64_t col = 0; col < cols; col++) {
        const uint16_t *src = b + (j0 + jp + col) * s->K + p0;
        for (int64_t k = 0; k < kc; k++) dst[k * nr + col] = widen(src[k]);
      }
      for (int64_t k = 0; k < kc; k++)
        for (int64_t col = cols; col < nr; col++) dst[k * nr + col] = 0.0f;
    } else {
      for (int64_t k = 0; k < kc; k++) {
        const uint16_t *src = b + (p0 + k) * s->N + j0 + jp;
        float *d = dst + k * nr;
        for (int64_t col = 0; col < cols; col++) d[col] = widen(src[col]);
        for (int64_t col = cols; col < nr; col++) d[col] = 0.0f;
      }
    }
  }
}

void gemm_half_few_rows(const gemm_kernel *kernel, const gemm_shape *s, int64_t rows, const float *a, int64_t lda,
                        const uint16_t *b, int64_t pc, int64_t kc, int64_t n0, int64_t n1, float *c, int64_t ldc,
                        int add, float *scratch) {
  for (int64_t j0 = n0; j0 < n1; j0 += STRIP) {
    int64_t width = n1 - j0 < STRIP ? n1 - j0 : STRIP;
    if (s->transpose_b) { /* rows j0.. of B, each kc long, read by dot products */
      for (int64_t j = 0; j < width; j++) {
        const uint16_t *src = b + (j0 + j) * s->K + pc;
        float *d = scratch + j * kc;
        for (int64_t k = 0; k < kc; k++) d[k] = widen(src[k]);
      }
      kernel->dot(rows, width, kc, a, lda, scratch, kc, c + (j0 - n0), ldc, add);
    } else { /* a kc x width block of B's rows, streamed by the row kernel */
      for (int64_t k = 0; k < kc; k++) {
        const uint16_t *src = b + (pc + k) * s->N + j0;
        float *d = scratch + k * width;
        for (int64_t j = 0; j < width; j++) d[j] = widen(src[j]);
      }
      kernel->rows(rows, width, kc, a, lda, scratch, width, c + (j0 - n0), ldc, add);
    }
  }
}
