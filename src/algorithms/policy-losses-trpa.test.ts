/**
 * Tests of TRPA (#261): the loss against the float64 torch reference written from the authors'
 * compute_pairwise_policy_loss and update_policy's trust region (scripts/reference/redi_trpa_papers.py
 * → test/fixtures/redi-trpa-papers.json; value and gradient with respect to logπ), the pairs and
 * anisotropy by hand, the raw-reward advantage, and the refusals.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { policyLosses, advantageEstimators } from './index.js';
import { type TrpaLossOptions, trpaAdvantage, trpaLoss, trpaLossPart } from './policy-losses-trpa.js';
import { expectReference, type PaperLossCase } from './test-text-rl-papers.js';
import type { RunSettings } from './registry.js';
import type { PolicyLossOptions } from './policy-losses-common.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/redi-trpa-papers.json', import.meta.url), 'utf8'),
) as {
  batch: { oldLogprobs: number[][]; logRatio: number[][]; refLogprobs: number[][]; mask: number[][] };
  losses: (PaperLossCase & { rewards: number[]; pairs: number })[];
};

function fixtureInput(rewards: number[]) {
  const old = fixture.batch.oldLogprobs.flat();
  return {
    logprobs: tensor(
      fixture.batch.logRatio.flat().map((r, i) => old[i] + r),
      [12, 6],
      { requiresGrad: true },
    ),
    oldLogprobs: old,
    refLogprobs: fixture.batch.refLogprobs.flat(),
    advantages: trpaAdvantage({ rewards, groupSizes: 4 }).advantages,
    mask: fixture.batch.mask.flat(),
    groupSizes: [4, 4, 4],
  };
}

describe('trpa loss against the torch reference of TRPA compute_pairwise_policy_loss + trust region', () => {
  it.each(fixture.losses.filter((c) => c.loss === 'trpa'))('$name', (referenceCase) => {
    const input = fixtureInput(referenceCase.rewards);
    const { loss, metrics } = trpaLoss(input, referenceCase.options as TrpaLossOptions);
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase, 1, 2e-5);
    expect(metrics.trpaPairs).toBe(referenceCase.pairs);
  });
  it('the registry names run the same functions', () => {
    const referenceCase = fixture.losses.find((c) => c.loss === 'trpa')!;
    const input = fixtureInput(referenceCase.rewards);
    const advantages = advantageEstimators.get('trpa')({ rewards: referenceCase.rewards, groupSizes: 4 }).advantages;
    expect([...advantages]).toEqual(referenceCase.rewards);
    expect(
      policyLosses
        .get('trpa')({ ...input, advantages }, { correctReward: 3 } as TrpaLossOptions & PolicyLossOptions)
        .loss.item(),
    ).toBeCloseTo(referenceCase.value, 5);
  });
});

describe('trpa by hand', () => {
  it('one pair: −log σ(2.5·β·(s_w − s_l)) when the winner is correct, β alone otherwise; on-policy KL 0', () => {
    // Two rows of one token; s = logπ − logπ_ref = [0.4, −0.6].
    const run = (rewards: number[]) => {
      const logprobs = tensor([-1, -2], [2, 1], { requiresGrad: true });
      const { loss } = trpaLoss(
        {
          logprobs,
          oldLogprobs: [-1, -2],
          refLogprobs: [-1.4, -1.4],
          advantages: rewards,
          mask: [1, 1],
          groupSizes: 2,
        },
        {},
      );
      loss.backward();
      return { value: loss.item(), gradient: [...(logprobs.grad as Tensor).data] };
    };
    const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
    const steep = run([1, 0]); // the winner is correct (≥ correctReward 1): h = 0.25·1
    expect(steep.value).toBeCloseTo(-Math.log(sigmoid(0.25)), 6);
    expect(steep.gradient[0]).toBeCloseTo(-(1 - sigmoid(0.25)) * 0.25, 6);
    expect(steep.gradient[1]).toBeCloseTo((1 - sigmoid(0.25)) * 0.25, 6);
    const flat = run([0.5, 0]); // a better level that is not correct: h = 0.1·1
    expect(flat.value).toBeCloseTo(-Math.log(sigmoid(0.1)), 6);
    const reversed = run([0, 1]); // the second row wins: h = 0.25·(−0.6 − 0.4)
    expect(reversed.value).toBeCloseTo(-Math.log(sigmoid(-0.25)), 6);
  });
  it('the trust region is clamped at 10 per token, as verl low_var_kl, with no gradient past the clamp', () => {
    // One row, two tokens: logπ_θ − logπ_old = [−13, 0.5]; a single level, so the fallback carries the preference.
    const logprobs = tensor([-14, -0.5], [1, 2], { requiresGrad: true });
    const { loss, metrics } = trpaLoss(
      { logprobs, oldLogprobs: [-1, -1], refLogprobs: [-14, -0.5], advantages: [1], mask: [1, 1], groupSizes: 1 },
      { trustRegionCoefficient: 1 },
    );
    loss.backward();
    const second = Math.exp(-0.5) + 0.5 - 1; // e^{old − θ} − (old − θ) − 1 at old − θ = −0.5
    expect(metrics.trustRegionKl).toBeCloseTo((10 + second) / 2, 5);
    // −log σ(s) with s = 0 (θ = ref): its gradient −½ per token; the clamped token adds nothing more.
    const gradient = [...(logprobs.grad as Tensor).data];
    expect(gradient[0]).toBeCloseTo(-0.25, 6);
    expect(gradient[1]).toBeCloseTo(-0.25 + (1 - Math.exp(-0.5)) / 2, 6);
  });
  it('the raw-reward advantage keeps unscored samples out', () => {
    const result = trpaAdvantage({ rewards: [3, null, -0.5, -0.5], groupSizes: 2 });
    expect([...result.advantages]).toEqual([3, 0, -0.5, -0.5]);
    expect([...result.keep]).toEqual([1, 0, 1, 1]);
    expect([...result.stdIsZero]).toEqual([1, 1]);
  });
  it('needs the reference log-probs and whole groups, and names bad options', () => {
    const input = fixtureInput(fixture.losses.find((c) => c.loss === 'trpa')!.rewards);
    expect(() => trpaLoss({ ...input, refLogprobs: undefined })).toThrow(/refLogprobs/);
    expect(() => trpaLoss({ ...input, groupSizes: undefined })).toThrow(/groupSizes/);
    expect(() => trpaLoss(input, { beta: 0 })).toThrow(/options.beta/);
    expect(trpaLossPart.needs).toEqual(['wholeGroups', 'referenceLogprobs']);
  });
  it('refuses an advantage other than trpa and a KL-to-reference term in the loss', () => {
    const settings = {
      advantage: { name: 'grpo', needs: [] },
      klCoefficient: 0.1,
      klPlacement: 'loss',
      mismatchCorrection: null,
    } as unknown as RunSettings;
    const lines = trpaLossPart.refuses!({}, settings);
    expect(lines.some((line) => line.startsWith('algorithm.advantage'))).toBe(true);
    expect(lines.some((line) => line.startsWith('algorithm.klCoefficient'))).toBe(true);
  });
});
