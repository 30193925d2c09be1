/*
 * A bfloat16 B operand for the native SGEMM (gemm-half.c): the hooks gemm.c calls where it reads B
 * when gemm_shape.b_bfloat16 is set.
 * Is not: a separate driver (blocking, threading and the micro-kernels stay gemm.c's and kernels-*.c's).
 */
#ifndef GRPO_GEMM_HALF_H
#define GRPO_GEMM_HALF_H

#include <stdint.h>

#include "gemm.h"

/* pack_b for a bfloat16 B: op(B)[p0:p0+kc, j0:j0+nc] widened into NR-column panels, k-major, zero-padded. */
void gemm_half_pack_b(const uint16_t *b, const gemm_shape *s, int nr, int64_t p0, int64_t kc, int64_t j0,
                      int64_t nc, float *dst);

/*
 * c[rows, n1-n0] (+)= a[rows, kc] . op(B)[pc:pc+kc, n0:n1] for few rows: strips of B widened into
 * `scratch` (at least 64 * kc floats) and read by kernel->dot (transposed B) or kernel->rows.
 */
void gemm_half_few_rows(const gemm_kernel *kernel, const gemm_shape *s, int64_t rows, const float *a, int64_t lda,
                        const uint16_t *b, int64_t pc, int64_t kc, int64_t n0, int64_t n1, float *c, int64_t ldc,
                        int add, float *scratch);

#endif
