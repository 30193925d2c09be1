/**
 * A wasm backend kernel thread's loop: instantiates the GEMM module over the shared memory it is
 * given, signals READY, then runs its share of each product when the calling thread bumps the
 * generation counter, until STOP. It blocks in Atomics.wait, so it runs only on a worker thread
 * (Node worker_threads: worker.mjs; a browser tab's Web Worker: src/browser/wasm-thread.mjs).
 *
 * Is: plain JavaScript (not TypeScript) so that it runs under tsx/vitest and from dist/ without a
 * build step. Is not: a general thread pool; it only knows `sgemm_thread`. The control-word layout
 * comes from wasm-gemm.ts (CONTROL_*) in `data.layout`.
 *
 * @param {{ module: WebAssembly.Module, memory: WebAssembly.Memory, control: SharedArrayBuffer, index: number, layout: Record<string, number> }} data
 */
export function runKernelThread(data) {
  const { module, memory, control, index, layout } = data;
  const { GENERATION, PENDING, PARAMS, COUNT, STOP, READY, FAILED } = layout;
  const words = new Int32Array(control);
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  const run = instance.exports.sgemm_thread;

  Atomics.add(words, READY, 1);
  Atomics.notify(words, READY);

  let seen = 0;
  for (;;) {
    Atomics.wait(words, GENERATION, seen);
    seen = Atomics.load(words, GENERATION);
    if (Atomics.load(words, STOP) !== 0) break;
    try {
      run(Atomics.load(words, PARAMS), index, Atomics.load(words, COUNT));
    } catch (error) {
      // The calling thread cannot see this exception; flag it so it can throw instead of hanging.
      Atomics.store(words, FAILED, 1);
      console.error(`grpo wasm worker ${index}:`, error);
    }
    if (Atomics.sub(words, PENDING, 1) === 1) Atomics.notify(words, PENDING);
  }
}
