/**
 * projectedLogSoftmaxGather against the composition it replaces (matmul → mul by the scale →
 * logSoftmaxGather, entropyFromLogits), on every backend: logprobs and entropies bit for bit (each row
 * is computed by the same products and loops), gradients to x bit for bit, to the weight within float
 * rounding of summing its rows chunk by chunk. Its finite-difference check is in gradients.test.ts.
 */
import { describe, expect, it } from 'vitest';
import * as T from './index.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';

function composite(x: T.Tensor, w: T.Tensor, ids: Int32Array, scale: number) {
  let logits = T.matmul(x, w, { transposeB: true });
  if (scale !== 1) logits = T.mul(logits, scale);
  return { logprobs: T.logSoftmaxGather(logits, ids), entropies: T.noGrad(() => T.entropyFromLogits(logits)) };
}

for (const { name, backend } of backendsUnderTest()) {
  describe(`projectedLogSoftmaxGather on ${name}`, () => {
    useBackendInSuite(backend);

    it.each([
      { scale: 1, chunkRows: 7 },
      { scale: 1 / 0.7, chunkRows: 3 },
      { scale: 1, chunkRows: undefined },
    ])('equals matmul → mul → logSoftmaxGather (scale $scale, chunks of $chunkRows rows)', ({ scale, chunkRows }) => {
      const [N, H, V] = [23, 16, 37];
      const random = new T.Random(3);
      const xData = T.randomNormal([N, H], random).data;
      const wData = T.randomNormal([V, H], random, 0.5).data;
      const ids = Int32Array.from({ length: N }, (_, r) => (r * 11) % V);
      const rowGrad = T.randomNormal([N], random);
      rowGrad.data[4] = 0; // a row the gradient skips
      const run = (fused: boolean) => {
        const x = T.parameter(xData.slice(), [N, H]);
        const w = T.parameter(wData.slice(), [V, H]);
        const out = fused ? T.projectedLogSoftmaxGather(x, w, ids, { scale, chunkRows }) : composite(x, w, ids, scale);
        out.logprobs.backward(rowGrad.data);
        return { logprobs: out.logprobs.data, entropies: out.entropies, gradX: x.grad!.data, gradW: w.grad!.data };
      };
      const fused = run(true);
      const spec = run(false);
      expect(Array.from(fused.logprobs)).toEqual(Array.from(spec.logprobs));
      expect(Array.from(fused.entropies)).toEqual(Array.from(spec.entropies));
      expect(Array.from(fused.gradX)).toEqual(Array.from(spec.gradX));
      for (let i = 0; i < spec.gradW.length; i++)
        expect(Math.abs(fused.gradW[i] - spec.gradW[i])).toBeLessThanOrEqual(1e-6 * (1 + Math.abs(spec.gradW[i])));
    });

    it('refuses shapes that do not fit, naming them', () => {
      expect(() => T.projectedLogSoftmaxGather(T.zeros([2, 3]), T.zeros([4, 5]), [0, 1])).toThrow(
        /projectedLogSoftmaxGather: x \[2, ?3\], weight \[4, ?5\]/,
      );
    });
  });
}
