/**
 * Tests of the DRPO loss (#256): against the float64 torch reference written from the authors'
 * compute_policy_loss_drpo (scripts/reference/text_rl_papers.py → test/fixtures/text-rl-papers.json;
 * value and gradient with respect to logπ), the length weight by hand, finite differences with the
 * hinge inactive (no detached term then but the log-sum-exp's, checked through DisCO-b's mean), and
 * the limit λ → ∞ where it is DisCO.
 */
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import { discoLoss } from './policy-losses-disco.js';
import { expectReference, paperFixture, paperInput } from './test-text-rl-papers.js';
import { type DrpoLossOptions, drpoLoss, drpoLossPart } from './policy-losses-drpo.js';

describe('drpo loss against the torch reference of compute_policy_loss_drpo', () => {
  it.each(paperFixture.losses.filter((c) => c.loss === 'drpo'))('$name', (referenceCase) => {
    const input = paperInput();
    const { loss, metrics } = drpoLoss(input, referenceCase.options as DrpoLossOptions);
    loss.backward();
    expectReference(loss, input.logprobs, referenceCase);
    expect(metrics.klConstraint).toBeCloseTo(referenceCase.metrics.kl, 6);
  });
});

describe('drpo by hand', () => {
  it('two positives of lengths 1 and 3 (L = 4, λ = 0.5) weigh e^{1.5} : e^{0.5}; the negative is DisCO-b', () => {
    const logprobs = tensor([-1, 0, 0, -2, -2, -2, -0.5, -0.5, 0], [3, 3], { requiresGrad: true });
    const { loss } = drpoLoss(
      {
        logprobs,
        oldLogprobs: Array.from(logprobs.data),
        advantages: [1, 1, -2],
        mask: [1, 0, 0, 1, 1, 1, 1, 1, 0],
        groupSizes: 3,
      },
      { negatives: 'mean', lengthLambda: 0.5, maxLength: 4 },
    );
    loss.backward();
    const [w1, w2] = [Math.exp(0.75 / 0.5), Math.exp(0.25 / 0.5)];
    const positive = (w1 * -1 + w2 * -2) / (w1 + w2);
    expect(loss.item()).toBeCloseTo(-(positive - -0.5), 5);
    const gradient = [...(logprobs.grad as Tensor).data].map((g) => g + 0);
    expect(gradient[0]).toBeCloseTo(-w1 / (w1 + w2), 6); // one token carries the whole mean
    expect(gradient[3]).toBeCloseTo(-w2 / (w1 + w2) / 3, 6);
    expect(gradient[6]).toBeCloseTo(0.5, 6);
    expect(gradient[2]).toBe(0);
  });
  it('with equal lengths the weights cancel: DRPO is DisCO', () => {
    const input = () => ({
      logprobs: tensor([-1, -0.3, -2, -0.7, -0.2, -1.1, -0.9, -0.4], [4, 2], { requiresGrad: true }),
      oldLogprobs: [-1.1, -0.2, -1.8, -0.9, -0.25, -1, -1, -0.5],
      advantages: [0.5, -0.5, 0.5, -0.5],
      mask: [1, 1, 1, 1, 1, 1, 1, 1],
      groupSizes: 4,
    });
    expect(drpoLoss(input()).loss.item()).toBeCloseTo(discoLoss(input()).loss.item(), 5);
  });
  it('gradCheck of the value where nothing is detached (mean negatives, hinge inactive)', () => {
    const input = paperInput();
    const result = gradCheck(
      (logprobs) => drpoLoss({ ...input, logprobs }, { negatives: 'mean', klBound: 1, lengthLambda: 0.5 }).loss,
      [input.logprobs],
      { epsilon: 1e-3, absoluteTolerance: 1e-4 },
    );
    expect(result.checked).toBe(72);
  });
  it('rejects a bad λ and needs whole groups; registered as drpo', () => {
    expect(() => drpoLoss(paperInput(), { lengthLambda: 0 })).toThrow(/lengthLambda/);
    expect(() => drpoLoss({ ...paperInput(), groupSizes: undefined })).toThrow(/groupSizes/);
    expect(policyLosses.get('drpo')).toBe(drpoLoss);
    expect(drpoLossPart.needs).toEqual(['wholeGroups']);
  });
});
