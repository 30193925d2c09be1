/**
 * The webgpu backend's device side: owns the adapter, the device, the compiled pipelines and every GPU
 * buffer, and answers one request at a time (open, matmul, keep, drop, the benches, close).
 *
 * Is: the asynchronous half of a synchronous bridge, shared by the two threads that run it: Node's
 * (device-thread.mjs, Dawn for Node) and a browser tab's (src/browser/webgpu-thread.mjs, the browser's
 * own navigator.gpu). WebGPU's results arrive through promises (mapAsync, onSubmittedWorkDone) that only
 * settle while an event loop runs, and the tensor layer is synchronous, so the calling thread posts a
 * request to such a thread and blocks until it has answered (webgpu-backend.ts).
 * Is not: the shaders (shaders.mjs), the transport (those two threads) or shape checking
 * (webgpu-backend.ts). Plain JavaScript: it runs without a TypeScript loader.
 *
 * Dawn pitfall kept here: nothing is written to the GPU from a SharedArrayBuffer view (that crashes
 * Dawn for Node): requests arrive as structured clones, which are ordinary ArrayBuffers.
 */
import {
  FMA_FLOPS_PER_ROUND,
  FMA_WORKGROUP,
  MATMUL_UNIFORM_WORDS,
  fmaPeakShader,
  matmulAligned,
  matmulGrid,
  matmulShader,
  matmulTiles,
} from './shaders.mjs';

let device;
let adapterSummary;
const pipelines = new Map();
/** Operands kept on the device between requests (a model's weights during a generation), by id. */
const resident = new Map();
/** Why the device stopped working (lost, or an uncaptured error), reported as the next request's error. */
let lostReason = null;

/** The thread's way to its GPU object (an object with requestAdapter), given the open request. */
let openGpu;

async function open(request) {
  const gpu = await openGpu(request);
  if (!gpu)
    throw new Error('no WebGPU here: navigator.gpu is missing (a browser without WebGPU, or WebGPU turned off)');
  const adapter = await gpu.requestAdapter({ powerPreference: request.powerPreference });
  if (!adapter) {
    throw new Error(
      'no WebGPU adapter: requestAdapter() returned null (no GPU driver, and no Vulkan software driver such as Mesa ≥ 25 lavapipe)',
    );
  }
  const info = adapter.info ?? {};
  const limits = adapter.limits;
  device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
      maxBufferSize: limits.maxBufferSize,
      maxComputeWorkgroupStorageSize: limits.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: limits.maxComputeInvocationsPerWorkgroup,
    },
  });
  device.lost.then((lost) => {
    lostReason = lost.message || lost.reason || 'device lost';
  });
  device.onuncapturederror = (event) => {
    lostReason ??= `uncaptured WebGPU error: ${event.error?.message ?? event.error}`;
  };
  adapterSummary = {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
    isFallbackAdapter: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
    features: [...adapter.features],
    // Tensor-core shapes Dawn's experimental subgroup matrices offer here (none on lavapipe).
    subgroupMatrixConfigs: (info.subgroupMatrixConfigs ?? []).map((config) => ({ ...config })),
    maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
    maxBufferSize: limits.maxBufferSize,
    maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
  };
  return { adapter: adapterSummary };
}

function pipeline(key, code) {
  let found = pipelines.get(key);
  if (!found) {
    const module = device.createShaderModule({ code });
    found = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    pipelines.set(key, found);
  }
  return found;
}

function matmulPipeline(tileName, transposeA, transposeB, aligned) {
  const tile = matmulTiles[tileName];
  // Checked here because Dawn reports an oversized pipeline as an uncaptured error, which ends the device.
  const bytes = workgroupBytes(tile);
  const limit = device.limits.maxComputeWorkgroupStorageSize;
  if (bytes > limit)
    throw new Error(`matmul tile ${tileName} needs ${bytes} bytes of workgroup memory, over the adapter's ${limit}`);
  return pipeline(
    `matmul ${tileName} ${transposeA} ${transposeB} ${aligned}`,
    matmulShader({ ...tile, transposeA, transposeB, aligned }),
  );
}

/** The workgroup memory a tile's shader declares: its A and B tiles, twice when double-buffered. */
function workgroupBytes({ tileM, tileN, tileK, pipelined }) {
  return (pipelined ? 2 : 1) * tileK * (tileM + tileN) * 4;
}

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** A storage buffer holding `array` (at least 4 bytes: WebGPU refuses empty bindings). */
function upload(array) {
  const buffer = device.createBuffer({ size: Math.max(16, align4(array.byteLength)), usage: STORAGE() });
  if (array.byteLength > 0) device.queue.writeBuffer(buffer, 0, array.buffer, array.byteOffset, array.byteLength);
  return buffer;
}

const align4 = (bytes) => Math.ceil(bytes / 4) * 4;

/**
 * Buffers a request needs only until it answers (uploaded operands, outputs, uniforms, staging), kept
 * between requests by usage and size class and handed out again: a decode step makes a few hundred
 * products, and creating and destroying four buffers for each cost more than the product itself. Sizes
 * round up to a power of two up to 64 MiB (the shaders read only what the uniforms' dims say, so a
 * larger buffer is harmless); at most POOL_LIMIT_BYTES wait in the pool, the rest is destroyed.
 */
const pool = new Map();
const POOL_LIMIT_BYTES = 1 << 30;
let pooledBytes = 0;
const sizeClass = (bytes) => {
  const size = Math.max(16, align4(bytes));
  return size <= 1 << 26 ? 2 ** Math.ceil(Math.log2(size)) : size;
};
const poolKey = (size, usage) => `${usage} ${size}`;
/** Where each pooled buffer goes back to (its key and size), so recycling needs no GPUBuffer attributes. */
const pooledShape = new WeakMap();

function temporaryBuffer(bytes, usage, temporary) {
  const size = sizeClass(bytes);
  const key = poolKey(size, usage);
  const buffer = pool.get(key)?.pop() ?? device.createBuffer({ size, usage });
  if (pooledShape.has(buffer)) pooledBytes -= size;
  pooledShape.set(buffer, { key, size });
  temporary.push(buffer);
  return buffer;
}

/** Gives a finished request's temporary buffers back to the pool (its GPU work has completed). */
function recycle(temporary) {
  for (const buffer of temporary) {
    const shape = pooledShape.get(buffer);
    if (!shape || pooledBytes + shape.size > POOL_LIMIT_BYTES) {
      pooledShape.delete(buffer);
      buffer.destroy();
      continue;
    }
    pooledBytes += shape.size;
    if (!pool.has(shape.key)) pool.set(shape.key, []);
    pool.get(shape.key).push(buffer);
  }
}

/** A pooled storage buffer holding `array`, given back with the request's other temporaries. */
function uploadTemporary(array, temporary) {
  const buffer = temporaryBuffer(array.byteLength, STORAGE(), temporary);
  if (array.byteLength > 0) device.queue.writeBuffer(buffer, 0, array.buffer, array.byteOffset, array.byteLength);
  return buffer;
}

function operandBuffer(operand, temporary) {
  if (operand.id !== undefined) {
    const found = resident.get(operand.id);
    if (!found) throw new Error(`operand ${operand.id} is not resident on the device`);
    if (operand.offset === undefined) return found;
    // A range of a resident array (a block of a weight's rows): copied on the device into its own buffer,
    // so the shaders bind it from 0 as they bind any operand.
    const bytes = operand.length * 4;
    const range = temporaryBuffer(bytes, STORAGE(), temporary);
    if (bytes > 0) {
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(found, operand.offset * 4, range, 0, bytes);
      device.queue.submit([encoder.finish()]);
    }
    return range;
  }
  return uploadTemporary(operand.data, temporary);
}

/**
 * Picks the tile for a product: 128 × 128 with vector reads once both sides fill it (the fastest of
 * the tiles measured at 4096³ on an H200: 4.9 TFLOP/s against 4.6 for `large`), else the small one.
 */
function chooseTile(M, N) {
  return M >= 128 && N >= 128 ? 'vector128' : 'small';
}

/** Records the dispatches of one matmul into `encoder` (batches beyond the z limit in several dispatches). */
function encodeMatmul(encoder, buffers, shape, temporary) {
  const { batch, M, N, K, transposeA, transposeB, aBatchStride, bBatchStride, accumulate } = shape;
  const tileName = shape.tile ?? chooseTile(M, N);
  const tile = matmulTiles[tileName];
  if (!tile) throw new Error(`unknown matmul tile ${tileName}: known are ${Object.keys(matmulTiles).join(', ')}`);
  const compiled = matmulPipeline(tileName, transposeA, transposeB, matmulAligned(tile, shape));
  const [groupsX, groupsY] = matmulGrid(tile, M, N);
  const zLimit = adapterSummary.maxComputeWorkgroupsPerDimension;
  if (groupsX > zLimit || groupsY > zLimit) {
    throw new Error(`matmul M=${M} N=${N} needs ${groupsY} × ${groupsX} workgroups, over the adapter's ${zLimit}`);
  }
  const pass = encoder.beginComputePass();
  pass.setPipeline(compiled);
  for (let batchStart = 0; batchStart < batch; batchStart += zLimit) {
    const values = { M, N, K, aBatchStride, bBatchStride, accumulate: accumulate ? 1 : 0, batchStart, aOffset: 0 };
    const uniform = temporaryBuffer(32, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, temporary);
    device.queue.writeBuffer(
      uniform,
      0,
      Uint32Array.from(MATMUL_UNIFORM_WORDS, (word) => values[word]),
    );
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: compiled.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: uniform } },
          { binding: 1, resource: { buffer: buffers.a } },
          { binding: 2, resource: { buffer: buffers.b } },
          { binding: 3, resource: { buffer: buffers.out } },
        ],
      }),
    );
    pass.dispatchWorkgroups(groupsX, groupsY, Math.min(zLimit, batch - batchStart));
  }
  pass.end();
}

/**
 * Records a copy of `bytes` of `source` into a staging buffer at the end of `encoder`, submits it and
 * returns the floats once the GPU has done everything submitted before.
 */
async function submitAndReadBack(encoder, source, bytes, temporary) {
  const size = Math.max(16, align4(bytes));
  const staging = temporaryBuffer(size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, temporary);
  encoder.copyBufferToBuffer(source, 0, staging, 0, size);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const result = new Float32Array(staging.getMappedRange(0, size).slice(0, bytes));
  staging.unmap();
  return result;
}

async function matmul({ a, b, out, shape }) {
  const temporary = [];
  try {
    const outBytes = shape.batch * shape.M * shape.N * 4;
    const buffers = {
      a: operandBuffer(a, temporary),
      b: operandBuffer(b, temporary),
      out: out ? uploadTemporary(out, temporary) : temporaryBuffer(outBytes, STORAGE(), temporary),
    };
    // The product and the copy out in one submission, one wait.
    const encoder = device.createCommandEncoder();
    encodeMatmul(encoder, buffers, shape, temporary);
    const result = await submitAndReadBack(encoder, buffers.out, outBytes, temporary);
    checkDevice();
    return { message: { out: result }, transfer: [result.buffer] };
  } finally {
    // Every submission above has completed (the read-back waited for it), or none was made.
    recycle(temporary);
  }
}

function checkDevice() {
  if (lostReason) throw new Error(`the WebGPU device failed: ${lostReason}`);
}

/** Times `repeats` dispatches of work recorded by `record`, after one warm-up, as one submission. */
async function timeSubmissions(record, repeats) {
  const warm = device.createCommandEncoder();
  record(warm);
  device.queue.submit([warm.finish()]);
  await device.queue.onSubmittedWorkDone();
  const encoder = device.createCommandEncoder();
  for (let i = 0; i < repeats; i++) record(encoder);
  const started = performance.now();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  checkDevice();
  return (performance.now() - started) / 1000;
}

/** The measured float32 FMA peak (GFLOP/s) over `groups` workgroups × `iterations` rounds. */
async function benchFma({ groups, iterations, repeats }) {
  const compiled = pipeline(`fma ${iterations}`, fmaPeakShader(iterations));
  const out = device.createBuffer({ size: groups * FMA_WORKGROUP * 4, usage: STORAGE() });
  const bindGroup = device.createBindGroup({
    layout: compiled.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: out } }],
  });
  const seconds = await timeSubmissions((encoder) => {
    const pass = encoder.beginComputePass();
    pass.setPipeline(compiled);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(groups);
    pass.end();
  }, repeats);
  out.destroy();
  const flops = groups * FMA_WORKGROUP * iterations * FMA_FLOPS_PER_ROUND * repeats;
  return { message: { seconds, gflops: flops / seconds / 1e9 } };
}

/** Operands of the throughput bench, by length, kept between its calls (filling 10⁸ floats takes seconds). */
const benchOperands = new Map();
function benchOperand(length) {
  let buffer = benchOperands.get(length);
  if (!buffer) {
    const block = Float32Array.from({ length: 4096 }, (_, i) => Math.sin(i * 12.9898) * 0.5);
    const data = new Float32Array(length);
    for (let at = 0; at < length; at += block.length)
      data.set(block.subarray(0, Math.min(block.length, length - at)), at);
    buffer = upload(data);
    benchOperands.set(length, buffer);
  }
  return buffer;
}

/** Device-side matmul throughput on operands already on the device (no transfers timed). */
async function benchMatmul({ shape, repeats }) {
  const { batch, M, N, K } = shape;
  const temporary = [];
  try {
    const buffers = {
      a: benchOperand(batch * M * K),
      b: benchOperand(batch * K * N),
      out: device.createBuffer({ size: batch * M * N * 4, usage: STORAGE() }),
    };
    temporary.push(buffers.out);
    const seconds = await timeSubmissions((encoder) => encodeMatmul(encoder, buffers, shape, temporary), repeats);
    return { message: { seconds, gflops: (2 * batch * M * N * K * repeats) / seconds / 1e9 } };
  } finally {
    for (const buffer of temporary) buffer.destroy();
  }
}

const handlers = {
  open,
  matmul,
  benchFma,
  benchMatmul,
  keep({ id, data }) {
    resident.get(id)?.destroy();
    resident.set(id, upload(data));
    return { ok: true };
  },
  drop({ ids }) {
    for (const id of ids) {
      resident.get(id)?.destroy();
      resident.delete(id);
    }
    return { ok: true };
  },
  close() {
    for (const buffer of [...resident.values(), ...benchOperands.values(), ...[...pool.values()].flat()])
      buffer.destroy();
    pool.clear();
    resident.clear();
    benchOperands.clear();
    device?.destroy();
    return { ok: true };
  },
};

/**
 * Starts serving with `gpuOpener(openRequest)` giving the GPU object; returns the handler of one request,
 * which resolves to the reply (`message`, and what to transfer with it), an error included as `{ error }`.
 */
export function serveDeviceRequests(gpuOpener) {
  openGpu = gpuOpener;
  return async (request) => {
    try {
      const handler = handlers[request.op];
      if (!handler) throw new Error(`unknown request ${request.op}`);
      const result = await handler(request);
      return result && 'message' in result
        ? { message: result.message, transfer: result.transfer ?? [] }
        : { message: result, transfer: [] };
    } catch (error) {
      return { message: { error: error instanceof Error ? error.message : String(error) }, transfer: [] };
    }
  };
}
