/**
 * Finite-difference gradient checks for every primitive, composite and fused op, run on every
 * backend (js is the spec; wasm must agree). Tolerances are explained in src/testing/gradcheck.ts.
 */
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from './index.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(7);
const normal = normalSampler(random);
/** Values in ±[0.3, 1.3]: away from kinks (0 for abs/relu) by much more than the FD step. */
const awayFromZero = (shape: number[]) => {
  const x = normal(shape);
  for (let i = 0; i < x.size; i++) x.data[i] = Math.sign(x.data[i] || 1) * (0.3 + (Math.abs(x.data[i]) % 1));
  return x;
};
const positive = (shape: number[]) => T.randomUniform(shape, random, 0.5, 2);

for (const { name, backend } of backendsUnderTest()) {
  describe(`gradients on ${name}`, () => {
    // Switch in beforeAll, not in the describe body: bodies all run at collection time, before any test.
    useBackendInSuite(backend);
    it('runs on the intended backend', () => expect(T.getBackend()).toBe(backend));

    it.each(['neg', 'exp', 'sigmoid', 'tanh', 'silu', 'gelu', 'geluTanh', 'square'] as const)('unary %s', (op) => {
      gradCheck((x) => T[op](x), [normal([3, 5])]);
    });
    it.each(['abs', 'relu'] as const)('unary %s away from its kink', (op) => {
      gradCheck((x) => T[op](x), [awayFromZero([4, 3])]);
    });
    it.each(['log', 'sqrt', 'rsqrt'] as const)('unary %s on positive inputs', (op) => {
      gradCheck((x) => T[op](x), [positive([2, 7])]);
    });
    it('pow with a constant exponent', () => gradCheck((x) => T.pow(x, 3), [positive([5])]));

    it.each(['add', 'sub', 'mul', 'div'] as const)('binary %s with broadcasting', (op) => {
      gradCheck((a, b) => T[op](a, b), [normal([2, 3, 4]), op === 'div' ? positive([3, 1]) : normal([3, 1])]);
      gradCheck((a, b) => T[op](a, b), [normal([4]), op === 'div' ? positive([2, 1, 4]) : normal([2, 1, 4])]);
    });
    it('maximum and minimum away from ties', () => {
      const a = T.tensor([0.5, -1, 2, 0.1, 3, -2], [2, 3]);
      const b = T.tensor([1, -2, 0.5, 0.6, 2.5, -1], [2, 3]);
      gradCheck((x, y) => T.maximum(x, y), [a, b]);
      gradCheck((x, y) => T.minimum(x, y), [T.tensor(a.data.slice(), [2, 3]), T.tensor(b.data.slice(), [2, 3])]);
    });
    it('clamp passes gradient inside the bounds and none where it binds', () => {
      const x = T.tensor([-2, -0.5, 0.2, 0.7, 1.8], [5]);
      gradCheck((input) => T.clamp(input, -1, 1), [x]);
      x.grad = null;
      T.sum(T.clamp(x, -1, 1)).backward();
      expect(Array.from(x.grad!.data)).toEqual([0, 1, 1, 1, 0]);
    });
    it('where routes the gradient to the chosen branch', () => {
      const condition = T.tensor([1, 0, 1, 0], [4]);
      gradCheck((a, b) => T.where(condition, a, b), [normal([4]), normal([2, 4])]);
    });

    it('sum and mean over axes, with and without keepDims', () => {
      gradCheck((x) => T.sum(x, 1), [normal([2, 3, 4])]);
      gradCheck((x) => T.sum(x, [0, 2], true), [normal([2, 3, 4])]);
      gradCheck((x) => T.mean(x), [normal([3, 4])]);
      gradCheck((x) => T.mean(x, -1, true), [normal([3, 4])]);
    });
    it('max along an axis', () => gradCheck((x) => T.max(x, 1), [T.tensor([1, 5, 2, -3, 0.5, 4, 2, 8, -1], [3, 3])]));
    it('logSumExp, logSoftmax and softmax', () => {
      gradCheck((x) => T.logSumExp(x, -1), [normal([3, 6], 2)]);
      gradCheck((x) => T.logSoftmax(x, 0), [normal([4, 3], 2)]);
      gradCheck((x) => T.softmax(x, -1), [normal([2, 5], 2)]);
      gradCheck((x) => T.entropy(x, -1), [normal([3, 5], 2)]);
    });

    it('reshape, permute, transpose, slice, concat', () => {
      gradCheck((x) => T.reshape(x, [6, -1]), [normal([2, 3, 4])]);
      gradCheck((x) => T.permute(x, [2, 0, 1]), [normal([2, 3, 4])]);
      gradCheck((x) => T.transpose(x, 0, 1), [normal([3, 5])]);
      gradCheck((x) => T.slice(x, 1, 1, 3), [normal([2, 4, 3])]);
      gradCheck((a, b) => T.concat([a, b], 1), [normal([2, 2, 3]), normal([2, 1, 3])]);
      gradCheck((x) => T.broadcastTo(x, [3, 2, 4]), [normal([2, 1])]);
    });
    it('gather and indexSelect scatter-add their gradients (repeated indices included)', () => {
      gradCheck((x) => T.gather(x, 1, Int32Array.from([2, 0, 2, 1, 1, 0]), [2, 3]), [normal([2, 4])]);
      gradCheck((x) => T.indexSelect(x, Int32Array.from([3, 0, 3, 3])), [normal([5, 2])]);
    });

    it.each([
      [[3, 4], [4, 5], {}],
      [[4, 3], [4, 5], { transposeA: true }],
      [[3, 4], [5, 4], { transposeB: true }],
      [[4, 3], [5, 4], { transposeA: true, transposeB: true }],
      [[2, 3, 4], [2, 4, 5], {}],
      [[2, 4, 3], [2, 5, 4], { transposeA: true, transposeB: true }],
      [[2, 3, 4], [4, 5], {}],
      [[2, 3, 4], [5, 4], { transposeB: true }],
      [[2, 4, 3], [4, 5], { transposeA: true }],
      [[3, 4], [2, 4, 5], {}],
      [[4, 3], [2, 5, 4], { transposeA: true, transposeB: true }],
    ] as const)('matmul %j · %j %j', (aShape, bShape, options) => {
      gradCheck((a, b) => T.matmul(a, b, options), [normal([...aShape]), normal([...bShape])]);
    });

    it('layerNorm (weight and bias)', () =>
      gradCheck((x, w, b) => T.layerNorm(x, w, b, 1e-5), [normal([3, 8]), normal([8]), normal([8])]));
    it('replaceRows: the table keeps the gradient of the rows not replaced, the features get theirs', () =>
      gradCheck((x, rows) => T.replaceRows(x, Int32Array.from([4, 1, 2]), rows), [normal([6, 3]), normal([3, 3])]));
    it('rmsNorm', () => gradCheck((x, w) => T.rmsNorm(x, w, 1e-5), [normal([3, 8]), normal([8])]));
    it('rope', () => {
      const frequencies = Float32Array.from([1, 0.1, 0.01]);
      gradCheck((x) => T.rope(x, Int32Array.from([0, 3, 7]), frequencies), [normal([2, 3, 2, 6])]);
    });
    it.each([
      ['MHA', 2, 2, 4, 4, {}],
      ['GQA', 4, 2, 3, 3, {}],
      ['KV-cache offset', 2, 1, 2, 5, {}],
      ['not causal', 2, 2, 3, 4, { causal: false }],
      ['sliding window', 2, 2, 4, 5, { window: 2 }],
    ] as const)('causalAttention %s', (_label, Hq, Hkv, TQ, S, options) => {
      const B = 2;
      const D = 4;
      gradCheck(
        (q, k, v) => T.causalAttention(q, k, v, options),
        [normal([B, Hq, TQ, D]), normal([B, Hkv, S, D]), normal([B, Hkv, S, D])],
      );
    });
    it('causalAttention with a key mask and an additive mask', () => {
      const keyMask = Uint8Array.from([0, 1, 1, 1, 1, 1, 1, 0]);
      const additive = T.tensor([0, -1, 0.5, 0, 0, 0, 0, 0.25, 0, 0, 0, 0], [1, 1, 3, 4]);
      gradCheck(
        (q, k, v) => T.causalAttention(q, k, v, { keyMask, additiveMask: additive }),
        [normal([2, 2, 3, 4]), normal([2, 1, 4, 4]), normal([2, 1, 4, 4])],
      );
    });
    it('causalAttention with packed documents (segment ids)', () => {
      const segmentIds = Int32Array.from([0, 0, 1, 1, 1, 0, 1, 1, 2, 2]);
      gradCheck(
        (q, k, v) => T.causalAttention(q, k, v, { segmentIds }),
        [normal([2, 2, 5, 4]), normal([2, 1, 5, 4]), normal([2, 1, 5, 4])],
      );
    });
    it('logSoftmaxGather and crossEntropy', () => {
      gradCheck((x) => T.logSoftmaxGather(x, Int32Array.from([2, 0, 4])), [normal([3, 5], 2)]);
      gradCheck((x) => T.crossEntropy(x, Int32Array.from([1, -100, 3, 0])), [normal([2, 2, 5], 2)]);
    });
    it('projectedLogSoftmaxGather (lm_head + log-softmax-gather in chunks of 2 rows, 4 columns, temperature 0.7)', () =>
      gradCheck(
        (x, w) =>
          T.projectedLogSoftmaxGather(x, w, Int32Array.from([2, 0, 5, 1, 3]), {
            scale: 1 / 0.7,
            chunkRows: 2,
            chunkColumns: 4,
          }).logprobs,
        [normal([5, 4]), normal([6, 4], 2)],
      ));
    it('linear (x·Wᵀ + b)', () =>
      gradCheck((x, w, b) => T.linear(x, w, b), [normal([2, 3, 4]), normal([5, 4]), normal([5])]));
  });
}
