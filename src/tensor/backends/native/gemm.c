/*
 * Packed, cache-blocked SGEMM driver (Goto/BLIS loop order) with fork-join threading.
 *
 * Is: blocking (NC/KC/MC, per kernel: gemm_kernel), edge tiles, batching with broadcast strides, accumulate,
 * and splitting the work over threads.
 * Is not: the arithmetic inner loop (kernels-*.c), the packing of op(A) and op(B) into micro-panels, where
 * transposes are absorbed (gemm-pack.c), or the JavaScript binding (addon.c).
 *
 * Loop order per task: jc (NC cols of B, in L3) -> pc (KC depth) -> pack B -> ic (MC rows, A block in L2)
 * -> pack A -> jr (NR: one B micro-panel stays in L1) -> ir (MR) -> micro-kernel. Each row tile's kernel also
 * prefetches a share of the next B panel into L2 (PREFETCH_PHASES), and a short last row tile takes the kernel's
 * short_kernel.
 * Threads: whole products when the batch divides evenly; otherwise each product is split, over row chunks
 * handed out dynamically with each B block packed by all threads together (shared mode), or over N when M
 * is too short for that or N >= M.
 * Few rows (M <= 12, or <= 32 with a transposed B, as in decoding) skip packing (gemm_block_few_rows).
 * A B operand that stays constant over many products (weights while decoding) can be packed once
 * (gemm_pack) and then multiplied without repacking (gemm_run_packed): gemm-packed.c.
 * A bfloat16 B (gemm_shape.b_bfloat16, a frozen LoRA base) is read only by the B packer and the few-rows
 * path, which hand it to gemm-half.c to widen; everything else is the float32 path unchanged.
 */
#include "gemm.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm-driver.h"
#include "gemm-half.h"
#include "gemm-pack.h"
#include "thread-pool.h"

/* Up to this many rows, a transposed B is read by dot products instead of being packed. */
#define DOT_MAX_M 32
/* Up to this many rows, a plain B is streamed row by row instead of being packed. */
#define ROWS_MAX_M 12
/*
 * Up to this many floats (32 KiB: the L1 of the CPUs here), a plain B whose columns fill whole NR panels is
 * read in place by the micro-kernel (ldb = N) instead of packed: in the attention's 64 x 64 x 64 products
 * copying B took a tenth of the time, and a B this small stays in L1, so its strided rows cost nothing.
 */
#define IN_PLACE_B_MAX_FLOATS 8192
/* Rows per thread from which splitting M with a shared packed B can beat splitting N (see gemm_run). */
#define SHARED_MIN_ROWS 56
/* The fewest rows of C per work item in shared mode, in micro-tiles: each B panel is reused this often. */
#define SHARED_MIN_CHUNK_TILES 4



float *gemm_alloc_floats(int64_t count) {
  size_t bytes = ((size_t)count * sizeof(float) + 63) & ~(size_t)63;
  return aligned_alloc(64, bytes);
}

gemm_context *gemm_context_create(const gemm_kernel *kernel, int threads) {
  if (threads < 1) threads = 1;
  gemm_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->kernel = kernel;
  ctx->threads = threads;
  ctx->kc = kernel->kc;
  ctx->dot_max_m = DOT_MAX_M;
  ctx->rows_max_m = ROWS_MAX_M;
  ctx->mc = kernel->mc;
  ctx->nc = kernel->nc;
  ctx->spaces = calloc((size_t)threads, sizeof(workspace));
  ctx->pool = thread_pool_create(threads);
  if (!ctx->spaces || !ctx->pool) {
    gemm_context_destroy(ctx);
    return NULL;
  }
  ctx->shared_b[0] = gemm_alloc_floats(ctx->kc * ctx->nc);
  ctx->shared_b[1] = gemm_alloc_floats(ctx->kc * ctx->nc);
  if (!ctx->shared_b[0] || !ctx->shared_b[1]) {
    gemm_context_destroy(ctx);
    return NULL;
  }
  for (int t = 0; t < threads; t++) {
    ctx->spaces[t].pack_a = gemm_alloc_floats(ctx->mc * ctx->kc);
    ctx->spaces[t].pack_b = gemm_alloc_floats(ctx->kc * ctx->nc);
    if (!ctx->spaces[t].pack_a || !ctx->spaces[t].pack_b) {
      gemm_context_destroy(ctx);
      return NULL;
    }
  }
  return ctx;
}

void gemm_context_destroy(gemm_context *ctx) {
  if (!ctx) return;
  thread_pool_destroy(ctx->pool);
  if (ctx->spaces)
    for (int t = 0; t < ctx->threads; t++) {
      free(ctx->spaces[t].pack_a);
      free(ctx->spaces[t].pack_b);
    }
  free(ctx->spaces);
  free(ctx->shared_b[0]);
  free(ctx->shared_b[1]);
  free(ctx);
}

int gemm_context_threads(const gemm_context *ctx) { return ctx->threads; }
const gemm_kernel *gemm_context_kernel(const gemm_context *ctx) { return ctx->kernel; }
struct thread_pool *gemm_context_pool(gemm_context *ctx) { return ctx->pool; }


/* Edge tile: run a kernel (`micro`: the full one or the short one) into a scratch tile, then write (or add)
 * only the valid part. */
static void edge_tile(const gemm_kernel *kernel, micro_kernel_fn micro, int64_t kc, const float *pa,
                      const float *pb, int64_t ldb, float *c, int64_t ldc, int64_t rows, int64_t cols, int add,
                      int64_t prefetch_offset) {
  float tile[16 * 64] __attribute__((aligned(64)));
  micro(kc, pa, pb, ldb, tile, kernel->nr, 0, prefetch_offset);
  for (int64_t i = 0; i < rows; i++) {
    float *ci = c + i * ldc;
    const float *ti = tile + i * kernel->nr;
    if (add)
      for (int64_t j = 0; j < cols; j++) ci[j] += ti[j];
    else
      for (int64_t j = 0; j < cols; j++) ci[j] = ti[j];
  }
}

/*
 * Few rows (decoding): no packing of B, which would cost as much as the product. A transposed B is read by
 * dot products of rows (dot_kernel_fn), a plain B by streaming its rows (row_kernel_fn).
 */
static void gemm_block_few_rows(const gemm_context *ctx, workspace *space, const operands *op, int64_t m0,
                                int64_t m1, int64_t n0, int64_t n1) {
  const gemm_shape *s = op->shape;
  const int64_t K = s->K, N = s->N, rows = m1 - m0;
  for (int64_t pc = 0; pc < K; pc += ctx->kc) {
    int64_t kc = K - pc < ctx->kc ? K - pc : ctx->kc;
    const float *a = op->a + m0 * K + pc;
    int64_t lda = K;
    if (s->transpose_a) { /* stored [K, M]: copy the few rows of op(A) out, row-major */
      float *dst = space->pack_a;
      for (int64_t k = 0; k < kc; k++)
        for (int64_t r = 0; r < rows; r++) dst[r * kc + k] = op->a[(pc + k) * s->M + m0 + r];
      a = dst;
      lda = kc;
    }
    float *c = op->c + m0 * N + n0;
    int add = s->accumulate || pc > 0;
    if (s->b_bfloat16)
      gemm_half_few_rows(ctx->kernel, s, rows, a, lda, (const uint16_t *)op->b, pc, kc, n0, n1, c, N, add,
                         space->pack_b);
    else if (s->transpose_b)
      ctx->kernel->dot(rows, n1 - n0, kc, a, lda, op->b + n0 * K + pc, K, c, N, add);
    else
      ctx->kernel->rows(rows, n1 - n0, kc, a, lda, op->b + pc * N + n0, N, c, N, add);
  }
}

/*
 * Each kernel call prefetches one line per 256 bytes of B it reads (gemm.h), at a fixed offset from B: the
 * driver points row tile t of a panel at line t mod PREFETCH_PHASES of each 256 bytes of the next panel, so
 * the first PREFETCH_PHASES tiles together ask for all of it, one line every few dozen cycles. A panel that
 * comes from DRAM (a weight packed once and cycled through with the others while decoding: ~100 MB a step)
 * is then in L2 by the time its first tile runs. Without it that tile waited on DRAM for each 64-byte row of
 * B: on the Zen3 at 1 thread, the cold decode products (bench matmul-native --cold) ran at 74-76% of the FMA
 * peak (per-call p10), 85-87% with it, against 88-93% with B in L3. Bursts of prefetches issued by the driver
 * before each tile did as well within 1%, but stalled on the full miss queue (perf: 6% of the time in the
 * prefetch loop). Into L2, not L1: L1 holds the current panel.
 */
#define PREFETCH_PHASES 4

/* Declared, and documented, in gemm-driver.h. */
void gemm_compute_block(const gemm_context *ctx, workspace *space, const operands *op, const float *b,
                        int64_t column_stride, int64_t ldb, int64_t m0, int64_t m1, int64_t jc, int64_t nc,
                        int64_t pc, int64_t kc, const float *following) {
  const gemm_kernel *kernel = ctx->kernel;
  const int mr = kernel->mr, nr = kernel->nr;
  const int64_t N = op->shape->N;
  const int add = op->shape->accumulate || pc > 0;
  /* Rows split into equal A blocks (whole tiles, at most MC each): a short last block would stream every
   * B panel from L3 for a few rows (M = 512 with MC = 168 left 8). */
  const int64_t blocks = (m1 - m0 + ctx->mc - 1) / ctx->mc;
  const int64_t block_rows = ((m1 - m0 + blocks - 1) / blocks + mr - 1) / mr * mr;
  for (int64_t ic = m0; ic < m1; ic += block_rows) {
    int64_t mc = m1 - ic < block_rows ? m1 - ic : block_rows;
    gemm_pack_a_block(kernel, op->shape, op->a, ic, mc, pc, kc, space->pack_a);
    for (int64_t jr = 0; jr < nc; jr += nr) {
      int64_t cols = nc - jr < nr ? nc - jr : nr;
      const float *pb = b + jr * column_stride;
      /* A packed panel of B is kc x NR floats in a row, and the next one follows it; B read in place is not. */
      const int packed = column_stride == kc && ldb == nr;
      const float *next = !packed ? NULL : jr + nr < nc ? pb + kc * nr : ic + mc >= m1 ? following : NULL;
      const int64_t next_offset = next ? (int64_t)((const char *)next - (const char *)pb) : 0;
      for (int64_t ir = 0; ir < mc; ir += mr) {
        const float *pa = space->pack_a + ir * kc;
        int64_t rows = mc - ir < mr ? mc - ir : mr;
        float *c = op->c + (ic + ir) * N + jc + jr;
        int64_t prefetch_offset = next ? next_offset + ir / mr % PREFETCH_PHASES * 64 : 0;
        micro_kernel_fn micro = rows <= kernel->short_rows ? kernel->short_kernel : kernel->kernel;
        if ((rows == mr || rows == kernel->short_rows) && cols == nr)
          micro(kc, pa, pb, ldb, c, N, add, prefetch_offset);
        else
          edge_tile(kernel, micro, kc, pa, pb, ldb, c, N, rows, cols, add, prefetch_offset);
      }
    }
  }
}

/* Computes rows [m0,m1) x cols [n0,n1) of one product with this thread's workspace. */
static void gemm_block(const gemm_context *ctx, workspace *space, const operands *op, int64_t m0, int64_t m1,
                       int64_t n0, int64_t n1) {
  const gemm_shape *s = op->shape;
  const gemm_kernel *kernel = ctx->kernel;
  const int64_t N = s->N;
  if (s->K == 0) { /* empty sum: out = 0, or unchanged when accumulating */
    if (!s->accumulate)
      for (int64_t i = m0; i < m1; i++) memset(op->c + i * N + n0, 0, (size_t)(n1 - n0) * sizeof(float));
    return;
  }
  if (m1 - m0 <= (s->transpose_b ? ctx->dot_max_m : ctx->rows_max_m)) {
    gemm_block_few_rows(ctx, space, op, m0, m1, n0, n1);
    return;
  }
  const int in_place = !s->transpose_b && !s->b_bfloat16 && (n1 - n0) % kernel->nr == 0 &&
                       s->K * N <= IN_PLACE_B_MAX_FLOATS;
  for (int64_t jc = n0; jc < n1; jc += ctx->nc) {
    int64_t nc = n1 - jc < ctx->nc ? n1 - jc : ctx->nc;
    for (int64_t pc = 0; pc < s->K; pc += ctx->kc) {
      int64_t kc = s->K - pc < ctx->kc ? s->K - pc : ctx->kc;
      if (in_place) {
        gemm_compute_block(ctx, space, op, op->b + pc * N + jc, 1, N, m0, m1, jc, nc, pc, kc, NULL);
        continue;
      }
      gemm_pack_b_block(kernel, op->shape, op->b, pc, kc, jc, nc, space->pack_b);
      gemm_compute_block(ctx, space, op, space->pack_b, kc, kernel->nr, m0, m1, jc, nc, pc, kc, NULL);
    }
  }
}

typedef struct {
  const gemm_context *ctx;
  const float *a, *b;
  float *out;
  const gemm_shape *shape;
  int64_t parts;      /* pieces each product is split into */
  int split_n;        /* 1: split over N (in NR units), 0: over M (in MR units) */
  int64_t tasks;      /* batch * parts */
  int threads_used;
  int shared;         /* 1: every thread takes a slice of M of every product and they pack B together */
  atomic_int arrived; /* barrier of the shared mode */
  atomic_int phase;
  atomic_long next_row[2]; /* shared mode: the first row not yet taken of the block read from shared_b[i] */
} job;

void gemm_piece(int64_t extent, int64_t unit, int64_t part, int64_t parts, int64_t *start, int64_t *end) {
  int64_t units = (extent + unit - 1) / unit;
  int64_t first = units * part / parts, last = units * (part + 1) / parts;
  *start = first * unit < extent ? first * unit : extent;
  *end = last * unit < extent ? last * unit : extent;
}

/* Spin barrier: the threads of one job run at the same time, so waits are short; yield if they are not. */
static void barrier_wait(job *j) {
  int phase = atomic_load(&j->phase);
  if (atomic_fetch_add(&j->arrived, 1) == j->threads_used - 1) {
    atomic_store(&j->arrived, 0);
    atomic_fetch_add(&j->phase, 1);
    return;
  }
  for (int spins = 0; atomic_load(&j->phase) == phase; spins++) {
    if (spins > 4000) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else __builtin_ia32_pause();
#endif
  }
}

/*
 * Takes the next rows of a shared-mode block from `next`: guided self-scheduling, a share of what is left
 * (between SHARED_MIN_CHUNK_TILES tiles and one MC block), so the first chunks are big (A packed once per
 * MC rows, each B panel reused across the chunk) and the last ones small (threads finish together).
 * Returns the count (0 when none are left) and the first row in *first.
 */
static int64_t take_rows(atomic_long *next, int64_t M, int64_t mr, int64_t mc, int threads, int64_t *first) {
  long start = atomic_load(next);
  for (;;) {
    if (start >= M) return 0;
    int64_t remaining = M - start;
    int64_t rows = (remaining / (2 * threads) + mr - 1) / mr * mr;
    if (rows < SHARED_MIN_CHUNK_TILES * mr) rows = SHARED_MIN_CHUNK_TILES * mr;
    if (rows > mc) rows = mc;
    if (rows > remaining) rows = remaining;
    if (atomic_compare_exchange_weak(next, &start, start + rows)) {
      *first = start;
      return rows;
    }
  }
}

/*
 * Shared mode: the threads pack each KC x NC block of B together (each a share of its panels) into one
 * buffer, then take row chunks of C (take_rows), so neither operand is packed twice and a thread slowed
 * by another process on its core simply takes fewer chunks. Blocks alternate between two buffers, so one
 * barrier per block suffices: a thread packs block n + 1 while others may still read block n, and the
 * barrier after packing n + 1 also means everyone finished block n - 1, whose buffer block n + 2 reuses.
 * `block` counts blocks across the products of a batch (it picks the buffer and the row counter).
 */
static void gemm_shared(job *j, int thread_index, const operands *op, int64_t *block) {
  const gemm_context *ctx = j->ctx;
  const gemm_shape *s = op->shape;
  const int nr = ctx->kernel->nr;
  for (int64_t jc = 0; jc < s->N; jc += ctx->nc) {
    int64_t nc = s->N - jc < ctx->nc ? s->N - jc : ctx->nc;
    int64_t p0, p1; /* this thread's share of the block's columns, whole panels */
    gemm_piece(nc, nr, thread_index, j->threads_used, &p0, &p1);
    for (int64_t pc = 0; pc < s->K; pc += ctx->kc, (*block)++) {
      int64_t kc = s->K - pc < ctx->kc ? s->K - pc : ctx->kc;
      float *packed_b = ctx->shared_b[*block & 1];
      if (p1 > p0) gemm_pack_b_block(ctx->kernel, s, op->b, pc, kc, jc + p0, p1 - p0, packed_b + p0 * kc);
      barrier_wait(j);
      /* Everyone has finished the previous block, so its counter is free for the next one. */
      if (thread_index == 0) atomic_store(&j->next_row[(*block + 1) & 1], 0);
      int64_t m0, rows;
      while ((rows = take_rows(&j->next_row[*block & 1], s->M, ctx->kernel->mr, ctx->mc, j->threads_used, &m0)) > 0)
        gemm_compute_block(ctx, &ctx->spaces[thread_index], op, packed_b, kc, nr, m0, m0 + rows, jc, nc, pc, kc,
                           NULL);
    }
  }
}

/* B of batch element `batch_index`: strides count elements, which are 2 bytes for a bfloat16 B. */
static const float *b_of(const float *b, const gemm_shape *s, int64_t batch_index) {
  if (s->b_bfloat16) return (const float *)((const uint16_t *)b + batch_index * s->b_batch_stride);
  return b + batch_index * s->b_batch_stride;
}

static void run_job(void *raw, int thread_index) {
  job *j = raw;
  if (thread_index >= j->threads_used) return;
  const gemm_shape *s = j->shape;
  if (j->shared) {
    int64_t block = 0;
    for (int64_t batch_index = 0; batch_index < s->batch; batch_index++) {
      operands op = {j->a + batch_index * s->a_batch_stride, b_of(j->b, s, batch_index),
                     j->out + batch_index * s->M * s->N, s};
      gemm_shared(j, thread_index, &op, &block);
    }
    return;
  }
  int64_t first = j->tasks * thread_index / j->threads_used;
  int64_t last = j->tasks * (thread_index + 1) / j->threads_used;
  for (int64_t task = first; task < last; task++) {
    int64_t batch_index = task / j->parts, part = task % j->parts;
    operands op = {j->a + batch_index * s->a_batch_stride, b_of(j->b, s, batch_index),
                   j->out + batch_index * s->M * s->N, s};
    int64_t m0 = 0, m1 = s->M, n0 = 0, n1 = s->N;
    if (j->split_n)
      gemm_piece(s->N, j->ctx->kernel->nr, part, j->parts, &n0, &n1);
    else
      gemm_piece(s->M, j->ctx->kernel->mr, part, j->parts, &m0, &m1);
    if (m1 > m0 && n1 > n0) gemm_block(j->ctx, &j->ctx->spaces[thread_index], &op, m0, m1, n0, n1);
  }
}

int gemm_run(gemm_context *ctx, const float *a, const float *b, float *out, const gemm_shape *s) {
  if (s->batch <= 0 || s->M <= 0 || s->N <= 0) return 0;
  double flops = 2.0 * (double)s->batch * (double)s->M * (double)s->N * (double)s->K;
  int threads = flops < PARALLEL_MIN_FLOPS ? 1 : ctx->threads;
  job j = {ctx, a, b, out, s, 1, 0, s->batch, threads, 0, 0, 0, {0, 0}};
  if (threads > 1 && s->batch % threads != 0) {
    /* Uneven batches: split each product. With enough rows for every thread and more rows than columns,
     * split M and share the packing of B; otherwise split N, each thread packing the A it needs (a copy of
     * M x K floats against M x K x N / threads multiply-adds) with no barrier at all. On the Zen3 the
     * N split won wherever N >= M (512 x 4096 x 512 and 1024^3: ~8% less CPU per product at 2 threads),
     * as the shared mode's one barrier per depth block and its last small row chunks cost more there. */
    if (s->K > 0 && s->M >= (int64_t)threads * SHARED_MIN_ROWS && s->M > s->N) {
      j.shared = 1;
    } else {
      j.parts = threads;
      j.split_n = 1;
      j.tasks = s->batch * threads;
    }
  }
  if (threads == 1)
    run_job(&j, 0);
  else
    thread_pool_run(ctx->pool, run_job, &j);
  return 0;
}
