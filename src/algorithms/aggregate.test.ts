/**
 * Tests of loss aggregation (§3) and KL (§4): the spec vectors, gradient accumulation with an
 * explicit global token count, and KL in the loss / in the reward.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, add, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import {
  aggregateLoss,
  seqMeanTokenMeanWeights,
  seqMeanTokenSumNormWeights,
  seqMeanTokenSumWeights,
  tokenMeanWeights,
} from './aggregate.js';
import { klArray, klK1, klK2, klK3, klPenalizedRewards, offPolicyCorrectedKl } from './kl.js';
import { ppoClipLoss } from './policy-losses.js';

describe('§3 aggregation', () => {
  // Sequence A: [2, 2]; sequence B: [1, 1, 1, 1]; padded to T = 4.
  const losses = tensor([2, 2, 0, 0, 1, 1, 1, 1], [2, 4]);
  const mask = [1, 1, 0, 0, 1, 1, 1, 1];
  it('grpo 1.5, token-mean 1.3333, dr_grpo 0.5 (L_max = 8), seq-mean-token-sum 4.0', () => {
    expect(aggregateLoss(losses, mask, seqMeanTokenMeanWeights).item()).toBeCloseTo(1.5, 6);
    expect(aggregateLoss(losses, mask, tokenMeanWeights).item()).toBeCloseTo(1.3333, 4);
    expect(aggregateLoss(losses, mask, seqMeanTokenSumNormWeights, { maxLength: 8 }).item()).toBeCloseTo(0.5, 6);
    expect(aggregateLoss(losses, mask, seqMeanTokenSumWeights).item()).toBeCloseTo(4, 6);
  });
  it('token-mean with the global token count: micro-batch losses add up to the full-batch mean', () => {
    const first = aggregateLoss(tensor([2, 2, 0, 0], [1, 4]), [1, 1, 0, 0], tokenMeanWeights, { globalTokenCount: 6 });
    const second = aggregateLoss(tensor([1, 1, 1, 1], [1, 4]), [1, 1, 1, 1], tokenMeanWeights, { globalTokenCount: 6 });
    expect(first.item() + second.item()).toBeCloseTo(aggregateLoss(losses, mask, tokenMeanWeights).item(), 6);
    // Without it each micro-batch takes its own mean: 2 + 1 ≠ 1.3333 (TRL's accumulation caveat).
    const localSum =
      aggregateLoss(tensor([2, 2, 0, 0], [1, 4]), [1, 1, 0, 0], tokenMeanWeights).item() +
      aggregateLoss(tensor([1, 1, 1, 1], [1, 4]), [1, 1, 1, 1], tokenMeanWeights).item();
    expect(localSum).toBeCloseTo(3, 6);
    expect(() => tokenMeanWeights(mask, 2, 4, { globalTokenCount: 0 })).toThrow(/globalTokenCount must be > 0/);
  });
  it('an empty row does not count as a sequence in the seq-mean modes', () => {
    const withEmpty = tensor([2, 2, 5, 5], [2, 2]);
    expect(aggregateLoss(withEmpty, [1, 1, 0, 0], seqMeanTokenMeanWeights).item()).toBeCloseTo(2, 6);
    expect(() => aggregateLoss(withEmpty, [1, 1], tokenMeanWeights)).toThrow(/mask has 2 entries/);
  });
});

describe('§4 KL', () => {
  it('§4.1 logπ=−1, logπ_ref=−1.5: k1 0.5, k2 0.125, k3 0.10653', () => {
    expect(klArray(klK1, [-1], [-1.5])[0]).toBeCloseTo(0.5, 6);
    expect(klArray(klK2, [-1], [-1.5])[0]).toBeCloseTo(0.125, 6);
    expect(klArray(klK3, [-1], [-1.5])[0]).toBeCloseTo(0.10653, 5);
    expect(Math.exp(-1.5 - -1)).toBeCloseTo(0.60653, 5);
  });
  it('§4.3 off-policy correction: ratio 1.1 · k3 = 0.11718', () => {
    const logprobs = tensor([-1], [1]);
    const old = tensor([-1 - Math.log(1.1)], [1]);
    expect(offPolicyCorrectedKl(logprobs, tensor([-1.5], [1]), old).item()).toBeCloseTo(0.11718, 5);
  });
  it('estimator gradients match central differences', () => {
    const ref = tensor([-1.5, -0.2, -3], [3]);
    for (const estimator of [klK1, klK2, klK3])
      gradCheck((logprobs) => estimator(logprobs, ref), [tensor([-1, -0.7, -2.2], [3])], { epsilon: 1e-3 });
    gradCheck(
      (logprobs) => offPolicyCorrectedKl(logprobs, ref, tensor([-1.1, -0.6, -2], [3])),
      [tensor([-1, -0.7, -2.2], [3])],
      { epsilon: 1e-3 },
    );
  });
  it('§4.2 KL in the loss adds β·k3 per token, aggregated like the policy loss', () => {
    const make = (): Tensor => tensor([-1, -2], [1, 2], { requiresGrad: true });
    const base = { oldLogprobs: [-1, -2], advantages: [0.5], mask: [1, 1], refLogprobs: [-1.5, -1.8] };
    const withKl = ppoClipLoss({ ...base, logprobs: make() }, { klCoefficient: 0.04 });
    const without = ppoClipLoss({ ...base, logprobs: make() });
    const k3 = klArray(klK3, [-1, -2], [-1.5, -1.8]);
    expect(withKl.loss.item()).toBeCloseTo(without.loss.item() + (0.04 * (k3[0] + k3[1])) / 2, 6);
    expect(withKl.metrics.kl).toBeCloseTo((k3[0] + k3[1]) / 2, 6);
    gradCheck(
      (logprobs) =>
        add(ppoClipLoss({ ...base, logprobs }, { klCoefficient: 0.04, klOffPolicyCorrection: true }).loss, 0),
      [make()],
      { epsilon: 1e-3, absoluteTolerance: 1e-4 },
    );
  });
  it('§4.2 KL in the reward: r − β·Σ_t k1 over masked tokens', () => {
    const rewards = klPenalizedRewards(
      { rewards: [1, 0], logprobs: [-1, -1, -2, 9], refLogprobs: [-1.5, -1.2, -2, 0], mask: [1, 1, 1, 0] },
      0.1,
    );
    expect(rewards[0]).toBeCloseTo(1 - 0.1 * (0.5 + 0.2), 6);
    expect(rewards[1]).toBeCloseTo(0, 6);
    expect(() =>
      klPenalizedRewards({ rewards: [1, 0], logprobs: [0, 0, 0], refLogprobs: [0, 0, 0], mask: [1, 1, 1] }, 0.1),
    ).toThrow(/must all be \[B=2, T\]/);
  });
});
