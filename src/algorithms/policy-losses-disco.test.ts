/**
 * Tests of the DisCO loss (#23): every variant (log-L / L-ratio scores, log-sum-exp / mean negatives,
 * k1 / k3 KL bound, hinge active or not) against the float64 torch reference written from the authors'
 * compute_policy_loss_disco_* and _discob_* (scripts/reference/text_rl_papers.py → test/fixtures/text-rl-papers.json;
 * value and gradient with respect to logπ), the labels from advantages or from sequenceLabels, finite
 * differences of the smooth function whose gradient the detached terms reproduce, a hand-computed
 * group, micro-batches adding up to the batch, and the refusals.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import type { PolicyLossInput, PolicyLossOptions } from './policy-losses-common.js';
import { type DiscoLossOptions, discoLoss, discoLossPart } from './policy-losses-disco.js';
import type { RunSettings } from './registry.js';
import { expectReference, paperFixture, paperInput } from './test-text-rl-papers.js';

describe('disco loss against the torch reference of compute_policy_loss_disco_* and _discob_*', () => {
  it.each(paperFixture.losses.filter((c) => c.loss === 'disco'))('$name', (referenceCase) => {
    const input = paperInput();
    const { loss, metrics } = discoLoss(input, referenceCase.options as DiscoLossOptions);
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase);
    expect(metrics.klConstraint).toBeCloseTo(referenceCase.metrics.kl, 6);
    expect(metrics.clipFraction).toBe(referenceCase.metrics.constraintActive);
    expect(metrics.discriminativeGroups).toBe(2); // the all-wrong third group carries nothing
  });
  it('sequenceLabels (the rewards) give the same loss as the signs of the advantages', () => {
    const input = paperInput();
    const labelled = { ...paperInput(), sequenceLabels: paperFixture.batch.rewards, advantages: new Array(12).fill(0) };
    discoLoss(labelled).loss.backward();
    const referenceCase = paperFixture.losses.find((c) => c.loss === 'disco')!;
    expectReference(discoLoss(input).loss, labelled.logprobs, referenceCase);
  });
});

/**
 * The smooth function whose gradient DisCO's detached terms give: −Σ_g J_g/Q + (β/2)·max(KL − δ, 0)²
 * with J_g = mean_pos s − τ·log Σ_neg exp(s/τ) (or − mean_neg s), in plain float64.
 */
function smoothObjective(x: ArrayLike<number>, input: PolicyLossInput, options: DiscoLossOptions): number {
  const old = input.oldLogprobs as number[];
  const mask = input.mask as number[];
  const rewards = paperFixture.batch.rewards;
  const tau = options.tau ?? (options.score === 'likelihood-ratio' ? 1 : 10);
  const scores = Array.from({ length: 12 }, (_, b) => {
    let total = 0;
    let n = 0;
    for (let t = 0; t < 6; t++)
      if (mask[b * 6 + t]) {
        total += options.score === 'likelihood-ratio' ? Math.exp(x[b * 6 + t] - old[b * 6 + t]) : x[b * 6 + t];
        n++;
      }
    return total / n;
  });
  let objective = 0;
  for (let g = 0; g < 3; g++) {
    const rows = [0, 1, 2, 3].map((k) => 4 * g + k);
    const pos = rows.filter((b) => rewards[b] === 1).map((b) => scores[b]);
    const neg = rows.filter((b) => rewards[b] === 0).map((b) => scores[b]);
    if (!pos.length || !neg.length) continue;
    const negTerm =
      options.negatives === 'mean'
        ? neg.reduce((a, b) => a + b, 0) / neg.length
        : tau * Math.log(neg.reduce((a, s) => a + Math.exp(s / tau), 0));
    objective += pos.reduce((a, b) => a + b, 0) / pos.length - negTerm;
  }
  let kl = 0;
  let tokens = 0;
  for (let i = 0; i < 72; i++)
    if (mask[i]) {
      const logRatio = x[i] - old[i];
      kl += options.klBoundEstimator === 'k3' ? Math.exp(logRatio) - 1 - logRatio : -logRatio;
      tokens++;
    }
  kl /= tokens;
  const excess = Math.max(kl - (options.klBound ?? 1e-4), 0);
  return -objective / 3 + ((options.klPenalty ?? 1e3) / 2) * excess * excess;
}

describe('disco finite-difference gradients', () => {
  it('DisCO-b with the hinge inactive has no detached term: gradCheck of the value itself', () => {
    for (const score of ['log-likelihood', 'likelihood-ratio'] as const) {
      const input = paperInput();
      const options = { score, negatives: 'mean', klBound: 1 } as const;
      const result = gradCheck((logprobs) => discoLoss({ ...input, logprobs }, options).loss, [input.logprobs], {
        epsilon: 1e-3,
        absoluteTolerance: 1e-4,
      });
      expect(result.checked).toBe(72);
    }
  });
  it.each([
    {},
    { score: 'likelihood-ratio' },
    { negatives: 'mean', klBoundEstimator: 'k3' },
    { tau: 2, klPenalty: 10 },
  ] as DiscoLossOptions[])('autograd = central differences of the smooth objective, %o', (options) => {
    const input = paperInput();
    discoLoss(input, options).loss.backward();
    const base = Float64Array.from(input.logprobs.data);
    const gradient = (input.logprobs.grad as Tensor).data;
    const mask = input.mask as number[];
    for (let i = 0; i < 72; i++) {
      const plus = Float64Array.from(base);
      const minus = Float64Array.from(base);
      plus[i] += 1e-4;
      minus[i] -= 1e-4;
      const numeric = mask[i]
        ? (smoothObjective(plus, input, options) - smoothObjective(minus, input, options)) / 2e-4
        : 0;
      expect(Math.abs(gradient[i] - numeric), `token ${i}`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(numeric)));
    }
  });
});

describe('disco by hand and in pieces', () => {
  it('one group, one positive and one negative, on-policy: −(s⁺ − s⁻), gradient −1/n⁺ and +1/n⁻ per token', () => {
    const logprobs = tensor([-1, -2, -0.5, 0], [2, 2], { requiresGrad: true });
    const input = { logprobs, oldLogprobs: [-1, -2, -0.5, 0], advantages: [1, -1], mask: [1, 1, 1, 0], groupSizes: 2 };
    const { loss } = discoLoss(input, { negatives: 'mean' });
    loss.backward();
    expect(loss.item()).toBeCloseTo(-(-1.5 - -0.5), 6);
    expect([...(logprobs.grad as Tensor).data].map((g) => g + 0)).toEqual([-0.5, -0.5, 1, 0]);
  });
  it('micro-batches of whole groups, scaled by their share of the sequences, add up to the batch (hinge inactive)', () => {
    const whole = paperInput();
    const options = { klBound: 1 };
    discoLoss(whole, options).loss.backward();
    let total = 0;
    const gradient: number[] = [];
    for (const rows of [
      [0, 8],
      [8, 12],
    ]) {
      const part = paperInput();
      const slice = (values: ArrayLike<number>) => Array.from(values).slice(rows[0] * 6, rows[1] * 6);
      const logprobs = tensor(slice(part.logprobs.data), [rows[1] - rows[0], 6], { requiresGrad: true });
      const { loss } = discoLoss(
        {
          logprobs,
          oldLogprobs: slice(part.oldLogprobs as number[]),
          mask: slice(part.mask),
          advantages: (part.advantages as number[]).slice(rows[0], rows[1]),
          groupSizes: 4,
        },
        { ...options, globalSequenceCount: 12 },
      );
      loss.backward();
      total += loss.item();
      gradient.push(...(logprobs.grad as Tensor).data);
    }
    expect(total).toBeCloseTo(discoLoss(paperInput(), options).loss.item(), 5);
    gradient.forEach((g, i) => expect(g).toBeCloseTo((whole.logprobs.grad as Tensor).data[i], 6));
  });
  it('a group with no labelled pair and rows without tokens add nothing; no NaN from garbage log-probs', () => {
    const logprobs = tensor([-1, NaN, -Infinity, 5], [2, 2], { requiresGrad: true });
    const { loss, metrics } = discoLoss(
      { logprobs, oldLogprobs: [-1, 0, 0, 0], advantages: [1, -1], mask: [1, 0, 0, 0], groupSizes: 2 },
      { negatives: 'mean' },
    );
    loss.backward();
    expect(loss.item()).toBe(0);
    expect([...(logprobs.grad as Tensor).data].every((g) => g === 0)).toBe(true);
    expect(metrics.discriminativeGroups).toBe(0);
  });
  it('rejects what it cannot do, naming the option', () => {
    const input = paperInput();
    expect(() => discoLoss({ ...input, groupSizes: undefined })).toThrow(/groupSizes/);
    expect(() => discoLoss(input, { klCoefficient: 0.1 } as PolicyLossOptions)).toThrow(/klCoefficient/);
    expect(() => discoLoss(input, { tau: 0 })).toThrow(/tau/);
    expect(() => discoLoss({ ...input, sequenceLabels: new Array(12).fill(2) })).toThrow(/sequenceLabels/);
  });
  it('refuses a KL-to-reference term in the loss and a mismatch correction before compute', () => {
    const settings = { klCoefficient: 0.1, klPlacement: 'loss', mismatchCorrection: true } as RunSettings;
    const lines = discoLossPart.refuses!({}, settings);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^algorithm\.klCoefficient: /);
    expect(lines[1]).toMatch(/^algorithm\.mismatchCorrection: /);
    expect(discoLossPart.refuses!({}, { ...settings, klPlacement: 'reward', mismatchCorrection: false })).toEqual([]);
  });
  it('is registered as disco and needs whole groups', () => {
    expect(policyLosses.get('disco')).toBe(discoLoss);
    expect(discoLossPart.needs).toEqual(['wholeGroups']);
  });
});
