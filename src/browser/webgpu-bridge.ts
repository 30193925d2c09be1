/**
 * The webgpu backend in a browser tab: a Web Worker (webgpu-thread.js) owns the browser's GPU
 * (`navigator.gpu`); this file is the training worker's end of that channel and opens it.
 *
 * Is: the transport. A browser has no receiveMessageOnPort, so an answer cannot reach a thread blocked in
 * Atomics.wait as a message: each request carries shared control words and a shared reply buffer sized
 * for its answer, the device thread writes the answer there (webgpu-thread.mjs's layout) and notifies,
 * and this thread decodes it. Opening is asynchronous (the device thread starts only while this thread's
 * event loop turns); every request after it blocks, as in Node (node-bridge.ts).
 * Is not: the Backend (src/tensor/backends/webgpu/webgpu-backend.ts) or the GPU work. Shared memory
 * exists only in a cross-origin isolated page, which `grpo web` arranges.
 */
import type { Backend } from '../tensor/backend.js';
import {
  type DeviceChannel,
  type WebGpuAdapterSummary,
  type WebGpuBackend,
  webgpuBackendOn,
} from '../tensor/backends/webgpu/webgpu-backend.js';

const OPEN_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 600_000;
/** Room for an answer's JSON header (an adapter summary is a few KiB). */
const HEADER_BYTES = 64 * 1024;

/** A browser dedicated Worker, as much of it as this file uses. */
interface DeviceWorker {
  postMessage(message: unknown, transfer?: ArrayBuffer[]): void;
  onerror: ((event: { message?: string }) => void) | null;
  terminate(): void;
}

class PageDeviceChannel implements DeviceChannel {
  private readonly control = new Int32Array(new SharedArrayBuffer(4));
  private reply = new SharedArrayBuffer(HEADER_BYTES);
  private closed = false;
  failure: string | null = null;

  constructor(private readonly worker: DeviceWorker) {
    worker.onerror = (event) => (this.failure = event.message || 'webgpu-thread.js failed to load');
  }

  /** Posts a request with a reply buffer big enough for `replyFloats` floats besides the header. */
  private post(message: Record<string, unknown>, transfer: ArrayBuffer[]): void {
    if (this.closed) throw new Error('webgpu backend: used after dispose()');
    const needed = HEADER_BYTES + Number(message.replyFloats ?? 0) * 4;
    if (this.reply.byteLength < needed) this.reply = new SharedArrayBuffer(needed);
    Atomics.store(this.control, 0, 0);
    this.worker.postMessage({ request: message, control: this.control, reply: this.reply }, transfer);
  }

  /** The answer in the reply buffer: its header's fields, with float arrays copied out of shared memory. */
  private answer<T>(op: string): T {
    const view = new DataView(this.reply);
    const headerLength = view.getUint32(0, true);
    // TextDecoder refuses views of shared memory: the header is copied out first.
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(this.reply, 4, headerLength).slice())) as Record<
      string,
      unknown
    >;
    let at = 4 + Math.ceil(headerLength / 4) * 4;
    for (const [key, value] of Object.entries(header)) {
      if (value && typeof value === 'object' && 'floats' in value) {
        const length = (value as { floats: number }).floats;
        header[key] = new Float32Array(this.reply, at, length).slice();
        at += length * 4;
      }
    }
    if (typeof header.error === 'string') throw new Error(`webgpu ${op}: ${header.error}`);
    return header as T;
  }

  request<T>(message: Record<string, unknown>, transfer: ArrayBuffer[] = [], timeoutMs = REQUEST_TIMEOUT_MS): T {
    this.post(message, transfer);
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(this.control, 0) === 0) {
      if (Atomics.wait(this.control, 0, 0, Math.max(0, deadline - Date.now())) === 'timed-out') {
        this.close();
        throw new Error(
          `webgpu backend: the device thread did not answer "${String(message.op)}" within ${timeoutMs / 1000} s`,
        );
      }
    }
    return this.answer<T>(String(message.op));
  }

  /** The first request, waited for without blocking (the device thread is still starting). */
  async requestAsync<T>(message: Record<string, unknown>, timeoutMs: number): Promise<T> {
    this.post(message, []);
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(this.control, 0) === 0) {
      if (this.failure !== null) throw new Error(this.failure);
      if (Date.now() > deadline) throw new Error(`the device thread did not open within ${timeoutMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return this.answer<T>(String(message.op));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.worker.terminate();
  }
}

/**
 * Starts the device thread, opens the adapter (high-performance preference) and returns the backend,
 * with `host`'s row kernels (the page's wasm backend) for the work still in host memory. Throws one
 * sentence when the page has no WebGPU or no adapter.
 */
export async function createPageWebGpuBackend(host: Backend): Promise<WebGpuBackend> {
  if (!globalThis.crossOriginIsolated)
    throw new Error('the page is not cross-origin isolated (no COOP/COEP headers), so it has no shared memory');
  const worker = new Worker(new URL('webgpu-thread.js', globalThis.location.href), {
    type: 'module',
  }) as unknown as DeviceWorker;
  const channel = new PageDeviceChannel(worker);
  try {
    const { adapter } = await channel.requestAsync<{ adapter: WebGpuAdapterSummary }>(
      { op: 'open', powerPreference: 'high-performance' },
      OPEN_TIMEOUT_MS,
    );
    return webgpuBackendOn(channel, adapter, { host });
  } catch (error) {
    channel.close();
    throw new Error((error as Error).message.replace(/^webgpu open: /, ''));
  }
}
