/*
 * Packed, cache-blocked single-precision matrix product for the `native` backend.
 *
 * Is: the shared driver interface (blocking, packing, threading) and the micro-kernel descriptor that
 * each instruction-set file (kernels-avx512.c, kernels-avx2.c, kernels-generic.c) provides.
 * Is not: the N-API binding (addon.c) or the thread pool itself (thread-pool.h).
 *
 * Legend: C[M,N] (+)= op(A)[M,K] * op(B)[K,N]; MR x NR is the register tile of a micro-kernel,
 * MC x KC the A block kept in L2, KC x NC the B block, kc the depth of one micro-kernel call.
 */
#ifndef GRPO_GEMM_H
#define GRPO_GEMM_H

#include <stdint.h>

/*
 * c[0..MR)[0..NR) (+)= sum_k a[k*MR + i] * b[k*ldb + j]; `a` is a packed panel, `b` a packed panel
 * (ldb = NR) or rows of B read in place (ldb = N).
 * add == 0 overwrites c without reading it (so NaN garbage in `out` never leaks in).
 * Once per 256 bytes of B read (4 rows of a 16-wide panel, 2 of a 32-wide one), the kernel prefetches into L2
 * the line at byte offset prefetch_offset from where it then reads B: the driver points it into the next panel
 * (gemm_compute_block), or passes 0 (a line being read anyway). A hint only: it changes no result.
 */
typedef void (*micro_kernel_fn)(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc,
                                int add, int64_t prefetch_offset);

/*
 * c[i*ldc + j] (+)= sum_k a[i*lda + k] * b[j*ldb + k] for i < m, j < n: rows of A against rows of B.
 * Used instead of packing when B is transposed and M is small (decoding), where packing B would cost
 * as much as the product itself.
 */
typedef void (*dot_kernel_fn)(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float *c, int64_t ldc, int add);

/*
 * c[i*ldc + j] (+)= sum_k a[i*lda + k] * b[k*ldb + j] for i < m, j < n, walking rows of B in order.
 * Used instead of packing when B is not transposed and M is small: a 32-column strip of a wide B is a
 * page-crossing strided walk that the prefetchers cannot follow, while whole rows stream.
 */
typedef void (*row_kernel_fn)(int64_t m, int64_t n, int64_t kc, const float *a, int64_t lda, const float *b,
                              int64_t ldb, float *c, int64_t ldc, int add);

typedef struct {
  const char *name;
  int mr;
  int nr;
  /*
   * Block sizes for the caches of the CPUs this kernel is for (measured there): kc the depth of a packed
   * block (a KC x NR panel of B stays in L1), mc the rows of the packed A block (L2), nc the columns of the
   * packed B block (L3). mc is a multiple of mr, nc of nr.
   */
  int kc;
  int mc;
  int nc;
  micro_kernel_fn kernel;
  /*
   * Optional (0 and NULL: none): the kernel's product for tiles of at most short_rows < mr rows, reading the
   * same packed A panel (mr floats a step, zero rows included). Each element gets the same sum in the same
   * order as from `kernel`, so the driver may take either; it takes this one for a short last row tile
   * (M = 64 while decoding leaves 4 rows after 6-row tiles, 8 after 14-row ones).
   */
  int short_rows;
  micro_kernel_fn short_kernel;
  dot_kernel_fn dot;
  row_kernel_fn rows;
  /*
   * Optional (NULL: plain C in gemm.c): packs one NR-column panel of a transposed B,
   * dst[k*NR + j] = b[j*ldb + k] for j < cols, k < kc, and 0 for cols <= j < NR.
   */
  void (*pack_bt)(const float *b, int64_t ldb, int64_t kc, int64_t cols, float *dst);
  /* Optional (NULL: plain C): packs one MR-row panel of a plain A, dst[k*MR + i] = a[i*lda + k], 0 for i >= rows. */
  void (*pack_a)(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst);
  /* Optional (NULL: plain C): the same for a transposed A, dst[k*MR + i] = a[k*lda + i]. */
  void (*pack_at)(const float *a, int64_t lda, int64_t kc, int64_t rows, float *dst);
} gemm_kernel;

/* Each returns NULL when the instruction set was not compiled in or the CPU lacks it. */
const gemm_kernel *gemm_kernel_avx512(void);
const gemm_kernel *gemm_kernel_avx2(void);
const gemm_kernel *gemm_kernel_generic(void);

/* Which operand a panel packer packs (gemm_pack_panel). */
typedef enum { GEMM_PANEL_A, GEMM_PANEL_A_TRANSPOSED, GEMM_PANEL_B_TRANSPOSED } gemm_panel;

/*
 * Packs one panel as the driver does: `count` rows of A (or columns of op(B)) of depth kc from `src` (leading
 * dimension ld, as stored) into dst (kc x MR, or kc x NR for B), with the kernel's own packer, or with the plain
 * C one when `plain` is set or the kernel has none. Packing is a copy, so both must agree bit for bit; the
 * tests compare them through the addon's packPanel.
 */
void gemm_pack_panel(const gemm_kernel *kernel, gemm_panel operand, int plain, const float *src, int64_t ld,
                     int64_t kc, int64_t count, float *dst);

typedef struct {
  int64_t batch, M, K, N;
  int transpose_a, transpose_b;
  int64_t a_batch_stride, b_batch_stride;
  int accumulate;
  /* B holds bfloat16 bits (uint16_t, strides in elements), widened while packing (gemm-half.c). */
  int b_bfloat16;
} gemm_shape;

typedef struct gemm_context gemm_context;

/* Creates a context with `threads` threads (the caller counts as one) using kernel `k`. */
gemm_context *gemm_context_create(const gemm_kernel *k, int threads);
void gemm_context_destroy(gemm_context *ctx);
int gemm_context_threads(const gemm_context *ctx);
const gemm_kernel *gemm_context_kernel(const gemm_context *ctx);
/* The context's thread pool, shared with the row kernels (row-kernels.c); one job at a time. */
struct thread_pool *gemm_context_pool(gemm_context *ctx);

/* Runs the batched product; returns 0, or -1 when a workspace allocation failed. */
int gemm_run(gemm_context *ctx, const float *a, const float *b, float *out, const gemm_shape *shape);

/*
 * B packed once for many products with it (a weight while decoding): pack it with gemm_pack, then
 * gemm_run_packed computes out[M, N] (+)= A[M, K] (row-major, not transposed) . op(B) without repacking.
 * The packed copy does not follow later changes to `b`; the caller drops it when `b` may change.
 */
typedef struct gemm_packed gemm_packed;
/* NULL when out of memory. */
gemm_packed *gemm_pack(const gemm_context *ctx, const float *b, int64_t K, int64_t N, int transpose_b);
void gemm_packed_destroy(gemm_packed *packed);
void gemm_packed_shape(const gemm_packed *packed, int64_t *K, int64_t *N);
/* The most rows gemm_run_packed takes (a prefill batch); larger products use gemm_run. */
int gemm_packed_max_rows(const gemm_context *ctx);
/* Returns 0, or -1 when M exceeds gemm_packed_max_rows or `b` was packed for another kernel. */
int gemm_run_packed(gemm_context *ctx, const float *a, const gemm_packed *b, float *out, int64_t M, int accumulate);

#endif
