/**
 * Float32Arrays allocated without zero-filling, for outputs that the caller writes in full before any
 * element is read (a product with accumulate false, a row kernel's result). `new Float32Array(n)` clears
 * n·4 bytes first: about 3 GB a step on the 25M training step, a memset that took a few percent of it.
 *
 * Is: Node's uninitialized allocation (Buffer.allocUnsafeSlow, its own ArrayBuffer, never the shared
 * pool) for arrays of 64 KiB and more; small arrays and runtimes without Buffer get a zeroed array.
 * Is not: a pool or an arena (the memory is freed with the array as usual), or for arrays any path
 * reads before writing (accumulations, partially written outputs): those keep `new Float32Array`.
 */

/** Below this many bytes the clearing costs less than the separate allocation path. */
const UNINITIALIZED_MIN_BYTES = 1 << 16;

/** An array of `length` floats with unspecified contents: write every element before reading any. */
export function uninitializedFloats(length: number): Float32Array {
  const bytes = length * 4;
  if (bytes < UNINITIALIZED_MIN_BYTES || typeof Buffer === 'undefined') return new Float32Array(length);
  const storage = Buffer.allocUnsafeSlow(bytes);
  return new Float32Array(storage.buffer, storage.byteOffset, length);
}
