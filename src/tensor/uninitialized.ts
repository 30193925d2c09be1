/**
 * Float32Arrays allocated without zero-filling, for outputs that the caller writes in full before any
 * element is read (a product with accumulate false, a row kernel's result). `new Float32Array(n)` clears
 * n·4 bytes first: about 3 GB a step on the 25M training step, a memset that took a few percent of it.
 * Inside withStepArena (a generation's decode loop) the arrays come from an arena instead, reused step
 * after step: see there.
 *
 * Is: Node's uninitialized allocation (Buffer.allocUnsafeSlow, its own ArrayBuffer, never the shared
 * pool) for arrays of 64 KiB and more; small arrays and runtimes without Buffer get a zeroed array.
 * Is not: a general pool (outside the arena the memory is freed with the array as usual), or for arrays
 * any path reads before writing (accumulations, partially written outputs): those keep `new Float32Array`.
 */

/** Below this many bytes the clearing costs less than the separate allocation path. */
const UNINITIALIZED_MIN_BYTES = 1 << 16;

/** Arrays handed out since the last step began, by length, and the ones kept from earlier steps. */
class StepArena {
  private readonly byLength = new Map<number, { arrays: Float32Array[]; used: number }>();

  take(length: number): Float32Array {
    let kept = this.byLength.get(length);
    if (!kept) this.byLength.set(length, (kept = { arrays: [], used: 0 }));
    if (kept.used === kept.arrays.length) kept.arrays.push(allocate(length));
    return kept.arrays[kept.used++];
  }

  nextStep(): void {
    for (const kept of this.byLength.values()) kept.used = 0;
  }
}

let arena: StepArena | null = null;

function allocate(length: number): Float32Array {
  const bytes = length * 4;
  if (bytes < UNINITIALIZED_MIN_BYTES || typeof Buffer === 'undefined') return new Float32Array(length);
  const storage = Buffer.allocUnsafeSlow(bytes);
  return new Float32Array(storage.buffer, storage.byteOffset, length);
}

/** An array of `length` floats with unspecified contents: write every element before reading any. */
export function uninitializedFloats(length: number): Float32Array {
  return arena ? arena.take(length) : allocate(length);
}

/**
 * Runs `fn` with an arena behind uninitializedFloats: every array handed out is kept, and after each
 * `nextStep()` the same lengths get the same arrays again. For a decode loop run without a graph, whose
 * step outputs (norms, RoPE, SwiGLU, residual sums) are read within the step and never kept: a 25M
 * model's decode step otherwise made ~5.5 MB of new array buffers at 64 rows, and in a trainer's
 * process V8 paces full collections by those bytes (~15 mark-compacts per 32-token rollout, their
 * marking on a thread the native pool needs). An array that outlives its step must not come from here.
 */
export function withStepArena<T>(fn: (nextStep: () => void) => T): T {
  const previous = arena;
  const own = new StepArena();
  arena = own;
  try {
    return fn(() => own.nextStep());
  } finally {
    arena = previous;
  }
}
