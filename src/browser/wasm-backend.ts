/**
 * The wasm backend in a browser tab: kernels.wasm fetched from the page's own folder (served beside
 * worker.js by `grpo web` and written by `--out`) and compiled asynchronously, its kernel threads as
 * Web Workers running wasm-thread.js over the same SharedArrayBuffer memory. The engine is the one
 * Node uses (src/tensor/backends/wasm/wasm-gemm.ts).
 *
 * Is not: backend selection (worker.ts asks for it by name). Shared WebAssembly memory exists only in
 * a cross-origin isolated page (COOP/COEP headers, which `grpo web` sends): elsewhere creating it
 * throws, and the caller trains on js instead.
 */
import { createWasmEngine, type WasmBackend } from '../tensor/backends/wasm/wasm-gemm.js';

/** Kernel threads for the page's wasm backend, the training worker's own included: up to 4 of the CPUs. */
export function pageWasmThreads(): number {
  return Math.max(1, Math.min(4, globalThis.navigator?.hardwareConcurrency ?? 1));
}

/** Fetches and compiles kernels.wasm, starts `threads − 1` kernel threads and waits until they run. */
export async function createPageWasmBackend(threads: number): Promise<WasmBackend> {
  if (!globalThis.crossOriginIsolated)
    throw new Error('the page is not cross-origin isolated (no COOP/COEP headers), so it has no shared memory');
  const here = globalThis.location.href;
  const response = await fetch(new URL('kernels.wasm', here));
  if (!response.ok) throw new Error(`kernels.wasm: HTTP ${response.status}`);
  const module = await WebAssembly.compile(await response.arrayBuffer());
  const failures: string[] = [];
  const backend = createWasmEngine(module, { threads }, (data) => {
    const worker = new Worker(new URL('wasm-thread.js', here), { type: 'module' });
    worker.onerror = (event) => failures.push(event.message || 'wasm-thread.js failed to load');
    worker.postMessage(data);
    return { terminate: () => worker.terminate() };
  });
  try {
    await backend.threadsReady();
  } catch (error) {
    backend.dispose();
    throw new Error(failures[0] ?? (error as Error).message);
  }
  return backend;
}
