/**
 * A wasm backend kernel thread in a browser tab: a Web Worker that receives the compiled module, the
 * shared memory and the control words in its first message (src/browser/wasm-backend.ts) and runs
 * the same loop as Node's worker_threads (src/tensor/backends/wasm/thread-loop.mjs).
 *
 * Is: plain JavaScript, bundled by src/web/build-page.ts as wasm-thread.js. Is not: the training
 * worker; it only runs its share of each matrix product.
 */
import { runKernelThread } from '../tensor/backends/wasm/thread-loop.mjs';

globalThis.onmessage = ({ data }) => {
  globalThis.onmessage = null;
  runKernelThread(data);
};
