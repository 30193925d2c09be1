/**
 * Tests of the OPMD loss (#205): the float64 torch reference written from the authors'
 * `OPMDPolicyLossFn` (scripts/reference/group_reinforce.py → test/fixtures/group-reinforce.json;
 * value and gradient with respect to logπ), a hand-computed token, finite differences of the value
 * (nothing is detached: the loss is linear in logπ), and the edge cases.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import type { PolicyLossInput } from './policy-losses-common.js';
import { opmdLoss } from './policy-losses-opmd.js';
import { reinforceLoss } from './policy-losses.js';
import { testFixture } from '../../test/helpers/fixtures.js';

interface LossCase {
  name: string;
  loss: string;
  options: { tau?: number };
  perTokenAdvantages: boolean;
  value: number;
  gradient: number[];
}
const fixture = JSON.parse(readFileSync(testFixture('group-reinforce.json'), 'utf8')) as {
  batch: {
    ratios: number[][];
    oldLogprobs: number[][];
    mask: number[][];
    advantages: number[];
    tokenAdvantages: number[][];
  };
  losses: LossCase[];
};

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

describe('opmd loss', () => {
  it.each(fixture.losses.filter((c) => c.loss === 'opmd'))('$name matches the torch reference', (referenceCase) => {
    const input = fixtureInput(referenceCase.perTokenAdvantages);
    const { loss } = opmdLoss(input, referenceCase.options);
    loss.backward();
    expect(loss.item()).toBeCloseTo(referenceCase.value, 5);
    const gradient = (input.logprobs.grad as Tensor).data;
    referenceCase.gradient.forEach((g, i) => expect(gradient[i], `token ${i}`).toBeCloseTo(g, 6));
  });
  it('one token by hand: value −A·logπ/(1+τ), gradient −A/(1+τ), whatever π_old says', () => {
    const logprobs = tensor([-0.5], [1, 1], { requiresGrad: true });
    const { loss } = opmdLoss({ logprobs, oldLogprobs: [-3], advantages: [0.8], mask: [1] });
    loss.backward();
    expect(loss.item()).toBeCloseTo((-0.8 * -0.5) / 2, 6);
    expect((logprobs.grad as Tensor).data[0]).toBeCloseTo(-0.4, 6);
  });
  it('τ = 0 has the gradient of on-policy reinforce (the values differ: −A·logπ against −A)', () => {
    const input = fixtureInput(false);
    opmdLoss(input, { tau: 0 }).loss.backward();
    const opmd = Float32Array.from((input.logprobs.grad as Tensor).data);
    const other = fixtureInput(false);
    reinforceLoss(other).loss.backward();
    [...(other.logprobs.grad as Tensor).data].forEach((g, i) => expect(opmd[i]).toBeCloseTo(g, 7));
  });
  it('matches central differences (per-sequence and per-token advantages)', () => {
    for (const perToken of [false, true]) {
      const input = fixtureInput(perToken);
      const result = gradCheck((logprobs) => opmdLoss({ ...input, logprobs }, { tau: 0.5 }).loss, [input.logprobs], {
        epsilon: 1e-3,
        absoluteTolerance: 1e-4,
      });
      expect(result.checked).toBe(12);
    }
  });
  it('zero advantages (an all-equal group) give zero loss and gradient; masked garbage stays out', () => {
    const logprobs = tensor([-1, NaN, -2, -Infinity], [2, 2], { requiresGrad: true });
    const { loss } = opmdLoss({ logprobs, oldLogprobs: [-1, 0, -2, 0], advantages: [0, 0], mask: [1, 0, 1, 0] });
    loss.backward();
    expect(loss.item() + 0).toBe(0);
    expect([...(logprobs.grad as Tensor).data].map((g) => g + 0)).toEqual([0, 0, 0, 0]);
  });
  it('rejects a negative τ; is registered as opmd', () => {
    expect(() => opmdLoss(fixtureInput(false), { tau: -0.5 })).toThrow(/tau/);
    expect(policyLosses.get('opmd')).toBe(opmdLoss);
  });
});
