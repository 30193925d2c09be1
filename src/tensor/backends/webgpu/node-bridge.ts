/**
 * The webgpu backend in Node: a worker_threads Worker (device-thread.mjs) owns Dawn for Node (the
 * optional `webgpu` package); this file is the calling thread's end of that channel and opens it.
 *
 * Is: the transport. A request is posted on a MessageChannel, the calling thread blocks in Atomics.wait
 * on a shared word until the device thread has answered, and reads the answer with receiveMessageOnPort.
 * Is not: the Backend (webgpu-backend.ts) or the GPU work (device-requests.mjs). A browser tab has its
 * own transport (src/browser/webgpu-bridge.ts): receiveMessageOnPort does not exist there.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import {
  type DeviceChannel,
  type WebGpuAdapterSummary,
  type WebGpuBackend,
  type WebGpuBackendOptions,
  WebGpuUnavailableError,
  webgpuBackendOn,
} from './webgpu-backend.js';

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

class DeviceBridge implements DeviceChannel {
  private readonly control = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private readonly worker: Worker;
  private closed = false;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(new URL('./device-thread.mjs', import.meta.url), {
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
  return webgpuBackendOn(bridge, adapter, options);
}
