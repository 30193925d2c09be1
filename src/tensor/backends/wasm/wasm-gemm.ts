/**
 * The `wasm` backend's engine, free of Node: the SIMD128 GEMM of kernels.c run over one shared
 * WebAssembly memory by the calling thread plus kernel threads, behind the synchronous Backend
 * interface. The host hands it the compiled module and a way to start a thread (Node: readFileSync +
 * worker_threads in wasm-backend.ts; a browser tab: fetch + Web Workers in src/browser/wasm-backend.ts);
 * every thread runs thread-loop.mjs.
 *
 * Is: the memory layout (params, per-thread scratch, operand copies), the copy-in/copy-out, and the
 * dispatch: the calling thread wakes the threads with Atomics.notify, does its own share, then
 * Atomics.waits for the rest. Is not: the arithmetic (kernels.c), loading the module, nor backend
 * selection (select.ts).
 *
 * Memory is wasm32: operands of one call (A + B + out) must fit in 4 GiB minus the scratch.
 */
import type { Backend, MatmulShape } from '../../backend.js';
import { checkMatmulShape, operandLength } from '../matmul-shape.js';

/** Options of createWasmBackend. */
export interface WasmBackendOptions {
  /** Threads that share each large product, the calling thread included (default 2). */
  threads?: number;
  /** Products with fewer multiply-adds than this run on the calling thread only (default 2^21:
   * below about 128^3, waking a worker costs more than it saves on this 2-core machine). */
  parallelThreshold?: number;
}

/** What a kernel thread receives (thread-loop.mjs): the module, the shared memory and control words. */
export interface KernelThreadData {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  control: SharedArrayBuffer;
  index: number;
  layout: Record<'GENERATION' | 'PENDING' | 'PARAMS' | 'COUNT' | 'STOP' | 'READY' | 'FAILED', number>;
}

/** A started kernel thread, as the host made it. */
export interface KernelThread {
  terminate(): void;
}

/** The wasm backend plus what a host that cannot block at start (a browser tab) needs. */
export interface WasmBackend extends Backend {
  /** Resolves once every kernel thread has instantiated the module (a page's workers start only
   * while their creator's event loop turns, so it must await this before the first product). */
  threadsReady(): Promise<void>;
}

/** Creates the backend over a compiled kernels.wasm; `startThread` starts one kernel thread. */
export function createWasmEngine(
  module: WebAssembly.Module,
  options: WasmBackendOptions,
  startThread: (data: KernelThreadData) => KernelThread,
): WasmBackend {
  const threads = options.threads ?? 2;
  if (!Number.isInteger(threads) || threads < 1 || threads > 64) {
    throw new Error(`wasm backend: threads must be an integer in 1..64, got ${threads}`);
  }
  return new WasmEngine(module, threads, options.parallelThreshold ?? 1 << 21, startThread);
}

// Control words shared with thread-loop.mjs (Int32 indices); each thread receives them in its
// KernelThreadData, so this is the only place the layout is written down.
const CONTROL_GENERATION = 0;
const CONTROL_PENDING = 1;
const CONTROL_PARAMS = 2;
const CONTROL_COUNT = 3;
const CONTROL_STOP = 4;
const CONTROL_READY = 5;
const CONTROL_FAILED = 6;
const CONTROL_WORDS = 8;

const PAGE_BYTES = 65536;
const MAX_PAGES = 65536; // 4 GiB, as declared by the module (--max-memory)
const INITIAL_PAGES = 32; // >= the module's declared minimum (data + 16 KiB stack)
const PARAMS_WORDS = 15; // sizeof(Params) / 4 in kernels.c
const WORKER_START_TIMEOUT_MS = 10_000;

interface KernelExports {
  sgemm_thread(params: number, index: number, count: number): void;
  sgemm_scratch_bytes(): number;
  __heap_base: WebAssembly.Global;
}

const align = (value: number, to: number): number => Math.ceil(value / to) * to;

class WasmEngine implements WasmBackend {
  readonly name = 'wasm';
  private readonly memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: MAX_PAGES, shared: true });
  private readonly kernels: KernelExports;
  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  private readonly workers: KernelThread[] = [];
  // Layout: [module data | params | scratch per thread | A | B | out], grown per call as needed.
  private readonly paramsAddress: number;
  private readonly scratchAddress: number;
  private readonly scratchBytes: number;
  private readonly dataAddress: number;
  private workersReady: boolean;
  private disposed = false;

  constructor(
    module: WebAssembly.Module,
    readonly threads: number,
    private readonly parallelThreshold: number,
    startThread: (data: KernelThreadData) => KernelThread,
  ) {
    this.kernels = new WebAssembly.Instance(module, { env: { memory: this.memory } })
      .exports as unknown as KernelExports;
    this.paramsAddress = align(this.kernels.__heap_base.value as number, 64);
    this.scratchBytes = align(this.kernels.sgemm_scratch_bytes(), 64);
    this.scratchAddress = this.paramsAddress + 64;
    this.dataAddress = this.scratchAddress + threads * this.scratchBytes;
    this.ensureBytes(this.dataAddress);
    for (let index = 1; index < threads; index++) {
      this.workers.push(
        startThread({
          module,
          memory: this.memory,
          control: this.control.buffer as SharedArrayBuffer,
          index,
          layout: {
            GENERATION: CONTROL_GENERATION,
            PENDING: CONTROL_PENDING,
            PARAMS: CONTROL_PARAMS,
            COUNT: CONTROL_COUNT,
            STOP: CONTROL_STOP,
            READY: CONTROL_READY,
            FAILED: CONTROL_FAILED,
          },
        }),
      );
    }
    this.workersReady = threads === 1;
  }

  matmul(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape): void {
    if (this.disposed) throw new Error('wasm matmul: backend was disposed');
    checkMatmulShape('wasm', a, b, out, shape);
    const { batch, M, K, N, aBatchStride, bBatchStride, accumulate } = shape;
    const outLength = batch * M * N;
    if (outLength === 0) return;
    if (K === 0) {
      if (!accumulate) out.fill(0, 0, outLength);
      return;
    }
    const aLength = operandLength(batch, aBatchStride, M * K);
    const bLength = operandLength(batch, bBatchStride, K * N);
    const aAddress = this.dataAddress;
    const bAddress = align(aAddress + aLength * 4, 64);
    const outAddress = align(bAddress + bLength * 4, 64);
    this.ensureBytes(outAddress + outLength * 4);

    const heap = new Float32Array(this.memory.buffer);
    heap.set(a.subarray(0, aLength), aAddress / 4);
    heap.set(b.subarray(0, bLength), bAddress / 4);
    if (accumulate) heap.set(out.subarray(0, outLength), outAddress / 4);
    new Int32Array(this.memory.buffer, this.paramsAddress, PARAMS_WORDS).set([
      aAddress,
      bAddress,
      outAddress,
      batch,
      M,
      K,
      N,
      shape.transposeA ? 1 : 0,
      shape.transposeB ? 1 : 0,
      aBatchStride,
      bBatchStride,
      accumulate ? 1 : 0,
      this.scratchAddress,
      this.scratchBytes,
      0,
    ]);
    if (this.workers.length > 0 && batch * M * N * K >= this.parallelThreshold) this.runParallel();
    else this.kernels.sgemm_thread(this.paramsAddress, 0, 1);
    out.set(heap.subarray(outAddress / 4, outAddress / 4 + outLength));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    Atomics.store(this.control, CONTROL_STOP, 1);
    Atomics.add(this.control, CONTROL_GENERATION, 1);
    Atomics.notify(this.control, CONTROL_GENERATION);
    for (const worker of this.workers) worker.terminate();
  }

  private ensureBytes(bytes: number): void {
    const pages = Math.ceil(bytes / PAGE_BYTES);
    if (pages > MAX_PAGES) {
      throw new Error(`wasm matmul: operands need ${bytes} bytes, over the 4 GiB of wasm32 memory`);
    }
    const current = this.memory.buffer.byteLength / PAGE_BYTES;
    if (pages > current) this.memory.grow(pages - current);
  }

  async threadsReady(): Promise<void> {
    const deadline = Date.now() + WORKER_START_TIMEOUT_MS;
    while (Atomics.load(this.control, CONTROL_READY) < this.workers.length) {
      if (Date.now() > deadline) throw new Error(this.startFailure());
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.workersReady = true;
  }

  private startFailure(): string {
    const ready = Atomics.load(this.control, CONTROL_READY);
    return (
      `wasm backend: only ${ready} of ${this.workers.length} worker threads started within ` +
      `${WORKER_START_TIMEOUT_MS / 1000} s (could the thread script or kernels.wasm not load?)`
    );
  }

  /** Blocks until every worker has instantiated the module (only before the first parallel call). */
  private awaitWorkers(): void {
    const deadline = Date.now() + WORKER_START_TIMEOUT_MS;
    for (;;) {
      const ready = Atomics.load(this.control, CONTROL_READY);
      if (ready === this.workers.length) break;
      if (Date.now() > deadline) throw new Error(this.startFailure());
      Atomics.wait(this.control, CONTROL_READY, ready, 100);
    }
    this.workersReady = true;
  }

  /** Wakes the workers, runs the calling thread's share, then waits for theirs (Backend is synchronous). */
  private runParallel(): void {
    if (!this.workersReady) this.awaitWorkers();
    const control = this.control;
    Atomics.store(control, CONTROL_PARAMS, this.paramsAddress);
    Atomics.store(control, CONTROL_COUNT, this.threads);
    Atomics.store(control, CONTROL_PENDING, this.workers.length);
    Atomics.add(control, CONTROL_GENERATION, 1);
    Atomics.notify(control, CONTROL_GENERATION);
    this.kernels.sgemm_thread(this.paramsAddress, 0, this.threads);
    for (;;) {
      const pending = Atomics.load(control, CONTROL_PENDING);
      if (pending === 0) break;
      Atomics.wait(control, CONTROL_PENDING, pending);
    }
    if (Atomics.exchange(control, CONTROL_FAILED, 0) !== 0) {
      throw new Error('wasm matmul: a worker thread failed (see its message above)');
    }
  }
}
