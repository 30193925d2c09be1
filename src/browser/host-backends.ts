/**
 * The page bundle's stand-in for src/tensor/backends/host-backends.ts: by name, a browser tab gets
 * the js backend. wasm is built asynchronously (its kernels are fetched and its threads must start
 * before the first product), so the page's worker makes it itself (wasm-backend.ts) and hands it to
 * setBackend, and so is webgpu (webgpu-bridge.ts); native is an N-API addon: each is refused by name here with one sentence.
 */
import type { Backend } from '../tensor/backend.js';
import { createJsBackend } from '../tensor/backends/js.js';
import type * as NodeBackends from '../tensor/backends/host-backends.js';

export type { BackendOptions } from '../tensor/backends/host-backends.js';

const refusals: Record<string, string> = {
  wasm: 'backend "wasm" is created asynchronously in a browser tab: use createPageWasmBackend (src/browser/wasm-backend.ts)',
  native: 'backend "native" is not available in a browser tab: it is an N-API addon for Node; the page trains on js',
  webgpu:
    'backend "webgpu" is created asynchronously in a browser tab: use createPageWebGpuBackend (src/browser/webgpu-bridge.ts)',
};

export const backendNames: typeof NodeBackends.backendNames = ['js', ...Object.keys(refusals)];

export const createBackend: typeof NodeBackends.createBackend = (name) => {
  if (name === 'js') return createJsBackend();
  throw new Error(refusals[name] ?? `unknown backend "${name}"; known backends: ${backendNames.join(', ')}`);
};

export const createDefaultBackend: typeof NodeBackends.createDefaultBackend = () => createJsBackend();

/** The page shows its backend itself; nothing is printed. */
export const announce: typeof NodeBackends.announce = (_backend: Backend) => undefined;
