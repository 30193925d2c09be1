/**
 * The `wasm` backend in Node: kernels.wasm read from disk beside this file and compiled once per
 * process, and its kernel threads as worker_threads running worker.mjs. The engine itself (memory
 * layout, dispatch) is wasm-gemm.ts, which a browser tab drives with fetch and Web Workers instead.
 *
 * Is not: the arithmetic (kernels.c) nor backend selection (host-backends.ts, select.ts).
 */
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Backend } from '../../backend.js';
import { createWasmEngine, type WasmBackendOptions } from './wasm-gemm.js';

let compiled: WebAssembly.Module | undefined;

/** Compiles kernels.wasm once per process (synchronous: Node allows it for any module size). */
function kernelModule(): WebAssembly.Module {
  compiled ??= new WebAssembly.Module(readFileSync(new URL('./kernels.wasm', import.meta.url)));
  return compiled;
}

/** Creates a wasm backend; throws if WebAssembly SIMD or shared memory is unavailable. */
export function createWasmBackend(options: WasmBackendOptions = {}): Backend {
  return createWasmEngine(kernelModule(), options, (workerData) => {
    const worker = new Worker(new URL('./worker.mjs', import.meta.url), {
      workerData,
      // worker.mjs is plain JS: it needs no loader (tsx) and must not inherit flags such as
      // --input-type or --eval, which make a worker fail before it can signal the calling thread.
      execArgv: [],
    });
    worker.unref(); // an idle backend must not keep the process alive
    return { terminate: () => void worker.terminate() };
  });
}
