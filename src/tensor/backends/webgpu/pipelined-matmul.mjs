/**
 * The pipelined WGSL matrix product: the SGEMM techniques of hand-written CUDA kernels (Simon Boehm's
 * "How to optimize a CUDA matmul kernel", tfjs-webgpu's matmul_packed) in WGSL source built per tile.
 *
 * Is: one shader generator. A workgroup of (tileM / threadM) × (tileN / threadN) invocations computes
 * a tileM × tileN block of out; each invocation keeps a threadM × threadN block of sums in registers,
 * made of 4 × 4 sub-blocks (two along a side of 8 are half the tile apart) so that a warp's vec4 reads of
 * workgroup memory touch consecutive addresses (no bank conflicts). Both operands sit in workgroup memory
 * k-major (A transposed to As[k][m], B as Bs[k][n]), so one k step reads threadM / 4 + threadN / 4 vec4s
 * for threadM · threadN FMAs. Workgroup memory is double-buffered: the next K slice is read from global
 * memory into registers while the current one is multiplied, then stored into the other buffer, with
 * one barrier per slice. The k loop is unrolled: every index is the buffer's base plus a constant. `aligned`
 * specialises for M, N, K multiples of the tile (and batch strides of whole vec4s): operands are read
 * from global memory as vec4s and nothing is bounds-checked; the general form reads scalars with bounds
 * (0 outside) and stores only inside the edges.
 * Is not: the choice between the two forms (device-requests.mjs decides per product) or the other tile
 * forms (shaders.mjs). Plain JavaScript for the same reason as shaders.mjs: the device worker imports it.
 *
 * Symbols: M, N, K the product's sizes; m, n, k coordinates in them; mm, nn, kk coordinates inside a tile.
 */

/**
 * out[b] (+)= op(A[b]) · op(B[b]) with the layouts and uniforms of shaders.mjs's matmulShader; sums are
 * float32 FMAs in k order, as in every other tile.
 */
export function pipelinedMatmulShader({ tileM, tileN, tileK, threadM, threadN, transposeA, transposeB, aligned }) {
  if (threadM % 4 !== 0 || threadN % 4 !== 0 || tileK % 4 !== 0)
    throw new Error('pipelinedMatmulShader: threadM, threadN and tileK must be multiples of 4');
  const groupX = tileN / threadN;
  const groupY = tileM / threadM;
  if (!Number.isInteger(groupX) || !Number.isInteger(groupY))
    throw new Error('pipelinedMatmulShader: the thread block does not divide the tile');
  const invocations = groupX * groupY;
  const a = operandLoads({
    name: 'a',
    tileOuter: tileM,
    tileK,
    invocations,
    kMajor: transposeA,
    aligned,
    outerStart: 'rowStart',
    outerSize: 'u.M',
  });
  const b = operandLoads({
    name: 'b',
    tileOuter: tileN,
    tileK,
    invocations,
    kMajor: !transposeB,
    aligned,
    outerStart: 'columnStart',
    outerSize: 'u.N',
  });
  const rowVectors = threadM / 4;
  const columnVectors = threadN / 4;
  const rows = [...Array(threadM).keys()];
  const columns = [...Array(columnVectors).keys()];
  const declareSums = rows.map((i) => columns.map((c) => `  var s${i}_${c} = vec4f(0.0);`).join('')).join('\n');
  const lanes = ['x', 'y', 'z', 'w'];
  // The k steps of one slice from the buffer at aRead / bRead: invocation (x, y) reads rows
  // y·4 + r·groupY·4 (r < threadM / 4) and columns x·4 + c·groupX·4, each four wide.
  const multiply = [...Array(tileK).keys()]
    .map((kk) =>
      [
        '    {',
        ...[...Array(rowVectors).keys()].map(
          (r) => `      let a${r} = tileA[aRead + ${(kk * tileM) / 4 + r * groupY}u];`,
        ),
        ...columns.map((c) => `      let b${c} = tileB[bRead + ${(kk * tileN) / 4 + c * groupX}u];`),
        ...rows.flatMap((i) =>
          columns.map((c) => `      s${i}_${c} = fma(vec4f(a${i >> 2}.${lanes[i & 3]}), b${c}, s${i}_${c});`),
        ),
        '    }',
      ].join('\n'),
    )
    .join('\n');
  const store = rows
    .flatMap((i) =>
      columns.map((c) => {
        const m = `rowStart + local.y * 4u + ${((i >> 2) * groupY * 4 + (i & 3)).toString()}u`;
        const n = `columnStart + local.x * 4u + ${c * groupX * 4}u`;
        return aligned
          ? `  storeAligned(${m}, ${n}, outBase, s${i}_${c});`
          : `  storeVector(${m}, ${n}, outBase, s${i}_${c});`;
      }),
    )
    .join('\n');
  const element = aligned ? 'vec4f' : 'f32';
  // In the aligned form every address is in vec4s: M, N, K and the strides are multiples of 4.
  const scale = aligned ? ' / 4u' : '';
  return /* wgsl */ `
struct Uniforms { M: u32, N: u32, K: u32, aBatchStride: u32, bBatchStride: u32, accumulate: u32, batchStart: u32, aOffset: u32 }
@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> a: array<${element}>;
@group(0) @binding(2) var<storage, read> b: array<${element}>;
@group(0) @binding(3) var<storage, read_write> out: array<${element}>;
// Two buffers each: slice s is multiplied from buffer s % 2 while slice s + 1 is stored into the other.
var<workgroup> tileA: array<vec4f, ${(2 * tileK * tileM) / 4}>;
var<workgroup> tileB: array<vec4f, ${(2 * tileK * tileN) / 4}>;
${aligned ? STORE_ALIGNED : STORE_GENERAL}

@compute @workgroup_size(${groupX}, ${groupY}, 1)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u,
        @builtin(local_invocation_index) index: u32) {
  let batch = u.batchStart + group.z;
  let aBase = (u.aOffset + batch * u.aBatchStride)${scale};
  let bBase = (batch * u.bBatchStride)${scale};
  let rowStart = group.y * ${tileM}u;
  let columnStart = group.x * ${tileN}u;
${a.setup}
${b.setup}
${declareSums}
  let slices = (u.K + ${tileK - 1}u) / ${tileK}u;
${a.fetch('0u')}
${b.fetch('0u')}
${a.deposit('0u')}
${b.deposit('0u')}
  workgroupBarrier();
  for (var slice = 0u; slice < slices; slice++) {
    let buffer = slice % 2u;
    let aRead = buffer * ${(tileK * tileM) / 4}u + local.y;
    let bRead = buffer * ${(tileK * tileN) / 4}u + local.x;
    let hasNext = slice + 1u < slices;
    if (hasNext) {
${a.fetch('slice + 1u')}
${b.fetch('slice + 1u')}
    }
${multiply}
    if (hasNext) {
${a.deposit(`(1u - buffer) * ${(tileK * tileM) / 4}u`)}
${b.deposit(`(1u - buffer) * ${(tileK * tileN) / 4}u`)}
    }
    workgroupBarrier();
  }
  let outBase = batch * u.M * u.N;
${store}
}
`;
}

// Output stores. The aligned form's tile lies inside the product and N is a multiple of 4.
const STORE_ALIGNED = /* wgsl */ `
fn storeAligned(m: u32, n: u32, outBase: u32, sums: vec4f) {
  let at = (outBase + m * u.N + n) / 4u;
  var value = sums;
  if (u.accumulate != 0u) { value += out[at]; }
  out[at] = value;
}`;
const STORE_GENERAL = /* wgsl */ `
fn storeOne(m: u32, n: u32, outBase: u32, sum: f32) {
  if (n >= u.N) { return; }
  let at = outBase + m * u.N + n;
  var value = sum;
  if (u.accumulate != 0u) { value += out[at]; }
  out[at] = value;
}
fn storeVector(m: u32, n: u32, outBase: u32, sums: vec4f) {
  if (m >= u.M) { return; }
  storeOne(m, n, outBase, sums.x);
  storeOne(m, n + 1u, outBase, sums.y);
  storeOne(m, n + 2u, outBase, sums.z);
  storeOne(m, n + 3u, outBase, sums.w);
}`;

/**
 * The WGSL snippets that move one operand's tileOuter × tileK slice from global memory into a k-major
 * workgroup tile (tile[kk][outer], in vec4s of four consecutive outer coordinates): `setup` (each
 * invocation's addresses, once), `fetch(slice)` (global memory → registers) and `deposit(offset)`
 * (registers → the workgroup tile's buffer starting at `offset`, in vec4s). `kMajor` says how the
 * operand is stored: k-major (A transposed, B plain: consecutive addresses run along the outer
 * coordinate) or outer-major (consecutive addresses run along k, so a fetched group of four is
 * scattered over four k rows of the tile).
 * Consecutive invocations fetch consecutive addresses in either layout.
 */
function operandLoads({ name, tileOuter, tileK, invocations, kMajor, aligned, outerStart, outerSize }) {
  const width = aligned ? 4 : 1;
  const count = (tileOuter * tileK) / width;
  const perInvocation = count / invocations;
  if (!Number.isInteger(perInvocation))
    throw new Error(`pipelinedMatmulShader: ${name}'s ${count} loads do not divide over ${invocations} invocations`);
  const rowVectors = tileOuter / 4;
  const base = `${name}Base`;
  const indices = [...Array(perInvocation).keys()];
  const register = (i) => `${name}Fetched${i}`;
  const address = (i) => `${name}Address${i}`;
  const slot = (i) => `${name}Slot${i}`;
  const lane = (i) => `${name}Lane${i}`;
  const inside = (i) => `${name}Inside${i}`;
  const outerIndex = (i) => `${name}Outer${i}`;
  const kIndex = (i) => `${name}K${i}`;
  const setup = indices.map((i) => {
    const l = `index + ${i * invocations}u`;
    // Per invocation: its element's coordinates in the tile (outer, k), and the tile slot it fills.
    const coordinates = kMajor
      ? `let ${kIndex(i)} = (${l}) / ${tileOuter / width}u; let ${outerIndex(i)} = (${l}) % ${tileOuter / width}u * ${width}u;`
      : `let ${outerIndex(i)} = (${l}) / ${tileK / width}u; let ${kIndex(i)} = (${l}) % ${tileK / width}u * ${width}u;`;
    const lines = [`  ${coordinates}`];
    // The global address of the element (or vec4) in slice 0: outer-major rows are K long, k-major ones outerSize.
    if (aligned) {
      lines.push(
        kMajor
          ? `  let ${address(i)} = ${base} + (${kIndex(i)} * ${outerSize} + ${outerStart} + ${outerIndex(i)}) / 4u;`
          : `  let ${address(i)} = ${base} + ((${outerStart} + ${outerIndex(i)}) * u.K + ${kIndex(i)}) / 4u;`,
      );
    } else {
      lines.push(
        `  let ${inside(i)} = ${outerStart} + ${outerIndex(i)} < ${outerSize};`,
        kMajor
          ? `  let ${address(i)} = ${base} + ${kIndex(i)} * ${outerSize} + ${outerStart} + ${outerIndex(i)};`
          : `  let ${address(i)} = ${base} + (${outerStart} + ${outerIndex(i)}) * u.K + ${kIndex(i)};`,
      );
    }
    lines.push(
      `  let ${slot(i)} = ${kIndex(i)} * ${rowVectors}u + ${outerIndex(i)} / 4u;`,
      `  let ${lane(i)} = ${outerIndex(i)} % 4u;`,
      `  var ${register(i)}: ${aligned ? 'vec4f' : 'f32'};`,
    );
    return lines.join('\n');
  });
  // How far one slice moves the address: tileK rows down a k-major operand, tileK columns along the other.
  const step = kMajor ? `${tileK}u * ${outerSize}${aligned ? ' / 4u' : ''}` : `${tileK / width}u`;
  const fetch = (slice) =>
    indices
      .map((i) => {
        const load = `${register(i)} = ${name}[${address(i)} + (${slice}) * ${step}];`;
        if (aligned) return `    ${load}`;
        const k = `(${slice}) * ${tileK}u + ${kIndex(i)}`;
        return `    ${register(i)} = 0.0;\n    if (${inside(i)} && ${k} < u.K) { ${load} }`;
      })
      .join('\n');
  const tile = name === 'a' ? 'tileA' : 'tileB';
  const deposit = (offset) =>
    indices
      .map((i) => {
        if (!aligned) return `    ${tile}[${offset} + ${slot(i)}][${lane(i)}] = ${register(i)};`;
        if (kMajor) return `    ${tile}[${offset} + ${slot(i)}] = ${register(i)};`;
        // Four consecutive k of one outer coordinate: one lane in each of four k rows.
        return ['x', 'y', 'z', 'w']
          .map((w, j) => `    ${tile}[${offset} + ${slot(i)} + ${j * rowVectors}u][${lane(i)}] = ${register(i)}.${w};`)
          .join('\n');
      })
      .join('\n');
  return { setup: setup.join('\n'), fetch, deposit };
}
