/*
 * Packing for the native SGEMM driver (gemm-pack.c): op(A) and op(B) blocks copied into the micro-panels the
 * micro-kernels read, which is where transposes are absorbed.
 * Is not: blocking or threading (gemm.c), the instruction sets' own panel packers (kernels-*.c, which these
 * call when a kernel has them) or the bfloat16 B (gemm-half.c).
 */
#ifndef GRPO_GEMM_PACK_H
#define GRPO_GEMM_PACK_H

#include <stdint.h>

#include "gemm.h"

/* Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels, k-major inside a panel, zero-padding rows. */
void gemm_pack_a_block(const gemm_kernel *kernel, const gemm_shape *s, const float *a, int64_t i0, int64_t mc,
                       int64_t p0, int64_t kc, float *dst);

/* Packs op(B)[p0:p0+kc, j0:j0+nc] into NR-column panels, k-major inside a panel, zero-padding columns;
 * a bfloat16 B (s->b_bfloat16) is widened by gemm-half.c. */
void gemm_pack_b_block(const gemm_kernel *kernel, const gemm_shape *s, const float *b, int64_t p0, int64_t kc,
                       int64_t j0, int64_t nc, float *dst);

#endif
