/**
 * The native element-wise sum (elementwise.c, Backend.addArrays) against the JS loop it replaces in
 * residualAdd and autograd's gradient accumulation: bit for bit (one correctly rounded float32 addition
 * either way), NaN/±Infinity/−0 and subnormals included, written in place (out = a), split over 2 threads
 * (an odd size above the parallel threshold, so shares and tails are covered), and short arrays refused.
 * Gradient clipping's passes (sumOfSquares, scaleArray) against nn/clip.ts's loops: the scaling bit for bit;
 * the sum of squares bit for bit below the parallel threshold (one share, the loop's order) and above it
 * within 1e-13 relative (the two shares' totals added last: a few double roundings of a sum of 10⁵ terms).
 * copyBlocks (the KV cache's strided write) against select.ts's JS fallback, bit for bit.
 */
import { describe, expect, it } from 'vitest';
import { Random, randomNormal } from '../../random.js';
import { copyBlocks, createBackend, setBackend } from '../select.js';
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
    const js = createBackend('js');
    const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

    it('equals the JS loop bit for bit, into a new array and in place', () => {
      const out = new Float32Array(size);
      native.addArrays!(a, b, out);
      expect(bits(out)).toEqual(bits(expected));
      const inPlace = a.slice();
      native.addArrays!(inPlace, b, inPlace);
      expect(bits(inPlace)).toEqual(bits(expected));
    });

    it('sumOfSquares: the double loop, bit for bit in one share and within rounding over two', () => {
      const loop = (x: Float32Array) => {
        let total = 0;
        for (let i = 0; i < x.length; i++) total += x[i] * x[i];
        return total;
      };
      const short = b.subarray(9, 60_009); // below the parallel threshold: one share
      expect(native.sumOfSquares!(short)).toBe(loop(short));
      const long = a.subarray(9);
      expect(Math.abs(native.sumOfSquares!(long) - loop(long))).toBeLessThanOrEqual(1e-13 * loop(long));
      expect(native.sumOfSquares!(a)).toBeNaN(); // a[0] is NaN
    });

    it('scaleArray: x·factor rounded to float32 in place, bit for bit the loop', () => {
      for (const factor of [0.37, 1 / 3, 1e-30]) {
        const scaled = a.slice();
        native.scaleArray!(scaled, factor);
        const want = a.slice();
        for (let i = 0; i < want.length; i++) want[i] *= factor;
        expect(bits(scaled)).toEqual(bits(want));
      }
    });

    it('copyBlocks: a KV-cache write (strided blocks) equals the JS fallback bit for bit; blocks past an end are refused', () => {
      // 64 rows x 8 heads of 64 floats into a [64·8, capacity 32, 64] cache at position 5, and long blocks (set path).
      for (const blocks of [
        { count: 512, length: 64, sourceStart: 0, sourceStride: 64, targetStart: 5 * 64, targetStride: 32 * 64 },
        { count: 3, length: 300, sourceStart: 7, sourceStride: 311, targetStart: 2, targetStride: 1000 },
      ]) {
        const target = randomNormal([blocks.targetStart + blocks.count * blocks.targetStride], new Random(3), 1).data;
        const want = target.slice();
        native.copyBlocks!(a, target, blocks);
        setBackend(js); // the fallback loop (js has no copyBlocks)
        copyBlocks(a, want, blocks);
        setBackend(native);
        expect(bits(target)).toEqual(bits(want));
        expect(bits(target.subarray(blocks.targetStart, blocks.targetStart + blocks.length))).toEqual(
          bits(a.subarray(blocks.sourceStart, blocks.sourceStart + blocks.length)),
        );
      }
      const blocks = { count: 2, length: 4, sourceStart: 0, sourceStride: 4, targetStart: 0, targetStride: 5 };
      expect(() => native.copyBlocks!(new Float32Array(7), new Float32Array(9), blocks)).toThrow(
        /past the end of source/,
      );
      expect(() => native.copyBlocks!(new Float32Array(8), new Float32Array(8), blocks)).toThrow(
        /past the end of target/,
      );
    });

    it('refuses arrays shorter than a', () => {
      expect(() => native.addArrays!(a, b.subarray(1), new Float32Array(size))).toThrow(/b has 100002 elements/);
    });
  });
}
