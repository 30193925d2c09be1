/**
 * The WGSL compute shaders of the webgpu backend, as source strings built from a few parameters.
 *
 * Is: the batched matrix product (tiled, f32, any transposes, batch strides, accumulate) in three forms
 * (strided, vector and pipelined tiles) and several tile sizes, and the FMA-throughput shader the bench
 * measures the adapter's peak with.
 * Is not: dispatch, buffers or synchronisation (device-requests.mjs), or the Backend interface
 * (webgpu-backend.ts). Plain JavaScript because the device worker, which runs without a TypeScript
 * loader, imports it. The pipelined tiles' shader is its own file (pipelined-matmul.mjs).
 */
import { pipelinedMatmulShader } from './pipelined-matmul.mjs';

/**
 * Tile geometries of the matmul shader: a workgroup computes a tileM × tileN block of one product with
 * (tileM / threadM) × (tileN / threadN) invocations, each owning threadM × threadN outputs strided
 * across the tile, and walks K tileK at a time through workgroup memory.
 * `large` pays off once both M and N fill a 128 tile; `small` keeps decode-sized products (M of a few
 * rows) from running 128-row tiles that are mostly padding.
 */
export const matmulTiles = {
  large: { tileM: 128, tileN: 128, tileK: 8, threadM: 8, threadN: 8 },
  small: { tileM: 32, tileN: 64, tileK: 16, threadM: 2, threadN: 4 },
  // Contiguous per-invocation blocks read from workgroup memory as vec4s (matmulShader's `vector`):
  // a quarter of the workgroup-memory loads per FMA of the strided tiles above.
  vector128: { tileM: 128, tileN: 128, tileK: 8, threadM: 8, threadN: 8, vector: true },
  vector128k16: { tileM: 128, tileN: 128, tileK: 16, threadM: 8, threadN: 8, vector: true },
  vector64: { tileM: 64, tileN: 64, tileK: 16, threadM: 4, threadN: 4, vector: true },
  // pipelined-matmul.mjs's form: register blocks of 4 × 4 sub-blocks strided across the tile, A stored
  // transposed, double-buffered workgroup memory with one barrier per K slice, an unrolled k loop, and an
  // aligned specialisation (vec4 global reads, no bounds) for products that are whole tiles.
  // Workgroup memory: 2 buffers × tileK × (tileM + tileN) floats (16, 32, 24 and 24 KiB).
  pipelined128: { tileM: 128, tileN: 128, tileK: 8, threadM: 8, threadN: 8, pipelined: true },
  pipelined128k16: { tileM: 128, tileN: 128, tileK: 16, threadM: 8, threadN: 8, pipelined: true },
  pipelined128x64: { tileM: 128, tileN: 64, tileK: 16, threadM: 8, threadN: 4, pipelined: true },
  pipelined64x128: { tileM: 64, tileN: 128, tileK: 16, threadM: 4, threadN: 8, pipelined: true },
};

/**
 * Whether a pipelined tile may run `shape` in its aligned form: M, N and K whole tiles (K > 0), and
 * every operand's start a whole vec4 (batch strides multiples of 4), so no read or write needs a bound.
 */
export function matmulAligned(tile, { M, N, K, aBatchStride, bBatchStride }) {
  return (
    Boolean(tile.pipelined) &&
    K > 0 &&
    M % tile.tileM === 0 &&
    N % tile.tileN === 0 &&
    K % tile.tileK === 0 &&
    aBatchStride % 4 === 0 &&
    bBatchStride % 4 === 0
  );
}

/** The uniform block every matmul dispatch reads (u32 words, in this order). */
export const MATMUL_UNIFORM_WORDS = [
  'M',
  'N',
  'K',
  'aBatchStride',
  'bBatchStride',
  'accumulate',
  'batchStart',
  'aOffset',
];

/**
 * out[b] (+)= op(A[b]) · op(B[b]) for b = batchStart + workgroup z. A is [M, K] row-major, or [K, M]
 * when transposeA; B is [K, N], or [N, K] when transposeB (the layouts of backend.ts's MatmulShape).
 * Loads are arranged so that consecutive invocations read consecutive addresses in either layout;
 * out-of-range elements load as 0 and are never stored. Sums are float32 FMAs in k order per tile.
 * `aligned` (pipelined tiles only, where matmulAligned allows) compiles the form without bounds.
 */
export function matmulShader({
  tileM,
  tileN,
  tileK,
  threadM,
  threadN,
  vector = false,
  pipelined = false,
  aligned = false,
  transposeA,
  transposeB,
}) {
  if (pipelined)
    return pipelinedMatmulShader({ tileM, tileN, tileK, threadM, threadN, transposeA, transposeB, aligned });
  if (vector) return vectorMatmulShader({ tileM, tileN, tileK, threadM, threadN, transposeA, transposeB });
  const groupX = tileN / threadN;
  const groupY = tileM / threadM;
  const invocations = groupX * groupY;
  const loads = tileLoads({
    tileM,
    tileN,
    tileK,
    invocations,
    transposeA,
    transposeB,
    storeA: `tileA[kk * ${tileM}u + mm] = value;`,
    storeB: `tileB[kk * ${tileN}u + nn] = value;`,
  });
  // The per-invocation block is unrolled here rather than left to WGSL loops over function-scope arrays,
  // which some compilers keep in local memory instead of registers.
  const rows = [...Array(threadM).keys()];
  const columns = [...Array(threadN).keys()];
  const declareSums = rows.map((i) => columns.map((j) => `  var s${i}_${j} = 0.0;`).join('')).join('\n');
  const loadRegisters = [
    ...rows.map((i) => `      let a${i} = tileA[kk * ${tileM}u + local.y + ${i * groupY}u];`),
    ...columns.map((j) => `      let b${j} = tileB[kk * ${tileN}u + local.x + ${j * groupX}u];`),
  ].join('\n');
  const multiply = rows
    .map((i) => columns.map((j) => `      s${i}_${j} = fma(a${i}, b${j}, s${i}_${j});`).join('\n'))
    .join('\n');
  const store = rows
    .map((i) =>
      columns
        .map(
          (j) =>
            `  storeOne(rowStart + local.y + ${i * groupY}u, columnStart + local.x + ${j * groupX}u, outBase, s${i}_${j});`,
        )
        .join('\n'),
    )
    .join('\n');
  return productShader({
    tileM,
    tileN,
    tileK,
    groupX,
    groupY,
    tileElement: 'f32',
    storeFunctions: '',
    declare: declareSums,
    loads,
    loadRegisters,
    multiply,
    store,
  });
}

/** The global-to-workgroup loads shared by both shader forms: coordinates in memory order, 0 outside. */
function tileLoads({ tileM, tileN, tileK, invocations, transposeA, transposeB, storeA, storeB }) {
  const aLoads = (tileM * tileK) / invocations;
  const bLoads = (tileN * tileK) / invocations;
  if (!Number.isInteger(aLoads) || !Number.isInteger(bLoads)) throw new Error('matmulShader: tile does not divide');
  const aIndex = transposeA ? 'k * u.M + m' : 'm * u.K + k';
  const bIndex = transposeB ? 'n * u.K + k' : 'k * u.N + n';
  const aCoordinates = transposeA
    ? `let kk = l / ${tileM}u; let mm = l % ${tileM}u;`
    : `let mm = l / ${tileK}u; let kk = l % ${tileK}u;`;
  const bCoordinates = transposeB
    ? `let nn = l / ${tileK}u; let kk = l % ${tileK}u;`
    : `let kk = l / ${tileN}u; let nn = l % ${tileN}u;`;
  return `
    for (var i = 0u; i < ${aLoads}u; i++) {
      let l = index + i * ${invocations}u;
      ${aCoordinates}
      let m = rowStart + mm;
      let k = kStart + kk;
      var value = 0.0;
      if (m < u.M && k < u.K) { value = a[aBase + ${aIndex}]; }
      ${storeA}
    }
    for (var i = 0u; i < ${bLoads}u; i++) {
      let l = index + i * ${invocations}u;
      ${bCoordinates}
      let n = columnStart + nn;
      let k = kStart + kk;
      var value = 0.0;
      if (n < u.N && k < u.K) { value = b[bBase + ${bIndex}]; }
      ${storeB}
    }`;
}

/**
 * The same product with each invocation owning a contiguous threadM × threadN block (both multiples of
 * 4), reading its operands from workgroup memory as vec4s and accumulating threadM × threadN/4 vec4s:
 * per k, threadM/4 + threadN/4 vector loads feed threadM·threadN FMAs.
 */
function vectorMatmulShader({ tileM, tileN, tileK, threadM, threadN, transposeA, transposeB }) {
  if (threadM % 4 !== 0 || threadN % 4 !== 0)
    throw new Error('vectorMatmulShader: thread block must be multiples of 4');
  const groupX = tileN / threadN;
  const groupY = tileM / threadM;
  const invocations = groupX * groupY;
  const rowVectors = threadM / 4;
  const columnVectors = threadN / 4;
  const loads = tileLoads({
    tileM,
    tileN,
    tileK,
    invocations,
    transposeA,
    transposeB,
    storeA: `tileA[(kk * ${tileM}u + mm) / 4u][mm % 4u] = value;`,
    storeB: `tileB[(kk * ${tileN}u + nn) / 4u][nn % 4u] = value;`,
  });
  const rows = [...Array(threadM).keys()];
  const columns = [...Array(columnVectors).keys()];
  const declare = rows.map((i) => columns.map((c) => `  var s${i}_${c} = vec4f(0.0);`).join('')).join('\n');
  const loadRegisters = [
    ...[...Array(rowVectors).keys()].map(
      (r) => `      let a${r} = tileA[kk * ${tileM / 4}u + local.y * ${rowVectors}u + ${r}u];`,
    ),
    ...columns.map((c) => `      let b${c} = tileB[kk * ${tileN / 4}u + local.x * ${columnVectors}u + ${c}u];`),
  ].join('\n');
  const multiply = rows
    .map((i) =>
      columns.map((c) => `      s${i}_${c} = fma(vec4f(a${i >> 2}[${i & 3}]), b${c}, s${i}_${c});`).join('\n'),
    )
    .join('\n');
  const store = rows
    .map((i) =>
      columns
        .map(
          (c) =>
            `  storeVector(rowStart + local.y * ${threadM}u + ${i}u, columnStart + local.x * ${threadN}u + ${c * 4}u, outBase, s${i}_${c});`,
        )
        .join('\n'),
    )
    .join('\n');
  return productShader({
    tileM,
    tileN,
    tileK,
    groupX,
    groupY,
    tileElement: 'vec4f',
    storeFunctions: /* wgsl */ `
fn storeVector(m: u32, n: u32, outBase: u32, sums: vec4f) {
  if (m >= u.M) { return; }
  storeOne(m, n, outBase, sums.x);
  storeOne(m, n + 1u, outBase, sums.y);
  storeOne(m, n + 2u, outBase, sums.z);
  storeOne(m, n + 3u, outBase, sums.w);
}`,
    declare,
    loads,
    loadRegisters,
    multiply,
    store,
  });
}

/**
 * The skeleton both product forms share: the uniforms and bindings, the workgroup tiles (of f32 or
 * vec4f), and the main loop over K (load a tile pair, barrier, multiply from the tiles, barrier), around
 * the form's own snippets.
 */
function productShader({
  tileM,
  tileN,
  tileK,
  groupX,
  groupY,
  tileElement,
  storeFunctions,
  declare,
  loads,
  loadRegisters,
  multiply,
  store,
}) {
  const width = tileElement === 'vec4f' ? 4 : 1;
  return /* wgsl */ `
struct Uniforms { M: u32, N: u32, K: u32, aBatchStride: u32, bBatchStride: u32, accumulate: u32, batchStart: u32, aOffset: u32 }
@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
var<workgroup> tileA: array<${tileElement}, ${(tileK * tileM) / width}>;
var<workgroup> tileB: array<${tileElement}, ${(tileK * tileN) / width}>;

/** Writes (or adds, when accumulating) one output element; elements past the edges are not stored. */
fn storeOne(m: u32, n: u32, outBase: u32, sum: f32) {
  if (m >= u.M || n >= u.N) { return; }
  let at = outBase + m * u.N + n;
  var value = sum;
  if (u.accumulate != 0u) { value += out[at]; }
  out[at] = value;
}
${storeFunctions}

@compute @workgroup_size(${groupX}, ${groupY}, 1)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u,
        @builtin(local_invocation_index) index: u32) {
  let batch = u.batchStart + group.z;
  let aBase = u.aOffset + batch * u.aBatchStride;
  let bBase = batch * u.bBatchStride;
  let rowStart = group.y * ${tileM}u;
  let columnStart = group.x * ${tileN}u;
${declare}
  for (var kStart = 0u; kStart < u.K; kStart += ${tileK}u) {
${loads}
    workgroupBarrier();
    for (var kk = 0u; kk < ${tileK}u; kk++) {
${loadRegisters}
${multiply}
    }
    workgroupBarrier();
  }
  let outBase = batch * u.M * u.N;
${store}
}
`;
}

/** The workgroup count along x, y of one matmul dispatch. */
export function matmulGrid(tile, M, N) {
  return [Math.ceil(N / tile.tileN), Math.ceil(M / tile.tileM)];
}

/**
 * FMA throughput: each invocation runs `iterations` rounds of 16 independent vec4 FMA chains (128 FLOPs
 * a round) and stores one value so the compiler keeps the work. The bench divides its FLOPs by the time
 * to get the adapter's measured float32 peak, the denominator of every "fraction of peak" it prints.
 */
export const FMA_WORKGROUP = 256;
export const FMA_FLOPS_PER_ROUND = 16 * 4 * 2;
export function fmaPeakShader(iterations) {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(${FMA_WORKGROUP})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let seed = f32(id.x) * 1e-7;
  var x0 = vec4f(seed, seed + 1e-3, seed + 2e-3, seed + 3e-3);
  var x1 = x0 + 0.1; var x2 = x0 + 0.2; var x3 = x0 + 0.3; var x4 = x0 + 0.4; var x5 = x0 + 0.5;
  var x6 = x0 + 0.6; var x7 = x0 + 0.7; var x8 = x0 + 0.8; var x9 = x0 + 0.9; var x10 = x0 + 1.0;
  var x11 = x0 + 1.1; var x12 = x0 + 1.2; var x13 = x0 + 1.3; var x14 = x0 + 1.4; var x15 = x0 + 1.5;
  let scale = vec4f(0.9999);
  let shift = vec4f(1e-6);
  for (var i = 0u; i < ${iterations}u; i++) {
    x0 = fma(x0, scale, shift); x1 = fma(x1, scale, shift); x2 = fma(x2, scale, shift); x3 = fma(x3, scale, shift);
    x4 = fma(x4, scale, shift); x5 = fma(x5, scale, shift); x6 = fma(x6, scale, shift); x7 = fma(x7, scale, shift);
    x8 = fma(x8, scale, shift); x9 = fma(x9, scale, shift); x10 = fma(x10, scale, shift); x11 = fma(x11, scale, shift);
    x12 = fma(x12, scale, shift); x13 = fma(x13, scale, shift); x14 = fma(x14, scale, shift); x15 = fma(x15, scale, shift);
  }
  let total = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11 + x12 + x13 + x14 + x15;
  out[id.x] = total.x + total.y + total.z + total.w;
}
`;
}
