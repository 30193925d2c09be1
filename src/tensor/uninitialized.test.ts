/**
 * uninitializedFloats: each large array has its own memory (never a view into Node's shared Buffer pool,
 * where two arrays could overlap), and small ones are ordinary zeroed arrays. withStepArena: within a step
 * every array is distinct, the next step gets the same arrays back, and the arena ends with its scope.
 * (That a decode loop under it generates the same tokens and logprobs: sampling/sampler.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { uninitializedFloats, withStepArena } from './uninitialized.js';

describe('uninitializedFloats', () => {
  it('gives large arrays their own ArrayBuffer and small ones zeros', () => {
    const arrays = [0, 1, 2].map(() => uninitializedFloats(1 << 16));
    for (const array of arrays) {
      expect(array.length).toBe(1 << 16);
      expect(array.byteOffset).toBe(0);
      expect(array.buffer.byteLength).toBe(array.byteLength);
    }
    expect(new Set(arrays.map((a) => a.buffer)).size).toBe(3);
    expect(Array.from(uninitializedFloats(5))).toEqual([0, 0, 0, 0, 0]);
  });
});

describe('withStepArena', () => {
  it("reuses a step's arrays in the next step, never twice within one, and only inside its scope", () => {
    const lengths = [1 << 16, 7, 1 << 16, 300];
    const steps = withStepArena((nextStep) =>
      [0, 1, 2].map(() => {
        nextStep();
        return lengths.map((length) => uninitializedFloats(length));
      }),
    );
    const [first, second, third] = steps;
    expect(new Set(first).size).toBe(lengths.length); // two arrays of one length in a step are distinct
    first.forEach((array, i) => {
      expect(array.length).toBe(lengths[i]);
      expect(second[i]).toBe(array);
      expect(third[i]).toBe(array);
    });
    const after = uninitializedFloats(1 << 16);
    expect(first).not.toContain(after);
  });
});
