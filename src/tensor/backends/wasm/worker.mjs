/**
 * A wasm backend worker thread in Node: runs thread-loop.mjs over the workerData that
 * wasm-backend.ts gives it (the module, the shared memory and the control words).
 *
 * Is: plain JavaScript so that it runs under tsx/vitest and from dist/ without a build step.
 */
import { workerData } from 'node:worker_threads';
import { runKernelThread } from './thread-loop.mjs';

runKernelThread(workerData);
