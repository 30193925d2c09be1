/*
 * B packed once: a constant operand (the weights while decoding) packed into the driver's panel layout a single
 * time, then multiplied by many small A without repacking.
 *
 * Is: gemm_pack, gemm_run_packed and their job split (whole NR panels of N per thread).
 * Is not: the blocking, the micro-kernel calls or the general driver (gemm.c, shared through gemm-driver.h).
 */
#include <stdlib.h>
#include <string.h>

#include "gemm-driver.h"
#include "gemm-pack.h"
#include "thread-pool.h"

/*
 * Layout: depth blocks of KC rows one after another; inside the block that starts at depth pc, the NR-column
 * panels of all of N (N rounded up to NR, zero-padded), each kc x NR, k-major, exactly as pack_b writes them.
 * So the panel of column j (a multiple of NR) in block pc starts at pc * n_padded + j * kc.
 */
struct gemm_packed {
  const gemm_kernel *kernel; /* the layout is this kernel's NR */
  int64_t K, N, n_padded;
  float *data;
};

gemm_packed *gemm_pack(const gemm_context *ctx, const float *b, int64_t K, int64_t N, int transpose_b) {
  const int nr = ctx->kernel->nr;
  gemm_packed *packed = calloc(1, sizeof *packed);
  if (!packed) return NULL;
  packed->kernel = ctx->kernel;
  packed->K = K;
  packed->N = N;
  packed->n_padded = (N + nr - 1) / nr * nr;
  packed->data = gemm_alloc_floats(K * packed->n_padded > 0 ? K * packed->n_padded : 1);
  if (!packed->data) {
    free(packed);
    return NULL;
  }
  gemm_shape shape = {1, 0, K, N, 0, transpose_b, 0, 0, 0, 0};
  for (int64_t pc = 0; pc < K; pc += ctx->kc) {
    int64_t kc = K - pc < ctx->kc ? K - pc : ctx->kc;
    gemm_pack_b_block(ctx->kernel, &shape, b, pc, kc, 0, N, packed->data + pc * packed->n_padded);
  }
  return packed;
}

void gemm_packed_destroy(gemm_packed *packed) {
  if (!packed) return;
  free(packed->data);
  free(packed);
}

void gemm_packed_shape(const gemm_packed *packed, int64_t *K, int64_t *N) {
  *K = packed->K;
  *N = packed->N;
}

typedef struct {
  const gemm_context *ctx;
  const float *a;
  const gemm_packed *b;
  float *out;
  gemm_shape shape;
  int threads_used;
} packed_job;

/* Each thread takes whole NR panels of N and every row of A (M is at most one MC block here). */
static void run_packed_job(void *raw, int thread_index) {
  packed_job *j = raw;
  if (thread_index >= j->threads_used) return;
  const gemm_context *ctx = j->ctx;
  const gemm_shape *s = &j->shape;
  int64_t n0, n1;
  gemm_piece(s->N, ctx->kernel->nr, thread_index, j->threads_used, &n0, &n1);
  operands op = {j->a, NULL, j->out, s};
  for (int64_t jc = n0; jc < n1; jc += ctx->nc) {
    int64_t nc = n1 - jc < ctx->nc ? n1 - jc : ctx->nc;
    for (int64_t pc = 0; pc < s->K; pc += ctx->kc) {
      int64_t kc = s->K - pc < ctx->kc ? s->K - pc : ctx->kc;
      /* The block after this one in this loop order: deeper in K, else the next columns from depth 0. */
      int64_t next_pc = pc + kc < s->K ? pc + kc : 0, next_jc = pc + kc < s->K ? jc : jc + nc;
      int64_t next_kc = s->K - next_pc < ctx->kc ? s->K - next_pc : ctx->kc;
      const float *following =
          next_jc < n1 && next_kc == kc ? j->b->data + next_pc * j->b->n_padded + next_jc * next_kc : NULL;
      const float *block = j->b->data + pc * j->b->n_padded + jc * kc;
      gemm_compute_block(ctx, &ctx->spaces[thread_index], &op, block, kc, ctx->kernel->nr, 0, s->M, jc, nc, pc, kc,
                         following);
    }
  }
}

int gemm_packed_max_rows(const gemm_context *ctx) { return (int)ctx->mc; }

int gemm_run_packed(gemm_context *ctx, const float *a, const gemm_packed *b, float *out, int64_t M, int accumulate) {
  if (M <= 0 || b->N <= 0) return 0;
  if (M > ctx->mc || b->kernel != ctx->kernel) return -1;
  if (b->K == 0) {
    if (!accumulate) memset(out, 0, (size_t)(M * b->N) * sizeof(float));
    return 0;
  }
  double flops = 2.0 * (double)M * (double)b->N * (double)b->K;
  int64_t panels = (b->N + ctx->kernel->nr - 1) / ctx->kernel->nr;
  int threads = flops < PARALLEL_MIN_FLOPS ? 1 : ctx->threads;
  if (threads > panels) threads = (int)panels;
  packed_job j = {ctx, a, b, out, {1, M, b->K, b->N, 0, 0, 0, 0, accumulate, 0}, threads};
  if (threads == 1)
    run_packed_job(&j, 0);
  else
    thread_pool_run(ctx->pool, run_packed_job, &j);
  return 0;
}
