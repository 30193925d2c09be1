/**
 * The backends a Node process can create: js, wasm (worker_threads), native (the N-API addon) and
 * webgpu (Dawn); the default choice (env GRPO_BACKEND, else the fastest CPU backend that loads:
 * native, wasm, js), the thread count (option, else env GRPO_THREADS, else min(2, CPU count)), and
 * the one line printed to stderr naming the choice.
 *
 * Is not: the process-wide current backend (select.ts). The page bundle of `grpo web` replaces this
 * file by src/browser/host-backends.ts (the same exports), so no Node module reaches a browser.
 */
import { availableParallelism } from 'node:os';
import type { Backend } from '../backend.js';
import { createJsBackend } from './js.js';
import { loadNativeBackend, nativeAddonStatus } from './native/native-backend.js';
import { createWasmBackend } from './wasm/wasm-backend.js';
import { createWebGpuBackend } from './webgpu/node-bridge.js';
import { WebGpuUnavailableError } from './webgpu/webgpu-backend.js';

/** Options every backend factory accepts. */
export interface BackendOptions {
  /** Threads for large kernels, the calling thread included (default: env GRPO_THREADS, else min(2, CPUs)). */
  threads?: number;
}

type BackendFactory = (options: { threads: number }) => Backend;

/** A backend that cannot run here (no addon, no WebAssembly threads), as opposed to a setting that is wrong. */
class BackendUnavailableError extends Error {}

function createWasmOrUnavailable(threads: number): Backend {
  try {
    return createWasmBackend({ threads });
  } catch (error) {
    throw new BackendUnavailableError(`backend "wasm" is not available: ${(error as Error).message}`);
  }
}

const factories: Record<string, BackendFactory> = {
  js: () => createJsBackend(),
  wasm: (options) => createWasmOrUnavailable(options.threads),
  // loadNativeBackend returns null when the addon is absent (not built, no compiler at install);
  // the fastest-available choice then falls through to wasm.
  native: (options) => {
    const backend = loadNativeBackend({ threads: options.threads });
    if (!backend) throw new BackendUnavailableError(`backend "native" is not available: ${nativeAddonStatus().reason}`);
    return backend;
  },
  // Only when asked for by name: a GPU is never chosen behind the user's back, and lavapipe (a software
  // adapter) is far slower than the CPU backends.
  webgpu: (options) => {
    try {
      // While activations live in host memory, the row kernels run on the fastest CPU backend.
      return createWebGpuBackend({ host: createFastestCpu(options.threads) });
    } catch (error) {
      if (error instanceof WebGpuUnavailableError) {
        throw new BackendUnavailableError(`backend "webgpu" is not available: ${error.message}`);
      }
      throw error;
    }
  },
};

/** Backend names in order of preference when none is requested. */
const preference = ['native', 'wasm', 'js'];

/** The names createBackend() accepts. */
export const backendNames: readonly string[] = Object.keys(factories);

function defaultThreads(): number {
  const fromEnv = process.env.GRPO_THREADS;
  if (fromEnv !== undefined && fromEnv !== '') {
    const threads = Number(fromEnv);
    if (!Number.isInteger(threads) || threads < 1) {
      throw new Error(`GRPO_THREADS must be a positive integer, got "${fromEnv}"`);
    }
    return threads;
  }
  return Math.max(1, Math.min(2, availableParallelism()));
}

/** Creates a backend by name; throws an error listing the known names for an unknown one. */
export function createBackend(name: string, options: BackendOptions = {}): Backend {
  const factory = Object.hasOwn(factories, name) ? factories[name] : undefined;
  if (!factory) throw new Error(`unknown backend "${name}"; known backends: ${backendNames.join(', ')}`);
  return factory({ threads: options.threads ?? defaultThreads() });
}

/** Prints the chosen backend once to stderr (not under vitest or GRPO_QUIET=1). */
export function announce(backend: Backend): void {
  if (process.env.GRPO_QUIET === '1' || process.env.VITEST) return;
  const threads = backend.threads === 1 ? '1 thread' : `${backend.threads} threads`;
  process.stderr.write(`grpo: backend ${backend.name} (${backend.detail ?? threads})\n`);
}

/** The first backend in preference order that loads (js always does). */
function createFastest(): Backend {
  return createFastestCpu(defaultThreads()); // outside any try: a bad GRPO_THREADS is an error, not "unavailable"
}

function createFastestCpu(threads: number): Backend {
  for (const name of preference) {
    try {
      return createBackend(name, { threads });
    } catch (error) {
      // Not available here (no addon, no WebAssembly SIMD/threads): try the next one. A bad setting
      // (GRPO_NATIVE_PACK_MB=lots) is the user's error, not a reason to run quietly on a slower backend.
      if (!(error instanceof BackendUnavailableError)) throw error;
    }
  }
  throw new Error('no backend could be created'); // unreachable: js always loads
}

/** The backend a process uses when none was set: env GRPO_BACKEND, else the fastest that loads. */
export function createDefaultBackend(): Backend {
  const requested = process.env.GRPO_BACKEND;
  return requested ? createBackend(requested) : createFastest();
}
