/**
 * The `webgpu` backend: the batched matrix product on a GPU through WebGPU, behind the synchronous
 * Backend interface, over a channel to the thread that owns the device.
 *
 * Is: the calling thread's half of the bridge, whatever carries it: in Node, node-bridge.ts (a
 * worker_threads Worker running Dawn for Node, the optional `webgpu` package); in a browser tab,
 * src/browser/webgpu-bridge.ts (a Web Worker on the browser's navigator.gpu). Each request blocks the
 * calling thread until the device thread has answered, so the tensor layer above stays synchronous
 * (docs/architecture.md, "The webgpu backend"). Operands promised constant (withConstantOperands: a
 * model's weights while it generates, or through a training step's forward and backward) are uploaded
 * once and stay on the device; everything else crosses per call.
 * Is not: yet the device-resident tensor engine the GPU issue asks for. Activations, gradients and the
 * optimiser state still live in host memory and the row kernels (norms, softmax, attention, AdamW,
 * sampling) run on the host, borrowed from a CPU backend (options.host); only products run on the GPU.
 * Selected only when asked for (GRPO_BACKEND=webgpu, or the page's backend field): never picked as the
 * fastest available.
 */
import type { Backend, MatmulShape } from '../../backend.js';
import { checkMatmulShape, operandLength } from '../matmul-shape.js';
import { runInFittingProducts } from './split-product.js';

/** What the device thread reports about the adapter it opened. */
export interface WebGpuAdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  isFallbackAdapter: boolean;
  features: string[];
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  maxComputeWorkgroupsPerDimension: number;
  subgroupMatrixConfigs: Record<string, unknown>[];
}

/** The matmul shader's tile geometries (shaders.mjs's matmulTiles), for benches and tests that pin one. */
export const webgpuMatmulTiles = [
  'large',
  'small',
  'vector128',
  'vector128k16',
  'vector64',
  'pipelined128',
  'pipelined128k16',
  'pipelined128x64',
  'pipelined64x128',
] as const;
export type WebGpuMatmulTile = (typeof webgpuMatmulTiles)[number];

export interface WebGpuBackend extends Backend {
  readonly adapter: WebGpuAdapterSummary;
  /** matmul on a pinned tile geometry instead of the one the backend would choose (tests, benches). */
  matmulOnTile(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape, tile: WebGpuMatmulTile): void;
  /** Floats sent to and read back from the device since the backend opened (what residency saves). */
  traffic(): { uploadedFloats: number; downloadedFloats: number };
  /** Device-side float32 FMA throughput in GFLOP/s (the bench's peak): `groups` workgroups of 256. */
  measureFmaPeak(groups: number, iterations: number, repeats: number): { seconds: number; gflops: number };
  /** Device-side throughput of `repeats` products of this shape on operands already on the device. */
  measureMatmul(
    shape: Pick<MatmulShape, 'batch' | 'M' | 'K' | 'N' | 'transposeA' | 'transposeB'>,
    repeats: number,
    tile?: WebGpuMatmulTile,
  ): { seconds: number; gflops: number };
}

/** Thrown when the package or an adapter is missing, as opposed to a request that went wrong. */
export class WebGpuUnavailableError extends Error {}

/**
 * The calling thread's end of the channel to the device thread: `request` posts one request and blocks
 * until its answer, which it returns (an answer with `error` is thrown as "webgpu <op>: <error>").
 */
export interface DeviceChannel {
  request<T>(message: Record<string, unknown>, transfer?: ArrayBuffer[], timeoutMs?: number): T;
  close(): void;
}

/**
 * The optional kernels the webgpu backend borrows from a CPU backend while its operands live in host
 * memory: every row kernel except the product's own (matmul, matmulBfloat16B, withConstantOperands).
 */
const HOST_KERNELS = [
  'addArrays',
  'sumOfSquares',
  'scaleArray',
  'copyBlocks',
  'swigluForward',
  'swigluBackward',
  'rmsNormForward',
  'rmsNormBackward',
  'logSumExpRows',
  'softmaxGradRows',
  'adamwUpdate',
  'sampleRows',
  'prefixAttentionRows',
  'attentionForward',
  'attentionBackward',
  'ropeRows',
] as const satisfies readonly (keyof Backend)[];

export interface WebGpuBackendOptions {
  /**
   * A CPU backend whose row kernels (norms, SwiGLU, softmax rows, attention, AdamW, sampling) run the
   * host-side work while activations still live in host memory; without one, their js loops run.
   * The webgpu backend owns it from then on (dispose() disposes it).
   */
  host?: Backend;
  /** Floats one GPU binding may hold; default: the adapter's limits (tests set it small to see products split). */
  maxBindingFloats?: number;
}

/** The backend over an opened channel, whose device thread reported `adapter` (node-bridge.ts, webgpu-bridge.ts). */
export function webgpuBackendOn(
  bridge: DeviceChannel,
  adapter: WebGpuAdapterSummary,
  options: WebGpuBackendOptions = {},
): WebGpuBackend {
  const maxBindingFloats =
    options.maxBindingFloats ?? Math.floor(Math.min(adapter.maxStorageBufferBindingSize, adapter.maxBufferSize) / 4);
  // Operands promised constant, by identity, with their device ids (see withConstantOperands).
  const resident = new Map<Float32Array, number>();
  // The same arrays by their memory, to find a view into one (the vocabulary backward's blocks of rows of
  // the embedding): such a view is a range of the device copy, copied on the device, not from the host.
  const residentByBuffer = new Map<ArrayBufferLike, Float32Array[]>();
  let nextId = 1;
  let constantDepth = 0;
  const traffic = { uploadedFloats: 0, downloadedFloats: 0 };

  function operand(
    array: Float32Array,
    length: number,
    transfer: ArrayBuffer[],
  ): { id: number; offset?: number; length?: number } | { data: Float32Array } {
    const id = resident.get(array);
    if (id !== undefined) return { id };
    for (const parent of residentByBuffer.get(array.buffer) ?? []) {
      const offset = (array.byteOffset - parent.byteOffset) / 4;
      if (offset >= 0 && offset + length <= parent.length) return { id: resident.get(parent)!, offset, length };
    }
    // A copy of exactly the elements used, moved (not cloned) to the device thread.
    const data = array.slice(0, length);
    transfer.push(data.buffer);
    traffic.uploadedFloats += length;
    return { data };
  }

  function matmulOn(
    a: Float32Array,
    b: Float32Array,
    out: Float32Array,
    shape: MatmulShape,
    tile: WebGpuMatmulTile | undefined,
  ): void {
    checkMatmulShape('webgpu', a, b, out, shape);
    const { batch, M, K, N, accumulate } = shape;
    if (batch * M * N === 0) return;
    if (K === 0) {
      if (!accumulate) out.fill(0, 0, batch * M * N);
      return;
    }
    runInFittingProducts(a, b, out, shape, maxBindingFloats, (pieceA, pieceB, pieceOut, pieceShape) =>
      dispatch(pieceA, pieceB, pieceOut, pieceShape, tile),
    );
  }

  /** One product whose operands each fit a binding, on the device. */
  function dispatch(
    a: Float32Array,
    b: Float32Array,
    out: Float32Array,
    shape: MatmulShape,
    tile: WebGpuMatmulTile | undefined,
  ): void {
    const { batch, M, K, N, aBatchStride, bBatchStride, accumulate } = shape;
    const outLength = batch * M * N;
    const transfer: ArrayBuffer[] = [];
    const request = {
      op: 'matmul',
      // The answer's size, for a transport that must make room for it in advance (a browser tab's).
      replyFloats: outLength,
      a: operand(a, operandLength(batch, aBatchStride, M * K), transfer),
      b: operand(b, operandLength(batch, bBatchStride, K * N), transfer),
      out: accumulate ? out.slice(0, outLength) : null,
      shape: {
        batch,
        M,
        K,
        N,
        transposeA: shape.transposeA,
        transposeB: shape.transposeB,
        aBatchStride,
        bBatchStride,
        accumulate,
        tile,
      },
    };
    if (request.out) transfer.push(request.out.buffer);
    if (accumulate) traffic.uploadedFloats += outLength;
    const reply = bridge.request<{ out: Float32Array }>(request, transfer);
    traffic.downloadedFloats += outLength;
    out.set(reply.out.subarray(0, outLength));
  }

  const label = adapter.description || [adapter.vendor, adapter.architecture, adapter.device].filter(Boolean).join(' ');
  const host = options.host;
  const hostKernels: Partial<Backend> = {};
  if (host)
    for (const kernel of HOST_KERNELS)
      if (host[kernel]) Object.assign(hostKernels, { [kernel]: host[kernel].bind(host) });
  const hostNote = host ? `; row kernels on ${host.name} with ${host.threads} thread(s)` : '';
  return {
    ...hostKernels,
    name: 'webgpu',
    threads: host?.threads ?? 1,
    deviceMemory: true,
    detail: `${label || 'unnamed adapter'}${adapter.isFallbackAdapter ? ', a software fallback adapter' : ''}${hostNote}`,
    adapter,
    matmul(a, b, out, shape) {
      matmulOn(a, b, out, shape, undefined);
    },
    matmulOnTile(a, b, out, shape, tile) {
      matmulOn(a, b, out, shape, tile);
    },
    withConstantOperands<T>(operands: Iterable<Float32Array>, fn: () => T): T {
      for (const array of operands) {
        // One over a binding is split per product (split-product.ts), so it crosses per call instead.
        if (resident.has(array) || array.length > maxBindingFloats) continue;
        const id = nextId++;
        const data = array.slice();
        bridge.request({ op: 'keep', id, data }, [data.buffer]);
        traffic.uploadedFloats += array.length;
        resident.set(array, id);
        const sharing = residentByBuffer.get(array.buffer) ?? [];
        sharing.push(array);
        residentByBuffer.set(array.buffer, sharing);
      }
      constantDepth++;
      try {
        return fn();
      } finally {
        constantDepth--;
        if (constantDepth === 0 && resident.size > 0) {
          const ids = [...resident.values()];
          resident.clear();
          residentByBuffer.clear();
          bridge.request({ op: 'drop', ids });
        }
      }
    },
    traffic() {
      return { ...traffic };
    },
    measureFmaPeak(groups, iterations, repeats) {
      return bridge.request({ op: 'benchFma', groups, iterations, repeats });
    },
    measureMatmul(shape, repeats, tile) {
      const full = {
        ...shape,
        aBatchStride: shape.M * shape.K,
        bBatchStride: shape.K * shape.N,
        accumulate: false,
        tile,
      };
      return bridge.request({ op: 'benchMatmul', shape: full, repeats });
    },
    dispose() {
      try {
        bridge.request({ op: 'close' }, [], 10_000);
      } catch {
        // Already closed or the device thread is gone: nothing left to release.
      }
      bridge.close();
      host?.dispose();
    },
  };
}
