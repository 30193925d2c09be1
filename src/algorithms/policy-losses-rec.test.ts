/**
 * Tests of the REC loss (#205): every named variant of the authors' README against the float64
 * torch reference written from their `RECPolicyLossFn` (scripts/reference/group_reinforce.py →
 * test/fixtures/group-reinforce.json; value, gradient with respect to logπ, clip fraction), the
 * in-range rule on single tokens by hand, and finite differences: of the value where nothing is
 * detached in its derivative (no IS weight: the range is piecewise constant, the other weights do
 * not depend on logπ), of the frozen-weight surrogate where the detached ratio is a weight.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import type { PolicyLossInput, PolicyLossOptions } from './policy-losses-common.js';
import { type RecLossOptions, recInRange, recLoss } from './policy-losses-rec.js';
import { testFixture } from '../../test/helpers/fixtures.js';

interface LossCase {
  name: string;
  loss: string;
  options: Record<string, unknown>;
  perTokenAdvantages: boolean;
  value: number;
  gradient: number[];
  metrics: Record<string, number>;
}
interface Batch {
  ratios: number[][];
  oldLogprobs: number[][];
  mask: number[][];
  advantages: number[];
  tokenAdvantages: number[][];
}
const fixture = JSON.parse(readFileSync(testFixture('group-reinforce.json'), 'utf8')) as {
  batch: Batch;
  losses: LossCase[];
};

/** The fixture's batch [3, 4]: logπ = logπ_old + log ρ, padded positions included (their values are ignored). */
function fixtureInput(perToken: boolean): PolicyLossInput {
  const { ratios, oldLogprobs, mask, advantages, tokenAdvantages } = fixture.batch;
  const old = oldLogprobs.flat();
  return {
    logprobs: tensor(
      ratios.flat().map((r, i) => old[i] + Math.log(r)),
      [3, 4],
      { requiresGrad: true },
    ),
    oldLogprobs: old,
    advantages: perToken ? tokenAdvantages.flat() : advantages,
    mask: mask.flat(),
  };
}

describe('rec loss against the torch reference of RECPolicyLossFn', () => {
  it.each(fixture.losses.filter((c) => c.loss === 'rec'))('$name', (referenceCase) => {
    const input = fixtureInput(referenceCase.perTokenAdvantages);
    const { loss, metrics } = recLoss(input, referenceCase.options as PolicyLossOptions & RecLossOptions);
    loss.backward();
    expect(loss.item()).toBeCloseTo(referenceCase.value, 5);
    const gradient = (input.logprobs.grad as Tensor).data;
    referenceCase.gradient.forEach((g, i) => expect(gradient[i], `token ${i}`).toBeCloseTo(g, 6));
    expect(metrics.clipFraction).toBeCloseTo(referenceCase.metrics.clipFraction, 6);
  });
});

describe('the in-range rule by hand (ε = 0.2, ε′ = 0.6 / 2: bands at 0.4, 0.8, 1.2, 3)', () => {
  const bounds = { low: 0.2, high: 0.2, lowPrime: 0.6, highPrime: 2 };
  it.each([
    // [ratio, advantage, one-side, two-side, ring]
    [1.5, 1, false, false, false], // A > 0 above 1 + ε: PPO's clip binds
    [1.5, -1, true, false, false], // A < 0 above the band: one-side keeps it (PPO would too)
    [0.5, -1, false, false, false], // A < 0 below 1 − ε: clipped
    [0.5, 1, true, false, false], // A > 0 below the band: one-side keeps it, ring only below 0.4
    [0.3, 1, true, false, true], // ring's outer band for A ≥ 0
    [3.5, -1, true, false, true], // ring's outer band for A ≤ 0
    [1.1, 1, true, true, true], // inside the band: kept by all
  ] as [number, number, boolean, boolean, boolean][])(
    'ρ=%s, A=%s: one-side %s, two-side %s, ring %s',
    (ratio, advantage, oneSide, twoSide, ring) => {
      expect(recInRange(ratio, advantage, 'one-side', bounds)).toBe(oneSide);
      expect(recInRange(ratio, advantage, 'two-side', bounds)).toBe(twoSide);
      expect(recInRange(ratio, advantage, 'ring', bounds)).toBe(ring);
      expect(recInRange(ratio, advantage, 'none', bounds)).toBe(true);
    },
  );
  it('one token: the value is −w·A·logπ (not −ρA), the gradient −w·A, exactly 0 out of range', () => {
    const single = (ratio: number, advantage: number, options: RecLossOptions) => {
      const logprobs = tensor([Math.log(ratio) - 1], [1, 1], { requiresGrad: true });
      const { loss } = recLoss({ logprobs, oldLogprobs: [-1], advantages: [advantage], mask: [1] }, options);
      loss.backward();
      return { value: loss.item() + 0, gradient: (logprobs.grad as Tensor).data[0] + 0 }; // + 0 turns −0 into 0
    };
    const kept = single(1.1, 0.5, { clipMode: 'one-side', weight: 'importance-sampling' });
    expect(kept.value).toBeCloseTo(-1.1 * 0.5 * (Math.log(1.1) - 1), 6);
    expect(kept.gradient).toBeCloseTo(-1.1 * 0.5, 6);
    const clipped = single(1.5, 0.5, { clipMode: 'one-side', weight: 'importance-sampling' });
    expect(clipped.value).toBe(0);
    expect(clipped.gradient).toBe(0);
    // A regulariser still acts on a clipped token: forward-kl adds −c·logπ, gradient −c.
    expect(
      single(1.5, 0.5, { clipMode: 'one-side', regularizer: 'forward-kl', regularizerCoefficient: 0.1 }).gradient,
    ).toBeCloseTo(-0.1, 6);
  });
});

describe('rec finite-difference gradients', () => {
  const smooth: (PolicyLossOptions & RecLossOptions)[] = [
    {},
    { clipMode: 'one-side' },
    { clipMode: 'ring' },
    { clipMode: 'two-side', regularizer: 'k2', regularizerCoefficient: 0.3 },
    { regularizer: 'forward-kl', regularizerCoefficient: 0.1 },
    { weight: 'advantage', temperature: 0.5 },
  ];
  it.each(smooth)('without an IS weight the value is differentiable away from the bounds: %o', (options) => {
    for (const perToken of [false, true]) {
      const input = fixtureInput(perToken);
      const result = gradCheck((logprobs) => recLoss({ ...input, logprobs }, options).loss, [input.logprobs], {
        epsilon: 1e-3,
        absoluteTolerance: 1e-4,
      });
      expect(result.checked).toBe(12);
    }
  });
  it('with the IS weight: central differences of the frozen-weight surrogate Σ −ρ₀·A·1[in range]·logπ / n', () => {
    for (const clipMode of ['one-side', 'two-side', 'ring'] as const) {
      const input = fixtureInput(true);
      const base = Float32Array.from(input.logprobs.data);
      const old = input.oldLogprobs as number[];
      const mask = input.mask as number[];
      const advantages = input.advantages as number[];
      const bounds = { low: 0.2, high: 0.2, lowPrime: 0.6, highPrime: 2 };
      const count = mask.reduce((a, b) => a + b, 0);
      const coefficient = base.map((x, i) => {
        const ratio = Math.exp(x - old[i]);
        return mask[i] && recInRange(ratio, advantages[i], clipMode, bounds) ? (-ratio * advantages[i]) / count : 0;
      });
      const surrogate = (x: Float32Array): number => x.reduce((total, value, i) => total + coefficient[i] * value, 0);
      recLoss(input, { clipMode, weight: 'importance-sampling' }).loss.backward();
      for (let i = 0; i < 12; i++) {
        const plus = Float32Array.from(base);
        const minus = Float32Array.from(base);
        plus[i] += 1e-3;
        minus[i] -= 1e-3;
        const numeric = (surrogate(plus) - surrogate(minus)) / 2e-3;
        expect((input.logprobs.grad as Tensor).data[i], `${clipMode} token ${i}`).toBeCloseTo(numeric, 4);
      }
    }
  });
});

describe('rec edge cases', () => {
  it('all-zero advantages: no policy-gradient term, only the regulariser', () => {
    const logprobs = tensor([-1, -2], [1, 2], { requiresGrad: true });
    const { loss } = recLoss(
      { logprobs, oldLogprobs: [-1, -2], advantages: [0], mask: [1, 1] },
      { clipMode: 'ring', regularizer: 'forward-kl', regularizerCoefficient: 0.5 },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo((-0.5 * (-1 - 2)) / 2, 6);
    expect([...(logprobs.grad as Tensor).data]).toEqual([-0.25, -0.25]);
  });
  it('a row with no tokens (an unscored or fully masked sample) adds nothing, even with garbage log-probs', () => {
    const logprobs = tensor([-1, NaN, -Infinity, 5], [2, 2], { requiresGrad: true });
    const { loss, metrics } = recLoss(
      { logprobs, oldLogprobs: [-1, 0, 0, 0], advantages: [2, 7], mask: [1, 0, 0, 0] },
      { clipMode: 'one-side', weight: 'importance-sampling', regularizer: 'k2', regularizerCoefficient: 1 },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo(2, 6);
    expect([...(logprobs.grad as Tensor).data]).toEqual([-2, 0, 0, 0]);
    expect(metrics.clipFraction).toBe(0);
  });
  it('rejects out-of-range options as the authors assert', () => {
    const input = fixtureInput(false);
    expect(() => recLoss(input, { epsilonLow: 1.5 })).toThrow(/epsilonLow/);
    expect(() => recLoss(input, { epsilonHighPrime: 0 })).toThrow(/epsilonHighPrime/);
    expect(() => recLoss(input, { temperature: 0 })).toThrow(/temperature/);
    expect(() => recLoss(input, { regularizerCoefficient: -1 })).toThrow(/regularizerCoefficient/);
  });
  it('is registered as rec', () => {
    expect(policyLosses.get('rec')).toBe(recLoss);
  });
});
