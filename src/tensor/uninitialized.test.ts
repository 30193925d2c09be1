/**
 * uninitializedFloats: each large array has its own memory (never a view into Node's shared Buffer pool,
 * where two arrays could overlap), and small ones are ordinary zeroed arrays.
 */
import { describe, expect, it } from 'vitest';
import { uninitializedFloats } from './uninitialized.js';

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
