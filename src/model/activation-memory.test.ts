/**
 * recomputedNormInput: the linears that read one recomputed RMSNorm output share one recomputation in
 * backward (q/k/v, gate/up), dropped after the last announced read, with gradients bit for bit those of
 * the kept output. Is not: the model-level selective tests (transformer.test.ts, lora.test.ts).
 */
import { describe, expect, it } from 'vitest';
import * as T from '../tensor/index.js';
import { recomputedNormInput } from './activation-memory.js';

describe('recomputedNormInput', () => {
  const random = new T.Random(5);
  const [rows, D, out] = [6, 8, 5];
  const xData = T.randomNormal([rows, D], random, 1).data;
  const normWeight = T.randomNormal([D], random, 1).data;
  const weights = [0, 1, 2].map(() => T.randomNormal([out, D], random, 0.5).data);

  /** Three linears on rmsNorm(x): the middle one frozen (its backward reads no x). */
  function run(recompute: boolean) {
    const x = T.parameter(xData.slice(), [rows, D]);
    const norm = T.parameter(normWeight.slice(), [D]);
    const linears = weights.map((w, i) => new T.Tensor(w.slice(), [out, D], { requiresGrad: i !== 1 }));
    const normed = T.rmsNorm(x, norm, 1e-5);
    const input = recompute ? recomputedNormInput(normed, x, norm, 1e-5) : undefined;
    const reads: Float32Array[] = [];
    if (input) {
      const read = input.read;
      input.read = () => {
        reads.push(read());
        return reads[reads.length - 1];
      };
    }
    const outputs = linears.map((w) => T.lowRankLinear(normed, w, null, null, input));
    T.sum(outputs.reduce((total, y) => T.add(total, T.mul(y, y)))).backward();
    const gradients = [x, norm, linears[0], linears[2]].map((t) => Array.from(t.grad!.data));
    return { gradients, reads, input };
  }

  it('recomputes once for the linears that read it, drops it after the last, and gives the kept gradients', () => {
    const kept = run(false);
    const shared = run(true);
    expect(shared.gradients).toEqual(kept.gradients);
    expect(shared.reads).toHaveLength(2); // the frozen linear reads nothing
    expect(shared.reads[1]).toBe(shared.reads[0]);
    expect(shared.input!.read()).not.toBe(shared.reads[0]); // dropped: a later backward recomputes afresh
  });
});
