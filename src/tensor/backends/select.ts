/**
 * Backend selection: which kernel backend the tensor layer uses, chosen once per process (explicit
 * setBackend(), else host-backends.ts's default), and the helpers that call a backend's optional
 * kernels with a plain-loop fallback. Is not: any kernel code, nor the backend factories
 * (host-backends.ts, which the browser bundle replaces).
 */
import type { Backend, BlockCopy } from '../backend.js';
import { announce, createBackend, createDefaultBackend, type BackendOptions } from './host-backends.js';

export { backendNames, createBackend, type BackendOptions } from './host-backends.js';

let current: Backend | undefined;
let ownsCurrent = false;

/** The process-wide backend, created on first use from env GRPO_BACKEND or the fastest available. */
export function getBackend(): Backend {
  if (!current) {
    current = createDefaultBackend();
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
 * Runs `fn` (a training forward and backward, or a frozen model's forward) with the weights kept on the
 * device when the current backend's products read device memory (Backend.deviceMemory), else just runs
 * it: the CPU backends' products and floats stay as they are. The same promise as withConstantWeights:
 * the weights do not change until `fn` returns (the optimiser steps after it).
 */
export function withTrainingWeights<T>(tensors: Iterable<{ readonly data: Float32Array }>, fn: () => T): T {
  return getBackend().deviceMemory ? withConstantWeights(tensors, fn) : fn();
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
