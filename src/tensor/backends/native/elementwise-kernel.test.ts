/**
 * The native element-wise sum (elementwise.c, Backend.addArrays) against the JS loop it replaces in
 * residualAdd and autograd's gradient accumulation: bit for bit (one correctly rounded float32 addition
 * either way), NaN/±Infinity/−0 and subnormals included, written in place (out = a), split over 2 threads
 * (an odd size above the parallel threshold, so shares and tails are covered), and short arrays refused.
 */
import { describe, expect, it } from 'vitest';
import { Random, randomNormal } from '../../random.js';
import { loadNativeBackend, nativeAddonStatus } from './native-backend.js';

const status = nativeAddonStatus();
if (!status.available) {
  describe('native addArrays', () => {
    it('is unavailable only where the addon is (set GRPO_REQUIRE_NATIVE=1 to require it)', () => {
      expect(process.env.GRPO_REQUIRE_NATIVE).not.toBe('1');
    });
  });
} else {
  describe('native addArrays', () => {
    const size = 100_003;
    const a = randomNormal([size], new Random(1), 3).data;
    const b = randomNormal([size], new Random(2), 1e-3).data;
    a.set([Number.NaN, Infinity, -Infinity, -0, 1e-40, 3.4e38, -3.4e38, 1, 0], 0);
    b.set([1, -Infinity, 5, -0, 1e-40, 3.4e38, -3.4e38, 2 ** -24, -0], 0);
    const expected = new Float32Array(size);
    for (let i = 0; i < size; i++) expected[i] = a[i] + b[i];
    const native = loadNativeBackend({ threads: 2 })!;
    const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

    it('equals the JS loop bit for bit, into a new array and in place', () => {
      const out = new Float32Array(size);
      native.addArrays!(a, b, out);
      expect(bits(out)).toEqual(bits(expected));
      const inPlace = a.slice();
      native.addArrays!(inPlace, b, inPlace);
      expect(bits(inPlace)).toEqual(bits(expected));
    });

    it('refuses arrays shorter than a', () => {
      expect(() => native.addArrays!(a, b.subarray(1), new Float32Array(size))).toThrow(/b has 100002 elements/);
    });
  });
}
