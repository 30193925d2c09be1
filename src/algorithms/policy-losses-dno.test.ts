/**
 * Tests of DNO (#222, Algorithm 1): the win-rate advantage and the pair loss against the float64
 * torch reference written from the paper's Algorithm 1 (scripts/reference/dno_paper.py →
 * test/fixtures/dno-paper.json; value and gradient with respect to logπ), one pair by hand, the
 * gradient by central differences, micro-batches adding up to the batch, and the refusals.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { advantageEstimators, policyLosses } from './index.js';
import { type DnoLossOptions, dnoAdvantage, dnoLoss, dnoLossPart } from './policy-losses-dno.js';
import { expectReference, type PaperLossCase } from './test-text-rl-papers.js';
import type { RunSettings } from './registry.js';
import type { PolicyLossOptions } from './policy-losses-common.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/dno-paper.json', import.meta.url), 'utf8')) as {
  batch: { oldLogprobs: number[][]; logRatio: number[][]; mask: number[][]; rewards: number[] };
  losses: (PaperLossCase & { groupSizes: number[]; winRates: number[]; pairs: number })[];
};

function fixtureInput(groupSizes: number[]) {
  const old = fixture.batch.oldLogprobs.flat();
  return {
    logprobs: tensor(
      fixture.batch.logRatio.flat().map((r, i) => old[i] + r),
      [12, 6],
      { requiresGrad: true },
    ),
    oldLogprobs: old,
    advantages: dnoAdvantage({ rewards: fixture.batch.rewards, groupSizes }).advantages,
    mask: fixture.batch.mask.flat(),
    groupSizes,
  };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

describe('dno against the torch reference of DNO Algorithm 1', () => {
  it.each(fixture.losses)('$name', (referenceCase) => {
    const input = fixtureInput(referenceCase.groupSizes);
    referenceCase.winRates.forEach((rate, i) => expect(input.advantages[i]).toBeCloseTo(rate, 6));
    const { loss, metrics } = dnoLoss(input, referenceCase.options as DnoLossOptions);
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase, 1, 2e-5);
    expect(metrics.dnoPairs).toBe(referenceCase.pairs);
  });
  it('the registry names run the same functions', () => {
    const referenceCase = fixture.losses[0];
    const advantages = advantageEstimators.get('dno')({ rewards: fixture.batch.rewards, groupSizes: 4 }).advantages;
    const input = { ...fixtureInput([4, 4, 4]), advantages };
    const options = referenceCase.options as DnoLossOptions & PolicyLossOptions;
    expect(policyLosses.get('dno')(input, options).loss.item()).toBeCloseTo(referenceCase.value, 5);
  });
  it('the gradient matches central differences (the loss is smooth: no stop-gradient factor but the targets)', () => {
    const input = fixtureInput([5, 3, 4]);
    const result = gradCheck((logprobs) => dnoLoss({ ...input, logprobs }, { eta: 2 }).loss, [input.logprobs], {
      epsilon: 1e-3,
      absoluteTolerance: 1e-4,
    });
    expect(result.checked).toBe(72);
  });
});

describe('dno by hand', () => {
  it('one pair on-policy: loss log 2, dLoss/ds = η·(σ(0) − σ(r_1 − r_2)) on every token of the first', () => {
    const logprobs = tensor([-1, -2, -0.5, -3], [2, 2], { requiresGrad: true });
    const advantages = dnoAdvantage({ rewards: [1, 0], groupSizes: 2 }).advantages; // win-rates [1, 0]
    expect([...advantages]).toEqual([1, 0]);
    const { loss } = dnoLoss(
      { logprobs, oldLogprobs: [-1, -2, -0.5, -3], advantages, mask: [1, 1, 1, 0], groupSizes: 2 },
      { eta: 0.5 },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo(Math.log(2), 6);
    const slope = 0.5 * (0.5 - sigmoid(1));
    expect([...(logprobs.grad as Tensor).data].map((g) => +g.toFixed(6))).toEqual(
      [slope, slope, -slope, 0].map((g) => +g.toFixed(6)),
    );
  });
  it('the win-rates: ties count ½, unscored members leave the group, a lone member gets 0', () => {
    const result = dnoAdvantage({ rewards: [3, null, 1, 1, 7, null], groupSizes: [4, 2] });
    expect([...result.advantages]).toEqual([1, 0, 0.25, 0.25, 0, 0]);
    expect([...result.keep]).toEqual([1, 0, 1, 1, 1, 0]);
    const given = dnoAdvantage({ rewards: [0.75, 0.25], groupSizes: 2 }, { rewardIsWinRate: true });
    expect([...given.advantages]).toEqual([0.75, 0.25]);
  });
  it('micro-batches of whole groups with the batch group count add up to the whole batch', () => {
    const whole = fixtureInput([4, 4, 4]);
    const total = dnoLoss(whole, { eta: 1 }).loss.item();
    const old = whole.oldLogprobs;
    const part = (rows: number[]) => {
      const pick = (values: ArrayLike<number>, width: number) =>
        rows.flatMap((b) => Array.from(values).slice(b * width, (b + 1) * width));
      return dnoLoss(
        {
          logprobs: tensor(pick(whole.logprobs.data, 6), [rows.length, 6]),
          oldLogprobs: pick(old, 6),
          advantages: pick(whole.advantages, 1),
          mask: pick(whole.mask, 6),
          groupSizes: 4,
        },
        { eta: 1, globalGroupCount: 3 },
      ).loss.item();
    };
    const first = part([0, 1, 2, 3, 4, 5, 6, 7]);
    const second = part([8, 9, 10, 11]);
    expect(first + second).toBeCloseTo(total, 6);
  });
  it('names a missing η, missing groups and options it cannot honour', () => {
    const input = fixtureInput([4, 4, 4]);
    expect(() => dnoLoss(input)).toThrow(/options\.eta/);
    expect(() => dnoLoss(input, { eta: -1 })).toThrow(/options\.eta/);
    expect(() => dnoLoss({ ...input, groupSizes: undefined }, { eta: 1 })).toThrow(/groupSizes/);
    expect(() => dnoLoss(input, { eta: 1, klCoefficient: 0.1 })).toThrow(/klCoefficient/);
    expect(dnoLossPart.needs).toEqual(['wholeGroups']);
  });
  it('refuses a run without η, with another advantage, or with a KL term in the loss', () => {
    const settings = {
      advantage: { name: 'grpo', needs: [] },
      klCoefficient: 0.1,
      klPlacement: 'loss',
      mismatchCorrection: false,
    } as unknown as RunSettings;
    const lines = dnoLossPart.refuses!({}, settings);
    expect(lines.map((line) => line.split(':')[0])).toEqual([
      'algorithm.lossOptions.eta',
      'algorithm.advantage',
      'algorithm.klCoefficient',
    ]);
    const fine = { ...settings, advantage: { name: 'dno', needs: [] }, klCoefficient: 0 } as unknown as RunSettings;
    expect(dnoLossPart.refuses!({ eta: 1 }, fine)).toEqual([]);
  });
});
