/**
 * causalAttention's plain causal path (attention-rows.ts: only the visible keys of each row) against the
 * general per-key path, which an all-ones key mask selects with the same meaning: forward output and the
 * q, k, v gradients equal bit for bit on every backend, at query offsets where rows see all, some or no
 * keys; and a gradient check of the plain path.
 */
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from './index.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(23);
const normal = normalSampler(random);

/** Output and the three gradients of causalAttention on fresh leaves, for one seed gradient. */
function attend(q: T.Tensor, k: T.Tensor, v: T.Tensor, seed: Float32Array, options: T.AttentionOptions) {
  const [qLeaf, kLeaf, vLeaf] = [q, k, v].map((x) => T.parameter(x.data.slice(), x.shape));
  const out = T.causalAttention(qLeaf, kLeaf, vLeaf, options);
  out.backward(seed);
  return [out.data, qLeaf.grad!.data, kLeaf.grad!.data, vLeaf.grad!.data].map((data) => Array.from(data));
}

for (const { name, backend } of backendsUnderTest()) {
  describe(`causalAttention row paths on ${name}`, () => {
    useBackendInSuite(backend);

    it.each([
      { label: 'training (offset 0)', T: 5, S: 5, offset: 0 },
      { label: 'after a cache (offset 3)', T: 4, S: 7, offset: 3 },
      { label: 'first rows see no key (offset −2)', T: 5, S: 5, offset: -2 },
    ])('the plain causal path equals the per-key path bitwise: $label', ({ T: length, S, offset }) => {
      const [B, Hq, Hkv, D] = [2, 4, 2, 3];
      const q = normal([B, Hq, length, D]);
      const k = normal([B, Hkv, S, D]);
      const v = normal([B, Hkv, S, D]);
      const seed = normal([B, Hq, length, D]).data;
      const plain = attend(q, k, v, seed, { positionOffset: offset });
      const perKey = attend(q, k, v, seed, { positionOffset: offset, keyMask: new Uint8Array(B * S).fill(1) });
      expect(plain).toEqual(perKey);
      if (offset < 0) expect(plain[0].slice(0, D).every((x) => x === 0)).toBe(true); // query 0 sees nothing
    });

    it('the plain causal path passes gradCheck', () => {
      gradCheck(
        (q, k, v) => T.causalAttention(q, k, v),
        [normal([1, 2, 4, 3]), normal([1, 1, 4, 3]), normal([1, 1, 4, 3])],
      );
    });
  });
}
