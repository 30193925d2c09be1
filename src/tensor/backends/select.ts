/**
 * Backend selection: which kernel backend the tensor layer uses, chosen once per process.
 *
 * Is: the registry of backend factories (js, wasm, native, webgpu), the default choice (explicit
 * setBackend(), else env GRPO_BACKEND, else the fastest CPU backend that loads: native, wasm, js), the thread
 * count (option, else env GRPO_THREADS, else min(2, CPU count)), and the one line printed to stderr
 * naming the choice. Is not: any kernel code.
 */
import { availableParallelism } from 'node:os';
import type { Backend, BlockCopy } from '../backend.js';
import { createJsBackend } from './js.js';
import { loadNativeBackend, nativeAddonStatus } from './native/native-backend.js';
import { createWasmBackend } from './wasm/wasm-backend.js';
import { createWebGpuBackend, WebGpuUnavailableError } from './webgpu/webgpu-backend.js';

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

let current: Backend | undefined;
let ownsCurrent = false;

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

function announce(backend: Backend): void {
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

/** The process-wide backend, created on first use from env GRPO_BACKEND or the fastest available. */
export function getBackend(): Backend {
  if (!current) {
    const requested = process.env.GRPO_BACKEND;
    current = requested ? createBackend(requested) : createFastest();
    ownsCurrent = true;
    announce(current);
  }
  return current;
}

/**
 * Runs `fn` promising that the tensors' values do not change until it returns (a model's weights while
 * it generates), so the current backend may keep them in a faster layout for products (see
 * Backend.withConstantOperands). Changing one of them inside `fn` would give stale products.
 */
export function withConstantWeights<T>(tensors: Iterable<{ readonly data: Float32Array }>, fn: () => T): T {
  const backend = getBackend();
  if (!backend.withConstantOperands) return fn();
  return backend.withConstantOperands(
    Array.from(tensors, (tensor) => tensor.data),
    fn,
  );
}

/**
 * out[i] = a[i] + b[i] on the current backend's sum when it has one (threaded in native), else one loop:
 * the same floats either way (each is one correctly rounded float32 addition). `out` may be `a`.
 */
export function addArrays(a: Float32Array, b: Float32Array, out: Float32Array): void {
  const backend = getBackend();
  if (backend.addArrays) backend.addArrays(a, b, out);
  else for (let i = 0; i < out.length; i++) out[i] = a[i] + b[i];
}

/**
 * Σ x[i]² in double on the current backend's threaded pass when it has one, else one loop in order (the
 * backend's shares regroup the sum: the same value within a few double roundings).
 */
export function sumOfSquares(x: Float32Array): number {
  const backend = getBackend();
  if (backend.sumOfSquares) return backend.sumOfSquares(x);
  let total = 0;
  for (let i = 0; i < x.length; i++) total += x[i] * x[i];
  return total;
}

/** x[i] *= factor in place (the product in double, rounded to float32), threaded where the backend has it. */
export function scaleArray(x: Float32Array, factor: number): void {
  const backend = getBackend();
  if (backend.scaleArray) backend.scaleArray(x, factor);
  else for (let i = 0; i < x.length; i++) x[i] *= factor;
}

// Below this many floats a block is copied by a loop: subarray + set allocates a view per block.
const LOOP_COPY_MAX = 256;

/**
 * Strided block copy on the current backend's (one memcpy per block in native), else per block a loop or
 * subarray + set: the same floats either way. A decode step writes B·Hkv blocks of D floats per layer into the
 * KV cache; as a JavaScript loop that was ~5% of a 25M model's rollout.
 */
export function copyBlocks(source: Float32Array, target: Float32Array, blocks: BlockCopy): void {
  const backend = getBackend();
  if (backend.copyBlocks) return backend.copyBlocks(source, target, blocks);
  const { count, length, sourceStart, sourceStride, targetStart, targetStride } = blocks;
  for (let i = 0; i < count; i++) {
    const [from, to] = [sourceStart + i * sourceStride, targetStart + i * targetStride];
    if (length > LOOP_COPY_MAX) target.set(source.subarray(from, from + length), to);
    else for (let j = 0; j < length; j++) target[to + j] = source[from + j];
  }
}

/**
 * Replaces the process-wide backend with a named one (created here, with `options`) or a given
 * instance (owned by the caller). A backend this module created is disposed when replaced.
 */
export function setBackend(nameOrBackend: string | Backend, options: BackendOptions = {}): Backend {
  const next = typeof nameOrBackend === 'string' ? createBackend(nameOrBackend, options) : nameOrBackend;
  if (current && ownsCurrent && current !== next) current.dispose();
  current = next;
  ownsCurrent = typeof nameOrBackend === 'string';
  announce(current);
  return current;
}
