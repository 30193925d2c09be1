/**
 * The webgpu backend's device thread: owns the Dawn instance, the adapter, the device, the compiled
 * pipelines and every GPU buffer, and answers one request at a time from webgpu-backend.ts.
 *
 * Is: the asynchronous half of a synchronous bridge. WebGPU's results arrive through promises
 * (mapAsync, onSubmittedWorkDone) that only settle while an event loop runs, and the tensor layer is
 * synchronous, so the calling thread posts a request here and blocks in Atomics.wait; this thread runs
 * it, posts the reply on the same port and wakes the caller, which reads it with receiveMessageOnPort.
 * Is not: the shaders (shaders.mjs) or shape checking (webgpu-backend.ts). Plain JavaScript: it runs
 * without a TypeScript loader.
 *
 * Dawn pitfalls kept here: the object `create()` returns stays referenced for the life of the thread
 * (Dawn touches freed memory otherwise); nothing is written to the GPU from a SharedArrayBuffer view
 * (that crashes Dawn): requests arrive as structured clones, which are ordinary ArrayBuffers.
 */
import { workerData } from 'node:worker_threads';
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

const { control, port } = workerData;
let gpu; // the create() object: must outlive the device (see above)
let device;
let adapterSummary;
const pipelines = new Map();
/** Operands kept on the device between requests (a model's weights during a generation), by id. */
const resident = new Map();
/** Why the device stopped working (lost, or an uncaptured error), reported as the next request's error. */
let lostReason = null;

function reply(message, transfer = []) {
  port.postMessage(message, transfer);
  Atomics.store(control, 0, 1);
  Atomics.notify(control, 0);
}

async function open({ modulePath, powerPreference, dawnFlags }) {
  const { create, globals } = await import(modulePath);
  Object.assign(globalThis, globals);
  gpu = create(dawnFlags);
  const adapter = await gpu.requestAdapter({ powerPreference });
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

function operandBuffer(operand, temporary) {
  if (operand.id !== undefined) {
    const found = resident.get(operand.id);
    if (!found) throw new Error(`operand ${operand.id} is not resident on the device`);
    return found;
  }
  const buffer = upload(operand.data);
  temporary.push(buffer);
  return buffer;
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
    const uniform = device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(
      uniform,
      0,
      Uint32Array.from(MATMUL_UNIFORM_WORDS, (word) => values[word]),
    );
    temporary.push(uniform);
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

async function readBack(source, bytes) {
  const staging = device.createBuffer({
    size: Math.max(16, align4(bytes)),
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(source, 0, staging, 0, Math.max(16, align4(bytes)));
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const result = new Float32Array(staging.getMappedRange(0, Math.max(16, align4(bytes))).slice(0, bytes));
  staging.unmap();
  staging.destroy();
  return result;
}

async function matmul({ a, b, out, shape }) {
  const temporary = [];
  try {
    const outBytes = shape.batch * shape.M * shape.N * 4;
    const buffers = {
      a: operandBuffer(a, temporary),
      b: operandBuffer(b, temporary),
      out: out ? upload(out) : device.createBuffer({ size: Math.max(16, outBytes), usage: STORAGE() }),
    };
    temporary.push(buffers.out);
    const encoder = device.createCommandEncoder();
    encodeMatmul(encoder, buffers, shape, temporary);
    device.queue.submit([encoder.finish()]);
    const result = await readBack(buffers.out, outBytes);
    checkDevice();
    return { message: { out: result }, transfer: [result.buffer] };
  } finally {
    for (const buffer of temporary) buffer.destroy();
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
    for (const buffer of [...resident.values(), ...benchOperands.values()]) buffer.destroy();
    resident.clear();
    benchOperands.clear();
    device?.destroy();
    return { ok: true };
  },
};

port.on('message', async (request) => {
  try {
    const handler = handlers[request.op];
    if (!handler) throw new Error(`unknown request ${request.op}`);
    const result = await handler(request);
    if (result && 'message' in result) reply(result.message, result.transfer);
    else reply(result);
  } catch (error) {
    reply({ error: error instanceof Error ? error.message : String(error) });
  }
});
