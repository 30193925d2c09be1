/*
 * Packing of the native SGEMM's operands into micro-panels (declared in gemm-pack.h; gemm_pack_panel in gemm.h).
 *
 * Is: the plain C panel packers (A, transposed A, transposed B), the dispatch to an instruction set's own
 * packer when its kernel has one, and the block packers the driver calls (a block = panels side by side).
 * A packed panel is a copy of the operand with zero padding, so every packer of one panel gives the same bits.
 * Is not: blocking or threading (gemm.c), the vectorised packers (kernels-*.c) or the bfloat16 B (gemm-half.c).
 */
#include "gemm-pack.h"

#include <string.h>

#include "gemm-half.h"

/* The plain C packers of one panel, used when a kernel has none of its own (and by gemm_pack_panel's tests). */
static void pack_a_plain(const float *a, int64_t lda, int64_t kc, int64_t rows, int mr, float *dst) {
  for (int64_t r = 0; r < rows; r++) {
    const float *src = a + r * lda;
    for (int64_t k = 0; k < kc; k++) dst[k * mr + r] = src[k];
  }
  for (int64_t r = rows; r < mr; r++)
    for (int64_t k = 0; k < kc; k++) dst[k * mr + r] = 0.0f;
}

/* A stored [K, M]: a panel row of k is contiguous in i. */
static void pack_at_plain(const float *a, int64_t lda, int64_t kc, int64_t rows, int mr, float *dst) {
  for (int64_t k = 0; k < kc; k++) {
    const float *src = a + k * lda;
    float *d = dst + k * mr;
    for (int64_t r = 0; r < rows; r++) d[r] = src[r];
    for (int64_t r = rows; r < mr; r++) d[r] = 0.0f;
  }
}

/* B stored [N, K]. Writing dst in order and reading nr rows of B side by side keeps those nr cache lines in
 * L1 for 16 consecutive k, which beats strided writes into the panel. */
static void pack_bt_plain(const float *b, int64_t ldb, int64_t kc, int64_t cols, int nr, float *dst) {
  for (int64_t k = 0; k < kc; k++) {
    float *d = dst + k * nr;
    for (int64_t col = 0; col < cols; col++) d[col] = b[col * ldb + k];
    for (int64_t col = cols; col < nr; col++) d[col] = 0.0f;
  }
}

void gemm_pack_panel(const gemm_kernel *kernel, gemm_panel operand, int plain, const float *src, int64_t ld,
                     int64_t kc, int64_t count, float *dst) {
  if (operand == GEMM_PANEL_A) {
    if (kernel->pack_a && !plain)
      kernel->pack_a(src, ld, kc, count, dst);
    else
      pack_a_plain(src, ld, kc, count, kernel->mr, dst);
  } else if (operand == GEMM_PANEL_A_TRANSPOSED) {
    if (kernel->pack_at && !plain)
      kernel->pack_at(src, ld, kc, count, dst);
    else
      pack_at_plain(src, ld, kc, count, kernel->mr, dst);
  } else if (kernel->pack_bt && !plain) {
    kernel->pack_bt(src, ld, kc, count, dst);
  } else {
    pack_bt_plain(src, ld, kc, count, kernel->nr, dst);
  }
}

/*
 * A plain B block (kc rows of nc columns, ldb apart) into NR-column panels: row k is copied into every panel
 * at once, so B is read row after row, which the prefetchers follow, instead of in NR-wide strips down kc
 * rows N apart (perf: the strips' small memcpy calls cost a third of the packing in 512 x 4096 x 512). The
 * panel of column jp (a multiple of NR) starts at dst + jp * kc. The constant-size copies compile inline.
 */
static void pack_b_rows(const float *b, int64_t ldb, int64_t kc, int64_t nc, int nr, float *dst) {
  const int64_t full = nc / nr * nr;
  for (int64_t k = 0; k < kc; k++) {
    const float *src = b + k * ldb;
    float *d = dst + k * nr;
    int64_t jp = 0;
    if (nr == 16)
      for (; jp < full; jp += 16) memcpy(d + jp * kc, src + jp, 16 * sizeof(float));
    else if (nr == 32)
      for (; jp < full; jp += 32) memcpy(d + jp * kc, src + jp, 32 * sizeof(float));
    for (; jp < full; jp += nr) memcpy(d + jp * kc, src + jp, (size_t)nr * sizeof(float));
    if (jp < nc) { /* the last panel, zero-padded */
      for (int64_t col = 0; col < nr; col++) d[jp * kc + col] = jp + col < nc ? src[jp + col] : 0.0f;
    }
  }
}

void gemm_pack_a_block(const gemm_kernel *kernel, const gemm_shape *s, const float *a, int64_t i0, int64_t mc,
                       int64_t p0, int64_t kc, float *dst) {
  const int mr = kernel->mr;
  for (int64_t ip = 0; ip < mc; ip += mr, dst += (int64_t)mr * kc) {
    int64_t rows = mc - ip < mr ? mc - ip : mr;
    if (s->transpose_a)
      gemm_pack_panel(kernel, GEMM_PANEL_A_TRANSPOSED, 0, a + p0 * s->M + i0 + ip, s->M, kc, rows, dst);
    else
      gemm_pack_panel(kernel, GEMM_PANEL_A, 0, a + (i0 + ip) * s->K + p0, s->K, kc, rows, dst);
  }
}

void gemm_pack_b_block(const gemm_kernel *kernel, const gemm_shape *s, const float *b, int64_t p0, int64_t kc,
                       int64_t j0, int64_t nc, float *dst) {
  const int nr = kernel->nr;
  if (s->b_bfloat16) {
    gemm_half_pack_b((const uint16_t *)b, s, nr, p0, kc, j0, nc, dst);
    return;
  }
  if (!s->transpose_b) {
    pack_b_rows(b + p0 * s->N + j0, s->N, kc, nc, nr, dst);
    return;
  }
  for (int64_t jp = 0; jp < nc; jp += nr, dst += (int64_t)nr * kc) {
    int64_t cols = nc - jp < nr ? nc - jp : nr;
    gemm_pack_panel(kernel, GEMM_PANEL_B_TRANSPOSED, 0, b + (j0 + jp) * s->K + p0, s->K, kc, cols, dst);
  }
}
