/*
 * B packed once: a constant operand (the weights while decoding) packed into the driver's panel layout a single
 * time, then multiplied by many small A without repacking.
 *
 * Is: gemm_pack, gemm_run_packed and their job splits (whole NR panels of N per thread).
 * Is not: the blocking, the micro-kernel calls or the general driver (gemm.c, shared through gemm-driver.h).
 */
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <stdint.h>
#include <sys/mman.h>
#endif

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
  size_t mapped_bytes; /* data is a huge-page mapping of this many bytes; 0: from gemm_alloc_floats */
};

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

/*
 * A packed copy of 2 MiB or more gets its own 2 MiB-aligned mapping, advised to use transparent huge pages
 * (Linux, where THP is often 'madvise' only): a decode step streams every weight from DRAM, and a matrix past
 * the TLB's reach (Zen3: 2048 entries, 8 MiB of 4 KiB pages) missed it on every page. Measured on the 25M
 * model's 16 MiB lm_head at 64 rows (Zen3, 2 threads, best of four alternating runs): 3.21 ms with huge pages
 * against 3.81 ms; its 1-3 MiB projections within noise. Elsewhere, or when mapping fails: gemm_alloc_floats.
 */
static float *alloc_packed_floats(gemm_packed *packed, int64_t count) {
  size_t bytes = (size_t)count * sizeof(float);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= HUGE_PAGE_BYTES) {
    size_t rounded = (bytes + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
    char *raw = mmap(NULL, rounded + HUGE_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw != MAP_FAILED) {
      char *aligned = (char *)(((uintptr_t)raw + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1));
      if (aligned > raw) munmap(raw, (size_t)(aligned - raw));
      size_t tail = (size_t)(raw + rounded + HUGE_PAGE_BYTES - (aligned + rounded));
      if (tail > 0) munmap(aligned + rounded, tail);
      madvise(aligned, rounded, MADV_HUGEPAGE);
      packed->mapped_bytes = rounded;
      return (float *)aligned;
    }
  }
#endif
  return gemm_alloc_floats(count > 0 ? count : 1);
}

static void free_packed_floats(gemm_packed *packed) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (packed->mapped_bytes > 0) {
    munmap(packed->data, packed->mapped_bytes);
    return;
  }
#endif
  free(packed->data);
}

typedef struct {
  const gemm_context *ctx;
  const float *b;
  gemm_packed *packed;
  int transpose_b;
  int threads_used;
} pack_job;

/* Each thread packs whole NR panels of N at every depth: the copy is the same whatever the split. */
static void run_pack_job(void *raw, int thread_index) {
  pack_job *j = raw;
  if (thread_index >= j->threads_used) return;
  const gemm_context *ctx = j->ctx;
  gemm_packed *packed = j->packed;
  int64_t n0, n1;
  gemm_piece(packed->N, ctx->kernel->nr, thread_index, j->threads_used, &n0, &n1);
  if (n0 >= n1) return;
  gemm_shape shape = {1, 0, packed->K, packed->N, 0, j->transpose_b, 0, 0, 0, 0};
  for (int64_t pc = 0; pc < packed->K; pc += ctx->kc) {
    int64_t kc = packed->K - pc < ctx->kc ? packed->K - pc : ctx->kc;
    gemm_pack_b_block(ctx->kernel, &shape, j->b, pc, kc, n0, n1 - n0, packed->data + pc * packed->n_padded + n0 * kc);
  }
}

/* Below this many floats of B a second thread's wake-up costs more than its share of the copy saves. */
#define PACK_PARALLEL_MIN_FLOATS 65536.0

/*
 * On the pool's threads: a generation packs every weight once (about a 25M model's 100 MB at its first decode
 * step), which on one thread took ~5% of a 32-token rollout while the other core waited.
 */
gemm_packed *gemm_pack(const gemm_context *ctx, const float *b, int64_t K, int64_t N, int transpose_b) {
  const int nr = ctx->kernel->nr;
  gemm_packed *packed = calloc(1, sizeof *packed);
  if (!packed) return NULL;
  packed->kernel = ctx->kernel;
  packed->K = K;
  packed->N = N;
  packed->n_padded = (N + nr - 1) / nr * nr;
  packed->data = alloc_packed_floats(packed, K * packed->n_padded);
  if (!packed->data) {
    free(packed);
    return NULL;
  }
  int64_t panels = packed->n_padded / nr;
  int threads = (double)K * (double)N < PACK_PARALLEL_MIN_FLOATS ? 1 : ctx->threads;
  pack_job j = {ctx, b, packed, transpose_b, threads > panels ? (int)panels : threads};
  if (j.threads_used <= 1)
    run_pack_job(&j, 0);
  else
    thread_pool_run(ctx->pool, run_pack_job, &j);
  return packed;
}

void gemm_packed_destroy(gemm_packed *packed) {
  if (!packed) return;
  free_packed_floats(packed);
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

/* Each thread takes whole NR panels of N and every row of A (in blocks of at most MC rows). */
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

/*
 * A prefill's rows (up to the sampler's 4096 tokens a forward) take the packed copy too, in A blocks of at most
 * MC rows (gemm_compute_block): the general driver would pack every weight again for each prompt batch, and a
 * generation packs each weight once anyway for its decode steps.
 */
#define PACKED_MAX_ROWS 4096

int gemm_packed_max_rows(const gemm_context *ctx) {
  (void)ctx;
  return PACKED_MAX_ROWS;
}

int gemm_run_packed(gemm_context *ctx, const float *a, const gemm_packed *b, float *out, int64_t M, int accumulate) {
  if (M <= 0 || b->N <= 0) return 0;
  if (M > PACKED_MAX_ROWS || b->kernel != ctx->kernel) return -1;
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
