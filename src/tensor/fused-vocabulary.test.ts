/**
 * projectedLogSoftmaxGather against the composition it replaces (matmul → mul by the scale →
 * logSoftmaxGather, entropyFromLogits), on every backend: logprobs and entropies bit for bit (each row
 * is computed by the same products and loops), the gradients within float rounding: the backward runs
 * blocks of vocabulary columns, so dx is summed block by block and dW over all rows at once, where the
 * composite sums each in one product (1e-6 relative: a few float32 roundings of regrouped sums of
 * ~40 terms of order 1). Its finite-difference check is in gradients.test.ts.
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
      { scale: 1, chunkRows: 7, chunkColumns: 5 },
      { scale: 1 / 0.7, chunkRows: 3, chunkColumns: 16 },
      { scale: 1, chunkRows: undefined, chunkColumns: undefined },
    ])(
      'equals matmul → mul → logSoftmaxGather (scale $scale, chunks of $chunkRows rows, $chunkColumns columns)',
      ({ scale, chunkRows, chunkColumns }) => {
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
          const out = fused
            ? T.projectedLogSoftmaxGather(x, w, ids, { scale, chunkRows, chunkColumns })
            : composite(x, w, ids, scale);
          out.logprobs.backward(rowGrad.data);
          return { logprobs: out.logprobs.data, entropies: out.entropies, gradX: x.grad!.data, gradW: w.grad!.data };
        };
        const fused = run(true);
        const spec = run(false);
        expect(Array.from(fused.logprobs)).toEqual(Array.from(spec.logprobs));
        expect(Array.from(fused.entropies)).toEqual(Array.from(spec.entropies));
        for (const [got, want] of [
          [fused.gradX, spec.gradX],
          [fused.gradW, spec.gradW],
        ])
          for (let i = 0; i < want.length; i++)
            expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-6 * (1 + Math.abs(want[i])));
      },
    );

    it('keeps the composite logprobs and entropies on a row whose logits overflow to +∞', () => {
      // One kernel pass gives the entropy and the normaliser; it shifts such a row by +∞ where
      // log-softmax-gather shifts by 0, so the row is rerun for the normaliser alone.
      const [N, H, V] = [3, 4, 6];
      const random = new T.Random(5);
      const xData = T.randomNormal([N, H], random).data;
      const wData = T.randomNormal([V, H], random).data;
      xData.fill(1e30, H, 2 * H); // row 1 of x and row 0 of W: their product overflows, a +∞ logit
      wData.fill(1e30, 0, H);
      const ids = Int32Array.from([1, 2, 3]);
      const x = T.tensor(xData, [N, H]);
      const w = T.tensor(wData, [V, H]);
      const fused = T.projectedLogSoftmaxGather(x, w, ids);
      const spec = composite(x, w, ids, 1);
      expect(Array.from(fused.logprobs.data)).toEqual(Array.from(spec.logprobs.data));
      expect(Array.from(fused.entropies)).toEqual(Array.from(spec.entropies));
    });

    it('refuses shapes that do not fit, naming them', () => {
      expect(() => T.projectedLogSoftmaxGather(T.zeros([2, 3]), T.zeros([4, 5]), [0, 1])).toThrow(
        /projectedLogSoftmaxGather: x \[2, ?3\], weight \[4, ?5\]/,
      );
    });
  });
}
