/**
 * Tests of the NFT loss (#48): against the float64 torch reference written from the authors'
 * dp_actor.py update_policy (scripts/reference/text_rl_papers.py → test/fixtures/text-rl-papers.json;
 * value and gradient with respect to logπ, reduced as theirs, Σ_tokens/1000), the on-policy
 * equivalence to Dr. GRPO the paper states, finite differences where no clamp binds, and the
 * straight-through clamp's gradient where it does.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import type { AggregationFn } from './aggregate.js';
import { policyLosses } from './index.js';
import { type NftLossOptions, nftLoss, nftLossPart } from './policy-losses-nft.js';
import { expectReference, paperFixture, paperInput } from './test-text-rl-papers.js';

/** The authors' reduction: every token weighs 1/1000 (Σ_b Σ_t ℓ / 1000). */
const perThousand: AggregationFn = (mask) => Float32Array.from(mask, (m) => (m ? 1e-3 : 0));

describe('nft loss against the torch reference of NFT update_policy', () => {
  it.each(paperFixture.losses.filter((c) => c.loss === 'nft'))('$name', (referenceCase) => {
    const input = paperInput();
    const { loss, metrics } = nftLoss(input, {
      ...(referenceCase.options as NftLossOptions),
      aggregation: perThousand,
    });
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase, 1, 2e-5);
    expect(metrics.nftGroups).toBe(2); // the all-wrong group is filtered out, as DAPO's filter does for theirs
  });
  it('the default aggregation is seq-mean-token-sum-norm: the same token sum over N·L_max', () => {
    const input = paperInput();
    const referenceCase = paperFixture.losses.find((c) => c.loss === 'nft')!;
    const { loss } = nftLoss(input, { maxLength: 10 });
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase, (12 * 10) / 1000, 2e-5);
  });
});

describe('nft by hand', () => {
  it('on-policy its gradient is Dr. GRPO’s: −(1 − c) per token of a correct answer, +c of a wrong one', () => {
    // One group, 1 correct of 4: c = 0.25; ρ = 1 everywhere.
    const old = [-1, -2, -0.5, -0.3, -1.2, -0.8, -2, -0.1];
    const logprobs = tensor(old, [4, 2], { requiresGrad: true });
    const { loss } = nftLoss(
      {
        logprobs,
        oldLogprobs: old,
        advantages: [0.75, -0.25, -0.25, -0.25],
        mask: new Array(8).fill(1),
        groupSizes: 4,
      },
      { aggregation: (mask) => Float32Array.from(mask, () => 1) },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo(0, 6); // −log 1 on both sides (the negatives' proxy is 1: clamp at 1 is exact)
    const gradient = [...(logprobs.grad as Tensor).data];
    gradient.slice(0, 2).forEach((g) => expect(g).toBeCloseTo(-0.75, 6));
    gradient.slice(2).forEach((g) => expect(g).toBeCloseTo(0.25, 6));
  });
  it('the straight-through clamp: value −log 1 = 0, gradient c·ρ/(1 − c) of the unclamped proxy', () => {
    // A wrong answer with ρ = 1.5 > 1: proxy (1 − 0.5·1.5)/0.5 = 0.5 < 1 is clamped to 1 in value only.
    const logprobs = tensor([Math.log(1.5) - 1, -1], [2, 1], { requiresGrad: true });
    const { loss } = nftLoss(
      { logprobs, oldLogprobs: [-1, -1], advantages: [-0.5, 0.5], mask: [1, 1], groupSizes: 2 },
      { normalize: 'none', aggregation: (mask) => Float32Array.from(mask, () => 1) },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo(0, 6);
    // −(1/max(proxy, 1))·∂proxy/∂logπ = (c·ρ/(1 − c))/1 = 0.5·1.5/0.5 = 1.5
    expect((logprobs.grad as Tensor).data[0]).toBeCloseTo(1.5, 5);
    expect((logprobs.grad as Tensor).data[1]).toBeCloseTo(-1, 6);
  });
  it('gradCheck where no clamp binds (clampNegative 0.05, clampPositive 0), every normalisation', () => {
    for (const normalize of ['negative-rate', 'square-root', 'none'] as const) {
      const input = paperInput();
      const result = gradCheck(
        (logprobs) => nftLoss({ ...input, logprobs }, { clampNegative: 0.05, normalize, maxLength: 6 }).loss,
        [input.logprobs],
        { epsilon: 1e-3, absoluteTolerance: 1e-5 },
      );
      expect(result.checked).toBe(72);
    }
  });
  it('sequenceLabels stand in for the advantages’ signs; a group of one label kind carries nothing', () => {
    const input = paperInput();
    const a = nftLoss(input).loss.item();
    const b = nftLoss({
      ...paperInput(),
      advantages: new Array(12).fill(0),
      sequenceLabels: paperFixture.batch.rewards,
    }).loss.item();
    expect(b).toBeCloseTo(a, 7);
    const logprobs = tensor([-1, -2], [2, 1], { requiresGrad: true });
    const { loss } = nftLoss({ logprobs, oldLogprobs: [-0.5, -2.5], advantages: [1, 1], mask: [1, 1], groupSizes: 2 });
    loss.backward();
    expect(loss.item()).toBe(0);
    expect([...(logprobs.grad as Tensor).data]).toEqual([0, 0]);
  });
  it('rejects bad options and a batch without groups; registered as nft, needs whole groups', () => {
    expect(() => nftLoss(paperInput(), { clampNegative: 0 })).toThrow(/clampNegative/);
    expect(() => nftLoss(paperInput(), { negativeWeight: -1 })).toThrow(/negativeWeight/);
    expect(() => nftLoss({ ...paperInput(), groupSizes: undefined })).toThrow(/groupSizes/);
    expect(policyLosses.get('nft')).toBe(nftLoss);
    expect(nftLossPart.needs).toEqual(['wholeGroups']);
  });
});
