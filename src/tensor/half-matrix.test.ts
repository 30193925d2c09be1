/**
 * HalfMatrix: bfloat16 narrowing rounds to nearest even (ties included), keeps signs, infinities and
 * NaN, and widening gives back exactly the float32 values a bfloat16 checkpoint decodes to.
 */
import { describe, expect, it } from 'vitest';
import { HalfMatrix, widenedScratch } from './half-matrix.js';

const fromWords = (words: number[]) => new Float32Array(Uint32Array.from(words).buffer);
const wordsOf = (data: Float32Array) => Array.from(new Uint32Array(data.buffer, data.byteOffset, data.length));

describe('HalfMatrix', () => {
  it('rounds float32 to the nearest bfloat16, ties to even', () => {
    const input = fromWords([
      0x3f800000, // 1: exact
      0x3f808000, // tie between 0x3f80 (even) and 0x3f81: stays 0x3f80
      0x3f818000, // tie between 0x3f81 and 0x3f82 (even): up to 0x3f82
      0x3f808001, // just above the tie: up to 0x3f81
      0xbf80ffff, // negative, rounds up in magnitude to 0xbf81
      0x7f7fffff, // largest float32: rounds to +Inf, as bfloat16 has the same exponent range
      0xff800000, // −Inf stays
      0x7fc00001, // NaN stays NaN
    ]);
    const half = HalfMatrix.fromFloat32(input, [2, 4]);
    expect(Array.from(half.bits)).toEqual([0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xbf81, 0x7f80, 0xff80, 0x7fc0]);
    const widened = half.toFloat32();
    expect(wordsOf(widened).slice(0, 7)).toEqual([
      0x3f800000, 0x3f800000, 0x3f820000, 0x3f810000, 0xbf810000, 0x7f800000, 0xff800000,
    ]);
    expect(Number.isNaN(widened[7])).toBe(true);
  });

  it('narrows values that came from bfloat16 back to the same bits, and the scratch widening equals them', () => {
    const bits = Uint16Array.from({ length: 12 }, (_, i) => (0x3c00 + 977 * i) & 0xffff);
    const half = new HalfMatrix(bits, [3, 4]);
    expect(Array.from(HalfMatrix.fromFloat32(half.toFloat32(), [3, 4]).bits)).toEqual(Array.from(bits));
    expect(Array.from(widenedScratch(half))).toEqual(Array.from(half.toFloat32()));
    expect(() => new HalfMatrix(bits, [5, 4])).toThrow('HalfMatrix: shape [5, 4] does not hold 12 elements in 2 axes');
  });
});
