/**
 * Tests of the REDI loss (#72): against the float64 torch reference written from the authors'
 * dpo2_trainer.py dpo_loss 'reinforce' (scripts/reference/redi_trpa_papers.py →
 * test/fixtures/redi-trpa-papers.json; value and gradient with respect to logπ), labels from the
 * advantage's sign, and the split of a batch into calls adding up to the whole.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import { type RediLossOptions, rediLoss } from './policy-losses-redi.js';
import { expectReference, type PaperLossCase } from './test-text-rl-papers.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/redi-trpa-papers.json', import.meta.url), 'utf8'),
) as {
  batch: { oldLogprobs: number[][]; logRatio: number[][]; mask: number[][] };
  losses: (PaperLossCase & { labels: number[] })[];
};

function fixtureInput(labels: number[]) {
  const old = fixture.batch.oldLogprobs.flat();
  return {
    logprobs: tensor(
      fixture.batch.logRatio.flat().map((r, i) => old[i] + r),
      [12, 6],
      { requiresGrad: true },
    ),
    oldLogprobs: old,
    advantages: labels.map((l) => (l ? 1 : -1)),
    mask: fixture.batch.mask.flat(),
    sequenceLabels: labels,
  };
}

describe('redi loss against the torch reference of REDI dpo_loss "reinforce"', () => {
  it.each(fixture.losses.filter((c) => c.loss === 'redi'))('$name', (referenceCase) => {
    const input = fixtureInput(referenceCase.labels);
    const { loss, metrics } = rediLoss(input, referenceCase.options as RediLossOptions);
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase, 1, 2e-5);
    expect(metrics.rediPositives).toBe(6);
    expect(metrics.rediNegatives).toBe(6);
  });
  it('the registry name runs the same function', () => {
    const referenceCase = fixture.losses.find((c) => c.loss === 'redi')!;
    const input = fixtureInput(referenceCase.labels);
    expect(policyLosses.get('redi')(input).loss.item()).toBeCloseTo(referenceCase.value, 5);
  });
});

describe('redi by hand', () => {
  it('labels from the advantage sign; advantage 0 carries no loss but counts in N', () => {
    // Rows: correct (2 tokens), wrong (1 token), advantage 0 (1 token). N = 3 → divisor 1.5.
    const logprobs = tensor([-1, -3, -2, 0, -4, 0], [3, 2], { requiresGrad: true });
    const { loss } = rediLoss({
      logprobs,
      oldLogprobs: [-1, -3, -2, 0, -4, 0],
      advantages: [0.5, -0.5, 0],
      mask: [1, 1, 1, 0, 1, 0],
    });
    loss.backward();
    // (−1·(−4/2) + 0.8·(−2)) / 1.5 = (2 − 1.6)/1.5
    expect(loss.item()).toBeCloseTo(0.4 / 1.5, 6);
    expect([...(logprobs.grad as Tensor).data]).toEqual(
      [-1 / 2 / 1.5, -1 / 2 / 1.5, 0.8 / 1.5, 0, 0, 0].map((v) => expect.closeTo(v, 6)),
    );
  });
  it('micro-batches with the global sequence count add up to the whole batch', () => {
    const labels = [1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1];
    const whole = rediLoss(fixtureInput(labels)).loss.item();
    const rows = (from: number, to: number) => {
      const input = fixtureInput(labels);
      const data = input.logprobs.data.slice(from * 6, to * 6);
      return rediLoss(
        {
          logprobs: tensor(data, [to - from, 6]),
          oldLogprobs: input.oldLogprobs.slice(from * 6, to * 6),
          advantages: input.advantages.slice(from, to),
          mask: input.mask.slice(from * 6, to * 6),
        },
        { globalSequenceCount: 12 },
      ).loss.item();
    };
    expect(rows(0, 5) + rows(5, 12)).toBeCloseTo(whole, 5);
  });
  it('gradCheck with the negative weighting (smooth everywhere)', () => {
    const input = fixtureInput([1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1]);
    gradCheck(
      (logprobs) => rediLoss({ ...input, logprobs }, { negativeWeightingGamma: 0.7 }).loss,
      [tensor(input.logprobs.data, [12, 6])],
      { epsilon: 1e-3, absoluteTolerance: 1e-5 },
    );
  });
  it('bad options and labels are named', () => {
    const input = fixtureInput([1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1]);
    expect(() => rediLoss(input, { negativeCoefficient: -1 })).toThrow(/options.negativeCoefficient/);
    expect(() => rediLoss({ ...input, sequenceLabels: [2, ...input.sequenceLabels.slice(1)] })).toThrow(
      /sequenceLabels\[0\]/,
    );
    expect(() => rediLoss(input, { klCoefficient: 0.1 })).toThrow(/klCoefficient/);
  });
});
