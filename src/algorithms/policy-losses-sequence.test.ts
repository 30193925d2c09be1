/**
 * Tests of GSPO, GSPO-token and REAL (ALGORITHMS.md §2.6, §2.8): vectors, finite-difference
 * gradients through the sequence ratio, and GSPO-token = GSPO for sequence-constant advantages.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { gspoLoss, gspoTokenLoss, realLoss } from './policy-losses-sequence.js';

describe('§2.6 GSPO', () => {
  const oldLogprobs = [-1, -1, -1];
  const logRatios = [0.1, -0.2, 0.4];
  const make = (): Tensor =>
    tensor(
      logRatios.map((r, t) => oldLogprobs[t] + r),
      [1, 3],
      { requiresGrad: true },
    );
  it('token log-ratios [0.1, −0.2, 0.4]: s = e^0.1 = 1.10517, A=+1 clips to 1.0004 with zero gradient', () => {
    const logprobs = make();
    const { loss, metrics } = gspoLoss({ logprobs, oldLogprobs, advantages: [1], mask: [1, 1, 1] });
    loss.backward();
    expect(metrics.sequenceRatioMean).toBeCloseTo(1.10517, 5);
    expect(loss.item()).toBeCloseTo(-1.0004, 6);
    expect([...(logprobs.grad as Tensor).data].map((g) => g + 0)).toEqual([0, 0, 0]);
    expect(metrics.clipFractionHigh).toBe(1);
  });
  it('A=−1 is unclipped: loss s, gradient s/|o| on every token', () => {
    const logprobs = make();
    const { loss } = gspoLoss({ logprobs, oldLogprobs, advantages: [-1], mask: [1, 1, 1] });
    loss.backward();
    expect(loss.item()).toBeCloseTo(1.10517, 5);
    for (const g of (logprobs.grad as Tensor).data) expect(g).toBeCloseTo(1.10517 / 3, 5);
  });
  it('on-policy it is a no-op ratio (s = 1) and padding is ignored', () => {
    const logprobs = tensor([-1, -2, 7], [1, 3], { requiresGrad: true });
    const { loss, metrics } = gspoLoss({ logprobs, oldLogprobs: [-1, -2, 0], advantages: [0.5], mask: [1, 1, 0] });
    expect(metrics.sequenceRatioMean).toBeCloseTo(1, 6);
    expect(loss.item()).toBeCloseTo(-0.5, 6);
  });
  it('needs per-sequence advantages', () => {
    const logprobs = make();
    expect(() => gspoLoss({ logprobs, oldLogprobs, advantages: [1, 2, 3], mask: [1, 1, 1] })).toThrow(
      /needs per-sequence advantages/,
    );
  });
});

function batch(): { logprobs: Tensor; oldLogprobs: Float32Array; advantages: Float32Array; mask: Float32Array } {
  const old = Float32Array.from([-1.2, -0.7, -2.0, -1.1, -0.4, -0.9, -1.6, -0.3, -1.0, -0.8, -2.2, -0.6]);
  // Sequence log-ratio means of about −0.1, 0.07, 0.12: inside ε = 0.2 for the check, away from the kinks.
  const shifts = [-0.15, -0.05, -0.1, 0, 0.05, 0.1, 0.08, 0.05, 0.2, 0.1, 0.06, 0.3];
  const mask = Float32Array.from([1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
  return {
    logprobs: tensor(
      old.map((o, i) => o + shifts[i]),
      [3, 4],
    ),
    oldLogprobs: old,
    advantages: Float32Array.from([0.7, -1.1, 0.4]),
    mask,
  };
}

describe('GSPO gradients', () => {
  it('GSPO and GSPO-token match central differences through the sequence ratio', () => {
    const input = batch();
    gradCheck(
      (logprobs) => gspoLoss({ ...input, logprobs }, { epsilonLow: 0.2, epsilonHigh: 0.2 }).loss,
      [input.logprobs],
      { epsilon: 1e-3, absoluteTolerance: 1e-4 },
    );
    gradCheck(
      (logprobs) => gspoTokenLoss({ ...input, logprobs }, { epsilonLow: 0.2, epsilonHigh: 0.2 }).loss,
      [input.logprobs],
      { epsilon: 1e-3, absoluteTolerance: 1e-4 },
    );
  });
  it("with the paper's tight ε the clipped sequences get zero gradient and the others full", () => {
    const input = batch();
    input.logprobs.requiresGrad = true;
    gspoLoss(input).loss.backward();
    const grad = (input.logprobs.grad as Tensor).data;
    // Sequence 0: mean log-ratio −0.1 with A > 0 → s < 1 + ε_high, unclipped; sequence 2: s > 1+ε with A > 0 → clipped.
    const s0 = Math.exp((-0.15 - 0.05 - 0.1) / 3);
    for (let t = 0; t < 3; t++) expect(grad[t]).toBeCloseTo((-0.7 * s0) / 3 / 3, 6);
    expect(grad[3] + 0).toBe(0);
    for (let t = 8; t < 12; t++) expect(grad[t] + 0).toBe(0);
    // Sequence 1: A < 0 and s > 1 − ε_low: unclipped, gradient −A·s/|o|/N.
    const s1 = Math.exp((0.05 + 0.1 + 0.08 + 0.05) / 4);
    for (let t = 4; t < 8; t++) expect(grad[t]).toBeCloseTo((1.1 * s1) / 4 / 3, 6);
  });
  it('GSPO-token equals GSPO (loss and gradient) when advantages are constant per sequence', () => {
    const first = batch();
    const second = batch();
    first.logprobs.requiresGrad = true;
    second.logprobs.requiresGrad = true;
    const sequence = gspoLoss(first, { epsilonLow: 0.2, epsilonHigh: 0.2 }).loss;
    const perToken = Float32Array.from({ length: 12 }, (_, i) => first.advantages[Math.floor(i / 4)]);
    const token = gspoTokenLoss({ ...second, advantages: perToken }, { epsilonLow: 0.2, epsilonHigh: 0.2 }).loss;
    sequence.backward();
    token.backward();
    expect(token.item()).toBeCloseTo(sequence.item(), 6);
    (first.logprobs.grad as Tensor).data.forEach((g, i) =>
      expect((second.logprobs.grad as Tensor).data[i]).toBeCloseTo(g, 6),
    );
  });
});

describe('§2.8 REAL', () => {
  it('on-policy, 2 positive and 2 negative: L = 2 ln 3', () => {
    const logprobs = tensor(new Float32Array(4).fill(-1), [4, 1], { requiresGrad: true });
    const { loss } = realLoss({
      logprobs,
      oldLogprobs: new Float32Array(4).fill(-1),
      advantages: [1, 1, -1, -1],
      mask: [1, 1, 1, 1],
      groupSizes: 4,
    });
    expect(loss.item()).toBeCloseTo(2.1972, 4);
  });
  it('pos s̄=[0.1, −0.2], neg s̄=[0.3]: L = 1.1971 + 1.0375 = 2.2346, with correct gradients', () => {
    const old = new Float32Array(6).fill(-1);
    // Sequence means over two tokens each: 0.1, −0.2, 0.3.
    const current = old.map((o, i) => o + [0.05, 0.15, -0.3, -0.1, 0.2, 0.4][i]);
    const input = {
      oldLogprobs: old,
      advantages: [0, 0, 0],
      sequenceLabels: [1, 1, 0],
      mask: new Float32Array(6).fill(1),
      groupSizes: 3,
    };
    const { loss } = realLoss({ ...input, logprobs: tensor(current, [3, 2]) });
    expect(loss.item()).toBeCloseTo(2.2346, 4);
    gradCheck((logprobs) => realLoss({ ...input, logprobs }).loss, [tensor(current, [3, 2])], {
      epsilon: 1e-3,
      absoluteTolerance: 1e-4,
    });
  });
  it('averages over labelled groups and needs group sizes', () => {
    const logprobs = tensor(new Float32Array(6).fill(-1), [6, 1]);
    const twoGroups = realLoss({
      logprobs,
      oldLogprobs: new Float32Array(6).fill(-1),
      advantages: [1, 1, -1, -1, 0, 0],
      mask: new Float32Array(6).fill(1),
      groupSizes: [4, 2],
    });
    expect(twoGroups.loss.item()).toBeCloseTo(2 * Math.log(3), 5);
    expect(twoGroups.metrics.labelledGroups).toBe(1);
    expect(() =>
      realLoss({
        logprobs,
        oldLogprobs: new Float32Array(6),
        advantages: new Float32Array(6),
        mask: new Float32Array(6),
      }),
    ).toThrow(/needs input.groupSizes/);
  });
});
