/**
 * The `webgpu` backend: the batched matrix product on a GPU through WebGPU (Dawn for Node, the optional
 * `webgpu` package), behind the synchronous Backend interface.
 *
 * Is: the calling thread's half of a bridge to device-worker.mjs, which owns the device. A request is
 * posted, the calling thread blocks in Atomics.wait until the worker has run it, and the reply is read
 * with receiveMessageOnPort, so the tensor layer above stays synchronous (docs/architecture.md, "The
 * webgpu backend"). Operands promised constant (withConstantOperands: a model's weights while it
 * generates) are uploaded once and stay on the device; everything else crosses per call.
 * Is not: yet the device-resident tensor engine the GPU issue asks for. Activations, gradients and the
 * optimiser state still live in host memory and the row kernels (norms, softmax, attention, AdamW,
 * sampling) run on the host, borrowed from the fastest CPU backend (options.host); only products run
 * on the GPU. Selected only when asked for
 * (GRPO_BACKEND=webgpu): never picked as the fastest available.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
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

const OPEN_TIMEOUT_MS = 120_000;
// A product's first call compiles its pipeline: 6–14 s on lavapipe. A GPU request that outlasts this is hung.
const REQUEST_TIMEOUT_MS = 600_000;

/**
 * Dawn's instance flags from GRPO_WEBGPU_DAWN_FLAGS (separated by ";", e.g.
 * `enable-dawn-features=allow_unsafe_apis,disable_robustness`): for measuring Dawn's options on a GPU
 * without a code change; empty by default.
 */
function dawnFlags(): string[] {
  const value = process.env.GRPO_WEBGPU_DAWN_FLAGS ?? '';
  return value === '' ? [] : value.split(';').map((flag) => flag.trim());
}

/** The file URL of the `webgpu` package's entry, or why it cannot be found. */
function webgpuModule(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('webgpu')).href;
  } catch {
    throw new WebGpuUnavailableError(
      'the optional package "webgpu" (Dawn for Node) is not installed: run `npm install webgpu`',
    );
  }
}

class DeviceBridge {
  private readonly control = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private readonly worker: Worker;
  private closed = false;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(new URL('./device-worker.mjs', import.meta.url), {
      workerData: { control: this.control, port: port2 },
      transferList: [port2],
      // Plain JS: it needs no loader and must not inherit flags such as --eval (see wasm-backend.ts).
      execArgv: [],
    });
    this.worker.unref();
    port1.unref();
  }

  /** Posts one request and blocks until the device thread answers it. */
  request<T>(message: Record<string, unknown>, transfer: ArrayBuffer[] = [], timeoutMs = REQUEST_TIMEOUT_MS): T {
    if (this.closed) throw new Error('webgpu backend: used after dispose()');
    Atomics.store(this.control, 0, 0);
    this.port.postMessage(message, transfer);
    // The device thread posts its reply, stores 1, then notifies. Its notify for the previous reply can
    // land late, once this request waits (the earlier wait saw the 1 and returned before that notify):
    // such a wake finds 0 and waits on. Only the 1 says this request's reply is on the port.
    const deadline = Date.now() + timeoutMs;
    let outcome: 'ok' | 'not-equal' | 'timed-out' = 'ok';
    while (Atomics.load(this.control, 0) === 0 && outcome !== 'timed-out')
      outcome = Atomics.wait(this.control, 0, 0, Math.max(0, deadline - Date.now()));
    if (outcome === 'timed-out' && Atomics.load(this.control, 0) === 0) {
      this.close();
      throw new Error(
        `webgpu backend: the device thread did not answer "${String(message.op)}" within ${timeoutMs / 1000} s`,
      );
    }
    const received = receiveMessageOnPort(this.port);
    if (!received) throw new Error(`webgpu backend: woken without a reply to "${String(message.op)}"`);
    const answer = received.message as { error?: string };
    if (answer.error !== undefined) throw new Error(`webgpu ${String(message.op)}: ${answer.error}`);
    return answer as T;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.worker.terminate();
  }
}

/** Opens the adapter (high-performance preference) on a device thread; throws WebGpuUnavailableError without one. */
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

export function createWebGpuBackend(options: WebGpuBackendOptions = {}): WebGpuBackend {
  const modulePath = webgpuModule();
  const bridge = new DeviceBridge();
  let adapter: WebGpuAdapterSummary;
  try {
    adapter = bridge.request<{ adapter: WebGpuAdapterSummary }>(
      { op: 'open', modulePath, powerPreference: 'high-performance', dawnFlags: dawnFlags() },
      [],
      OPEN_TIMEOUT_MS,
    ).adapter;
  } catch (error) {
    bridge.close();
    throw new WebGpuUnavailableError((error as Error).message.replace(/^webgpu open: /, ''));
  }
  const maxBindingFloats =
    options.maxBindingFloats ?? Math.floor(Math.min(adapter.maxStorageBufferBindingSize, adapter.maxBufferSize) / 4);
  // Operands promised constant, by identity, with their device ids (see withConstantOperands).
  const resident = new Map<Float32Array, number>();
  let nextId = 1;
  let constantDepth = 0;

  function operand(
    array: Float32Array,
    length: number,
    transfer: ArrayBuffer[],
  ): { id: number } | { data: Float32Array } {
    const id = resident.get(array);
    if (id !== undefined) return { id };
    // A copy of exactly the elements used, moved (not cloned) to the device thread.
    const data = array.slice(0, length);
    transfer.push(data.buffer);
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
    const reply = bridge.request<{ out: Float32Array }>(request, transfer);
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
        resident.set(array, id);
      }
      constantDepth++;
      try {
        return fn();
      } finally {
        constantDepth--;
        if (constantDepth === 0 && resident.size > 0) {
          const ids = [...resident.values()];
          resident.clear();
          bridge.request({ op: 'drop', ids });
        }
      }
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
