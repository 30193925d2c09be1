/**
 * prefixAttention given an output array (a decode step's reused one) against the same call without, on
 * every backend: the same floats, written into the given array, rows at different steps included.
 * Its numbers against causalAttention are checked in fused.test.ts.
 */
import { describe, expect, it } from 'vitest';
import * as T from './index.js';
import { prefixAttention, type SharedPrefix } from './prefix-attention.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(12);
const normal = normalSampler(random);

for (const { name, backend } of backendsUnderTest()) {
  describe(`prefixAttention output on ${name}`, () => {
    useBackendInSuite(backend);

    it.each([
      { label: 'rows at one step', ownLengths: undefined },
      { label: 'rows at different steps', ownLengths: Int32Array.of(3, 1, 1, 2, 0) },
    ])('writes the result of a call without output into the given array: $label', ({ ownLengths }) => {
      const [B, Hq, Hkv, D, capacity] = [5, 4, 2, 8, 4];
      const prefix: SharedPrefix = {
        keys: [normal([1, Hkv, 6, D]), normal([1, Hkv, 6, D])],
        values: [normal([1, Hkv, 6, D]), normal([1, Hkv, 6, D])],
        lengths: [6, 4],
        rowPrefix: Int32Array.of(0, 0, 1, 1, 1),
        ownLengths,
      };
      const [q, keys, values] = [normal([B, Hq, 1, D]), normal([B, Hkv, capacity, D]), normal([B, Hkv, capacity, D])];
      const S = 3;
      const expected = T.noGrad(() => prefixAttention(q, keys, values, S, prefix));
      const output = new Float32Array(B * Hq * D + 5).fill(Number.NaN); // garbage every result float overwrites
      const actual = T.noGrad(() => prefixAttention(q, keys, values, S, { ...prefix, output }));
      expect(actual.data.buffer).toBe(output.buffer);
      expect(Array.from(actual.data)).toEqual(Array.from(expected.data));
      expect(() =>
        T.noGrad(() => prefixAttention(q, keys, values, S, { ...prefix, output: output.subarray(8) })),
      ).toThrow(/output has/);
    });
  });
}
