/*
 * The SGEMM driver's private state, shared by gemm.c (the general driver) and gemm-packed.c (B packed once).
 *
 * Is: the context and per-thread workspace layouts, one product's operands, and the driver helpers both use.
 * Is not: the public interface (gemm.h) or the packers (gemm-pack.h).
 */
#ifndef GRPO_GEMM_DRIVER_H
#define GRPO_GEMM_DRIVER_H

#include <stdint.h>

#include "gemm.h"
#include "thread-pool.h"

/* Below this many flops the pool's wake-up latency costs more than a second thread saves. */
#define PARALLEL_MIN_FLOPS 4.0e6

typedef struct {
  float *pack_a; /* MC x KC */
  float *pack_b; /* KC x NC */
} workspace;

struct gemm_context {
  const gemm_kernel *kernel;
  int threads;
  int64_t mc, kc, nc;
  int64_t dot_max_m, rows_max_m;
  thread_pool *pool;
  workspace *spaces;
  /* Two KC x NC blocks, packed by all threads together in shared mode: one is packed while the other is read. */
  float *shared_b[2];
};

/* One product's operands: A, B and C of batch element b with the shape's strides. */
typedef struct {
  const float *a, *b;
  float *c;
  const gemm_shape *shape;
} operands;

/* 64-byte-aligned floats (rounded up to whole cache lines), freed with free(). */
float *gemm_alloc_floats(int64_t count);

/*
 * Rows [m0,m1) of C[:, jc:jc+nc] (+)= op(A)[m0:m1, pc:pc+kc] . B block, where column j of the block starts at
 * b + j * column_stride and its rows are ldb apart: the packed KC x NC block (column_stride kc, ldb NR), or
 * a plain B read in place (column_stride 1, ldb N; only whole NR panels). A packed block's next panel is
 * prefetched while one is multiplied; `following` (NULL: none) is the packed panel, of the same depth kc, that
 * the caller multiplies after this block, prefetched during the block's last panel.
 */
void gemm_compute_block(const gemm_context *ctx, workspace *space, const operands *op, const float *b,
                        int64_t column_stride, int64_t ldb, int64_t m0, int64_t m1, int64_t jc, int64_t nc,
                        int64_t pc, int64_t kc, const float *following);

/* [start, end) of part `part` of `parts` of [0, extent), cut at multiples of `unit`. */
void gemm_piece(int64_t extent, int64_t unit, int64_t part, int64_t parts, int64_t *start, int64_t *end);

#endif
