/**
 * Tests of the Reg-GRPO loss (#63): against the float64 torch reference written from the paper's
 * Eq. 5–8 (scripts/reference/reg_grpo.py → test/fixtures/reg-grpo.json; value and gradient with
 * respect to logπ, with and without the KL term), gradCheck, a hand-computed group, the on-policy
 * first pass (σ_ρ = 0: the GRPO direction), and the input checks.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from '../testing/gradcheck.js';
import { policyLosses } from './index.js';
import { klK3 } from './kl.js';
import { regGrpoLoss, regGrpoLossPart } from './policy-losses-reg-grpo.js';
import { paperFixture, paperInput } from './test-text-rl-papers.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/reg-grpo.json', import.meta.url), 'utf8')) as {
  refLogprobs: number[];
  cases: Array<{ name: string; epsilon: number; klCoefficient: number; value: number; gradient: number[] }>;
};

/** The shared paper batch with the grpo z-scores (sample std, ε 1e-6) as the targets. */
function input() {
  const base = paperInput();
  const rewards = paperFixture.batch.rewards;
  const advantages = rewards.map((r, i) => {
    const group = rewards.slice(4 * Math.floor(i / 4), 4 * Math.floor(i / 4) + 4);
    const mean = group.reduce((a, b) => a + b, 0) / 4;
    const std = Math.sqrt(group.reduce((a, b) => a + (b - mean) ** 2, 0) / 3);
    return (r - mean) / (std + 1e-6);
  });
  return { ...base, advantages, refLogprobs: fixture.refLogprobs };
}

describe('reg-grpo loss against the torch reference of Eq. 7–8', () => {
  it.each(fixture.cases)('$name', (referenceCase) => {
    const batch = input();
    const { loss, metrics } = policyLosses.get('reg-grpo')(batch, {
      epsilon: referenceCase.epsilon,
      klCoefficient: referenceCase.klCoefficient,
      klEstimator: klK3,
    } as never);
    loss.backward();
    expect(loss.item()).toBeCloseTo(referenceCase.value, 5);
    const gradient = (batch.logprobs.grad as Tensor).data;
    referenceCase.gradient.forEach((g, i) => expect(gradient[i]).toBeCloseTo(g, 5));
    expect(metrics.regGrpoGroups).toBe(2); // the third group's rewards are all 0
  });
  it('gradCheck: nothing is detached where σ_ρ > 0', () => {
    const batch = input();
    const result = gradCheck(
      (logprobs) => regGrpoLoss({ ...batch, logprobs }, { epsilon: 0.1 }).loss,
      [batch.logprobs],
      {
        epsilon: 1e-3,
        absoluteTolerance: 1e-4,
      },
    );
    expect(result.checked).toBe(72);
  });
});

describe('reg-grpo by hand', () => {
  it('one group of three, one token each: (A − (ρ − μ)/σ)² averaged', () => {
    // ρ = [0.1, −0.1, 0.3]: μ 0.1, sample σ 0.2, predicted [0, −1, 1]; targets [1, −1, 0].
    const logprobs = tensor([-0.9, -1.1, -0.7], [3, 1], { requiresGrad: true });
    const { loss } = regGrpoLoss(
      { logprobs, oldLogprobs: [-1, -1, -1], advantages: [1, -1, 0], mask: [1, 1, 1], groupSizes: 3 },
      { epsilon: 0 },
    );
    expect(loss.item()).toBeCloseTo((1 + 0 + 1) / 3, 5);
  });
  it('on-policy (ρ ≡ 0, σ_ρ = 0) the gradient is GRPO’s direction, −2A/(G·n·ε) per token', () => {
    const logprobs = tensor([-1, -2, -0.5, -1, -3, -1], [3, 2], { requiresGrad: true });
    const advantages = [1.2, -0.3, -0.9];
    const { loss } = regGrpoLoss(
      { logprobs, oldLogprobs: Array.from(logprobs.data), advantages, mask: [1, 1, 1, 0, 1, 1], groupSizes: 3 },
      { epsilon: 0.01 },
    );
    loss.backward();
    expect(loss.item()).toBeCloseTo((1.44 + 0.09 + 0.81) / 3, 5);
    const gradient = (logprobs.grad as Tensor).data;
    // d/dρ_i of (1/3)Σ(A − (ρ − μ)/ε)² at ρ = 0 is −(2/3)(A_i − mean A)/ε; the targets sum to 0.
    [0, 0, 1, 2, 2].forEach((row, k) =>
      expect(gradient[[0, 1, 2, 4, 5][k]]).toBeCloseTo((-2 / 3) * (advantages[row] / 0.01), 2),
    );
    expect(gradient[3]).toBe(0);
  });
  it('needs whole groups, a non-negative ε; registered with its entry', () => {
    expect(() => regGrpoLoss({ ...input(), groupSizes: undefined })).toThrow(/groupSizes/);
    expect(() => regGrpoLoss(input(), { epsilon: -1 })).toThrow(/epsilon/);
    expect(policyLosses.get('reg-grpo')).toBe(regGrpoLoss);
    expect(regGrpoLossPart.needs).toEqual(['wholeGroups']);
    expect(regGrpoLossPart.options?.safeParse({ clip: 0.2 }).success).toBe(false);
  });
});
