/*
 * Single-precision GEMM for WebAssembly SIMD128: out[b] (+)= op(A[b]) . op(B[b]).
 *
 * Is: a packed, cache-blocked GEMM (Goto/BLIS loop order) with a register-blocked MR x NR
 * micro-kernel of f32x4 accumulators; unpacked paths for a single row (M = 1, decoding); and the
 * thread partition: every thread of a call runs sgemm_thread() over the same shared memory,
 * claiming work units that write disjoint parts of out.
 * Is not: a memory allocator or a thread pool. The TypeScript loader (wasm-backend.ts) owns the
 * memory layout and the workers; it writes a Params block and hands each thread its scratch area.
 *
 * Numerics: plain IEEE mul then add (SIMD128 has no FMA); built WITHOUT -ffast-math so that NaN and
 * Inf propagate exactly as in the js spec. Each output element is summed by one thread in the same
 * order whatever the thread count, so results are bitwise identical for 1, 2, ... threads.
 *
 * Legend: M, N, K = matrix sizes; MR x NR = micro-tile; MC, KC, NC = cache blocks; mr, nr, mc, kc,
 * nc = the (possibly partial) sizes of the current tile/block.
 */
#include <stdint.h>
#include <wasm_simd128.h>

/* Tile and block sizes (overridable with -D for tuning). 4 x 8 is the largest micro-tile whose
 * accumulators, B vectors and broadcasts fit the 15 xmm registers V8 allocates on x64 without
 * spilling (6 x 8, the native choice, spills 8 vectors per k step under V8 and runs slower). */
#ifndef MR
#define MR 4
#endif
#ifndef NR
#define NR 8
#endif
#ifndef KC
#define KC 256
#endif
#ifndef MC
#define MC 120
#endif
#ifndef NC
#define NC 2048
#endif
#define NV (NR / 4) /* f32x4 vectors per micro-tile row */
#if MR % 4 != 0 || NR % 4 != 0
#error "MR and NR must be multiples of 4 (packing and the micro-kernel work in f32x4 groups)"
#endif

/* Layout shared with wasm-backend.ts (int32 words, in this order). */
typedef struct {
  const float *a;
  const float *b;
  float *c;
  int32_t batch, M, K, N;
  int32_t transposeA, transposeB;
  int32_t aBatchStride, bBatchStride;
  int32_t accumulate;
  uint8_t *scratch;               /* first thread's scratch area */
  int32_t scratchBytesPerThread;  /* must be >= sgemm_scratch_bytes() */
  int32_t nextUnit;               /* work-unit counter, 0 at the start of a call (atomic) */
} Params;

/* Strided view of one operand: element (row, col) is at data[row * rowStride + col * colStride]. */
typedef struct {
  const float *data;
  int32_t rowStride, colStride;
} View;

__attribute__((export_name("sgemm_scratch_bytes"))) int32_t sgemm_scratch_bytes(void) {
  return (int32_t)sizeof(float) * (MC * KC + KC * NC + MR * NR) + 64;
}

/* Writes four rows of n contiguous values transposed: out[k * stride + r] = row r [k], r < 4.
 * 4 x 4 blocks go through shuffles (pure bit moves, so NaN payloads and -0 survive). */
static void transpose4(const float *r0, const float *r1, const float *r2, const float *r3, int n,
                       float *restrict out, int stride) {
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    v128_t v0 = wasm_v128_load(r0 + k), v1 = wasm_v128_load(r1 + k);
    v128_t v2 = wasm_v128_load(r2 + k), v3 = wasm_v128_load(r3 + k);
    v128_t t0 = wasm_i32x4_shuffle(v0, v1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(v0, v1, 2, 6, 3, 7);
    v128_t t2 = wasm_i32x4_shuffle(v2, v3, 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(v2, v3, 2, 6, 3, 7);
    wasm_v128_store(out + (k + 0) * stride, wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5));
    wasm_v128_store(out + (k + 1) * stride, wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7));
    wasm_v128_store(out + (k + 2) * stride, wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5));
    wasm_v128_store(out + (k + 3) * stride, wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7));
  }
  for (; k < n; k++) {
    out[k * stride + 0] = r0[k], out[k * stride + 1] = r1[k];
    out[k * stride + 2] = r2[k], out[k * stride + 3] = r3[k];
  }
}

/* Packs a full panel of `width` (a multiple of 4) lines into k-major order, out[k * width + w] =
 * line w [k]. Line w starts at base + w * lineStride; along a line, k steps by kStride. */
static void packPanel(const float *base, int lineStride, int kStride, int kc, int width,
                      float *restrict out) {
  if (kStride == 1) {
    for (int w = 0; w < width; w += 4) {
      const float *line = base + w * lineStride;
      transpose4(line, line + lineStride, line + 2 * lineStride, line + 3 * lineStride, kc, out + w,
                 width);
    }
  } else if (lineStride == 1) {
    for (int k = 0; k < kc; k++)
      for (int w = 0; w < width; w += 4)
        wasm_v128_store(out + k * width + w, wasm_v128_load(base + k * kStride + w));
  } else {
    for (int k = 0; k < kc; k++)
      for (int w = 0; w < width; w++) out[k * width + w] = base[k * kStride + w * lineStride];
  }
}

/* The partial last panel (count < width lines) of packPanel, zero-padded: the padding products
 * land only in tile rows/columns that are never written back. */
static void packPartialPanel(const float *base, int lineStride, int kStride, int kc, int count,
                             int width, float *restrict out) {
  for (int k = 0; k < kc; k++)
    for (int w = 0; w < width; w++)
      out[k * width + w] = w < count ? base[k * kStride + w * lineStride] : 0.0f;
}

/* Packs rows [i0, i0+mc) x cols [p0, p0+kc) of A into MR-row panels: for each k, MR values. */
static void packA(View A, int i0, int mc, int p0, int kc, float *restrict out) {
  for (int r = 0; r < mc; r += MR, out += MR * kc) {
    const float *base = A.data + (i0 + r) * A.rowStride + p0 * A.colStride;
    if (mc - r >= MR) packPanel(base, A.rowStride, A.colStride, kc, MR, out);
    else packPartialPanel(base, A.rowStride, A.colStride, kc, mc - r, MR, out);
  }
}

/* Packs rows [p0, p0+kc) x cols [j0, j0+nc) of B into NR-column panels: for each k, NR values. */
static void packB(View B, int p0, int kc, int j0, int nc, float *restrict out) {
  for (int s = 0; s < nc; s += NR, out += NR * kc) {
    const float *base = B.data + p0 * B.rowStride + (j0 + s) * B.colStride;
    if (nc - s >= NR) packPanel(base, B.colStride, B.rowStride, kc, NR, out);
    else packPartialPanel(base, B.colStride, B.rowStride, kc, nc - s, NR, out);
  }
}

/* The micro-kernel: an MR x NR tile of C (+)= packed A panel . packed B panel over kc steps.
 * overwrite: store instead of adding (first K block of a non-accumulating product).
 * Partial tiles (mr < MR or nr < NR) go through `tile` so the arithmetic is the same as full ones. */
static void microKernel(int kc, const float *restrict a, const float *restrict b, float *restrict c,
                        int ldc, int mr, int nr, int overwrite, float *restrict tile) {
  v128_t acc[MR][NV];
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; i++)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) acc[i][v] = wasm_f32x4_splat(0.0f);
  for (int k = 0; k < kc; k++) {
    v128_t bv[NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) bv[v] = wasm_v128_load(b + 4 * v);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; i++) {
      v128_t ai = wasm_v128_load32_splat(a + i);
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; v++) acc[i][v] = wasm_f32x4_add(acc[i][v], wasm_f32x4_mul(ai, bv[v]));
    }
    a += MR;
    b += NR;
  }
  if (mr == MR && nr == NR) {
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; i++) {
      float *row = c + i * ldc;
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; v++) {
        v128_t sum = overwrite ? acc[i][v] : wasm_f32x4_add(wasm_v128_load(row + 4 * v), acc[i][v]);
        wasm_v128_store(row + 4 * v, sum);
      }
    }
    return;
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; i++)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; v++) wasm_v128_store(tile + i * NR + 4 * v, acc[i][v]);
  for (int i = 0; i < mr; i++)
    for (int j = 0; j < nr; j++)
      c[i * ldc + j] = overwrite ? tile[i * NR + j] : c[i * ldc + j] + tile[i * NR + j];
}

/* One product's sub-block: rows [m0, m1) x cols [n0, n1) of C (row-major, leading dimension N). */
static void gemmBlock(View A, View B, float *C, int N, int K, int m0, int m1, int n0, int n1,
                      int accumulate, uint8_t *scratch) {
  float *packedA = (float *)(((uintptr_t)scratch + 15) & ~(uintptr_t)15);
  float *packedB = packedA + MC * KC;
  float *tile = packedB + KC * NC;
  for (int jc = n0; jc < n1; jc += NC) {
    int nc = n1 - jc < NC ? n1 - jc : NC;
    for (int pc = 0; pc < K; pc += KC) {
      int kc = K - pc < KC ? K - pc : KC;
      int overwrite = pc == 0 && !accumulate;
      packB(B, pc, kc, jc, nc, packedB);
      for (int ic = m0; ic < m1; ic += MC) {
        int mc = m1 - ic < MC ? m1 - ic : MC;
        packA(A, ic, mc, pc, kc, packedA);
        for (int jr = 0; jr < nc; jr += NR) {
          int nr = nc - jr < NR ? nc - jr : NR;
          for (int ir = 0; ir < mc; ir += MR) {
            int mr = mc - ir < MR ? mc - ir : MR;
            microKernel(kc, packedA + ir * kc, packedB + jr * kc, C + (ic + ir) * N + jc + jr, N,
                        mr, nr, overwrite, tile);
          }
        }
      }
    }
  }
}

/* Stores or adds (accumulate) `value` into *c. */
static inline void put(float *c, float value, int accumulate) { *c = accumulate ? *c + value : value; }

/* M = 1 with B stored [K, N]: c[j] (+)= sum_k a[k] B[k, j] for j in [n0, n1), streaming B once.
 * No packing: each B element is used once, so packing would cost as much as the product. 32
 * columns at a time keep 8 independent accumulator chains. */
static void gemvRows(const float *a, const float *B, int N, int K, float *c, int n0, int n1,
                     int accumulate) {
  int j = n0;
  for (; j + 32 <= n1; j += 32) {
    v128_t acc[8];
#pragma clang loop unroll(full)
    for (int v = 0; v < 8; v++) acc[v] = wasm_f32x4_splat(0.0f);
    for (int k = 0; k < K; k++) {
      v128_t ak = wasm_v128_load32_splat(a + k);
      const float *row = B + k * N + j;
#pragma clang loop unroll(full)
      for (int v = 0; v < 8; v++) acc[v] = wasm_f32x4_add(acc[v], wasm_f32x4_mul(ak, wasm_v128_load(row + 4 * v)));
    }
#pragma clang loop unroll(full)
    for (int v = 0; v < 8; v++) {
      v128_t sum = accumulate ? wasm_f32x4_add(wasm_v128_load(c + j + 4 * v), acc[v]) : acc[v];
      wasm_v128_store(c + j + 4 * v, sum);
    }
  }
  for (; j < n1; j++) {
    float sum = 0.0f;
    for (int k = 0; k < K; k++) sum += a[k] * B[k * N + j];
    put(c + j, sum, accumulate);
  }
}

/* Sum of the four lanes of v, in a fixed order. */
static inline float laneSum(v128_t v) {
  return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/* M = 1 with B stored transposed [N, K] (x . W^T, the linear-layer case): c[j] (+)= dot(a, B[j, :]),
 * 8 rows of B at a time, both operands contiguous along k; no packing. */
static void gemvDots(const float *a, const float *B, int K, float *c, int n0, int n1,
                     int accumulate) {
  int K4 = K & ~3;
  int j = n0;
  for (; j + 8 <= n1; j += 8) {
    const float *rows = B + j * K;
    v128_t acc[8];
#pragma clang loop unroll(full)
    for (int r = 0; r < 8; r++) acc[r] = wasm_f32x4_splat(0.0f);
    for (int k = 0; k < K4; k += 4) {
      v128_t av = wasm_v128_load(a + k);
#pragma clang loop unroll(full)
      for (int r = 0; r < 8; r++) acc[r] = wasm_f32x4_add(acc[r], wasm_f32x4_mul(av, wasm_v128_load(rows + r * K + k)));
    }
    for (int r = 0; r < 8; r++) {
      float sum = laneSum(acc[r]);
      for (int k = K4; k < K; k++) sum += a[k] * rows[r * K + k];
      put(c + j + r, sum, accumulate);
    }
  }
  for (; j < n1; j++) {
    const float *row = B + j * K;
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int k = 0; k < K4; k += 4) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load(a + k), wasm_v128_load(row + k)));
    float sum = laneSum(acc);
    for (int k = K4; k < K; k++) sum += a[k] * row[k];
    put(c + j, sum, accumulate);
  }
}

/* Splits [0, units) into `parts` near-equal contiguous ranges; returns range `index` as [*lo, *hi). */
static void splitRange(int units, int parts, int index, int *lo, int *hi) {
  int base = units / parts, extra = units % parts;
  *lo = index * base + (index < extra ? index : extra);
  *hi = *lo + base + (index < extra ? 1 : 0);
}

/* Runs thread `index` of `count`'s share of the product described by `p`. The work is cut into
 * units (batch x chunk of M or N rows/columns, whichever has more micro-tiles) and threads claim
 * units from the shared counter p->nextUnit until none are left, so a thread slowed by another
 * process on its core does less of the work instead of holding up the call. About 4 units per
 * thread (at least 2); M chunks are kept >= MC rows beyond that because each packs all of B again.
 * Each output element is written by one unit, summed in the same order whatever the partition.
 * K = 0 is handled by the caller. */
__attribute__((export_name("sgemm_thread"))) void sgemm_thread(Params *p, int index, int count) {
  int M = p->M, K = p->K, N = p->N, batch = p->batch;
  View A = {0, p->transposeA ? 1 : K, p->transposeA ? M : 1};
  View B = {0, p->transposeB ? 1 : N, p->transposeB ? K : 1};
  uint8_t *scratch = p->scratch + (intptr_t)index * p->scratchBytesPerThread;
  int mTiles = (M + MR - 1) / MR, nTiles = (N + NR - 1) / NR;
  int splitM = mTiles >= nTiles;
  int parts = 1;
  if (count > 1) {
    int wanted = (4 * count + batch - 1) / batch;
    int needed = (2 * count + batch - 1) / batch; /* at least two units per thread, for balance */
    int atLeastMC = M / MC > needed ? M / MC : needed;
    parts = splitM ? (wanted < atLeastMC ? wanted : atLeastMC) : wanted;
    int tiles = splitM ? mTiles : nTiles;
    parts = parts < tiles ? parts : tiles;
  }
  int units = batch * parts;
  for (;;) {
    int unit = __atomic_fetch_add(&p->nextUnit, 1, __ATOMIC_RELAXED);
    if (unit >= units) break;
    int bi = unit / parts, lo, hi, m0 = 0, m1 = M, n0 = 0, n1 = N;
    splitRange(splitM ? mTiles : nTiles, parts, unit % parts, &lo, &hi);
    if (splitM) m0 = lo * MR, m1 = hi * MR < M ? hi * MR : M;
    else n0 = lo * NR, n1 = hi * NR < N ? hi * NR : N;
    if (m0 >= m1 || n0 >= n1) continue;
    A.data = p->a + (intptr_t)bi * p->aBatchStride;
    B.data = p->b + (intptr_t)bi * p->bBatchStride;
    float *C = p->c + (intptr_t)bi * M * N;
    /* A single row (decoding one sequence): A is contiguous along k whether transposed or not. */
    if (M == 1 && B.colStride == 1) gemvRows(A.data, B.data, N, K, C, n0, n1, p->accumulate);
    else if (M == 1) gemvDots(A.data, B.data, K, C, n0, n1, p->accumulate);
    else gemmBlock(A, B, C, N, K, m0, m1, n0, n1, p->accumulate, scratch);
  }
}
