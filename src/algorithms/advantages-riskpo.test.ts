/**
 * Tests of RiskPO's advantage (#249): every option against the float64 torch port of the authors'
 * compute_grpo_bundle_rvar_outcome_advantage_quantile_tracking (scripts/reference/riskpo.py →
 * test/fixtures/riskpo.json), a bundle worked by hand, all-equal rewards, groups of one, unscored
 * rewards and bad options.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import type { QuantileTracker } from './advantages-groups.js';
import { type RiskpoAdvantageOptions, riskpoAdvantage, updateQuantileTracker } from './advantages-riskpo.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/riskpo.json', import.meta.url), 'utf8')) as {
  rewards: number[];
  groupSizes: number[];
  cases: { options: RiskpoAdvantageOptions; advantages: number[] }[];
  tracking: { mode: 'track' | 'mix'; steps: { advantages: number[]; tracker: number[] }[] }[];
};

function expectClose(actual: ArrayLike<number>, expected: readonly number[], what: string): void {
  expect(actual.length, what).toBe(expected.length);
  expected.forEach((value, i) =>
    expect(Math.abs(actual[i] - value), `${what} ${i}`).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(value))),
  );
}

describe('riskpo against the torch port of the authors’ code', () => {
  it.each(fixture.cases)('options %o', ({ options, advantages }) => {
    const result = advantageEstimators.get('riskpo')(
      { rewards: fixture.rewards, groupSizes: fixture.groupSizes },
      options,
    );
    expect(result.advantages.length).toBe(advantages.length);
    advantages.forEach((expected, i) =>
      expect(Math.abs(result.advantages[i] - expected), `sample ${i}`).toBeLessThanOrEqual(
        1e-5 * (1 + Math.abs(expected)),
      ),
    );
    expect(Array.from(result.keep)).toEqual(fixture.rewards.map(() => 1));
  });
});

describe('riskpo quantile tracking against the torch port of the authors’ trainer', () => {
  it.each(fixture.tracking)('three steps, quantileMode $mode', ({ mode, steps }) => {
    let tracker: QuantileTracker | undefined;
    steps.forEach((step, k) => {
      const rewards = fixture.rewards.map((r) => r + 0.1 * k);
      const result = riskpoAdvantage(
        { rewards, groupSizes: fixture.groupSizes, quantileTracker: tracker },
        { quantileMode: mode },
      );
      expectClose(result.advantages, step.advantages, `step ${k + 1} advantage`);
      tracker = updateQuantileTracker(tracker, result.quantileSamples!);
      expectClose(tracker!.values, step.tracker, `step ${k + 1} tracker`);
    });
  });
  it("quantileMode 'batch' ignores the tracker; no samples leave the tracker as it was", () => {
    const input = { rewards: fixture.rewards, groupSizes: fixture.groupSizes };
    const tracker = { levels: [0.2, 0.8], values: [5, 6] };
    expect(
      Array.from(riskpoAdvantage({ ...input, quantileTracker: tracker }, { quantileMode: 'batch' }).advantages),
    ).toEqual(Array.from(riskpoAdvantage(input).advantages));
    expect(Array.from(riskpoAdvantage({ ...input, quantileTracker: tracker }).advantages)).not.toEqual(
      Array.from(riskpoAdvantage(input).advantages),
    );
    expect(updateQuantileTracker(tracker, [])).toBe(tracker);
  });
});

describe('riskpo by hand', () => {
  it('one bundle of two questions, three papers: quantiles, CVaR mix, std and sum-mean credit', () => {
    // Question 0: [1, 0, 1]; question 1: [0, 0, 1]. Papers: S = [1, 0, 2]; sorted [0, 1, 2];
    // q_0.2 = 0.4, q_0.8 = 1.6; std(S) = 1.
    // RVaR: S=1 → 0.6/0.6 = 1; S=0 → 0; S=2 → (1.6 − 0.4... ) = [2−0.4]₊ − [2−1.6]₊ = 1.2 → 2.
    // CVaR: S=0 → −0.4/0.2 = −2, others 0. Mixed (w = 1.5): (1.5·CVaR + RVaR)/2.5 → [0.4, −1.2, 0.8].
    const epsilon = 0;
    const uniform = riskpoAdvantage(
      { rewards: [1, 0, 1, 0, 0, 1], groupSizes: 3 },
      { creditAssignment: 'uniform', epsilon },
    );
    expect(Array.from(uniform.advantages).map((a) => +a.toFixed(6))).toEqual([0.4, -1.2, 0.8, 0.4, -1.2, 0.8]);
    // sum-mean: d = r − mean_q r; question means 2/3 and 1/3. Paper 0: d = [1/3, −1/3], Σ = 0 → A/2 each.
    // Paper 1: d = [−2/3, −1/3], Σ = −1 → A·[2/3, 1/3]. Paper 2: d = [1/3, 2/3], Σ = 1 → A·[1/3, 2/3].
    const sumMean = riskpoAdvantage({ rewards: [1, 0, 1, 0, 0, 1], groupSizes: 3 }, { epsilon });
    const expected = [0.2, -0.8, 0.8 / 3, 0.2, -0.4, 1.6 / 3];
    expected.forEach((value, i) => expect(sumMean.advantages[i]).toBeCloseTo(value, 6));
  });
  it('bundles are consecutive groups: a bundle of one question sees only its own answers', () => {
    const rewards = [1, 0, 1, 0, 0, 1];
    const together = riskpoAdvantage({ rewards, groupSizes: 3 }, { creditAssignment: 'uniform' });
    const apart = riskpoAdvantage({ rewards, groupSizes: 3 }, { creditAssignment: 'uniform', bundleSize: 1 });
    expect(Array.from(apart.advantages)).not.toEqual(Array.from(together.advantages));
    const first = riskpoAdvantage({ rewards: rewards.slice(0, 3), groupSizes: 3 }, { creditAssignment: 'uniform' });
    expect(Array.from(apart.advantages.slice(0, 3))).toEqual(Array.from(first.advantages));
  });
});

describe('riskpo edge cases', () => {
  it('all-equal rewards give zeros, no NaN', () => {
    const result = riskpoAdvantage({ rewards: [1, 1, 1, 1, 1, 1], groupSizes: 3 });
    expect(Array.from(result.advantages)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from(result.stdIsZero)).toEqual([1, 1]);
  });
  it('groups of one: one paper, both quantiles its score, std 1, advantage 0', () => {
    const result = riskpoAdvantage({ rewards: [1, 0], groupSizes: 1 });
    expect(Array.from(result.advantages)).toEqual([0, 0]);
  });
  it('an unscored answer has no place in a paper: A = 0, keep = 0, and the others pair up in order', () => {
    const result = riskpoAdvantage(
      { rewards: [1, null, 0, 1, 0, 0, 1, 0], groupSizes: 4 },
      { creditAssignment: 'uniform', bundleSize: 2 },
    );
    const reference = riskpoAdvantage(
      { rewards: [1, 0, 1, 0, 0, 1], groupSizes: 3 },
      { creditAssignment: 'uniform', bundleSize: 2 },
    );
    expect(result.advantages[1]).toBe(0);
    expect(result.keep[1]).toBe(0);
    // Question 0's scored answers [1, 0, 1] pair with question 1's first three [0, 0, 1]; its fourth gets 0.
    expect([result.advantages[0], result.advantages[2], result.advantages[3]]).toEqual(
      Array.from(reference.advantages.slice(0, 3)),
    );
    expect(Array.from(result.advantages.slice(4, 7))).toEqual(Array.from(reference.advantages.slice(3, 6)));
    expect(result.advantages[7]).toBe(0);
  });
  it('bad options and lengths are refused naming the field', () => {
    const input = { rewards: [1, 0, 1, 0], groupSizes: 2 };
    expect(() => riskpoAdvantage(input, { quantileDown: 0.8, quantileUp: 0.2 })).toThrow(/quantileDown/);
    expect(() => riskpoAdvantage(input, { quantileUp: 1 })).toThrow(/quantileUp/);
    expect(() => riskpoAdvantage(input, { bundleSize: 0 })).toThrow(/bundleSize/);
    expect(() => riskpoAdvantage(input, { mixWeight: -1 })).toThrow(/mixWeight/);
    expect(() => riskpoAdvantage({ rewards: [1, 0, 1], groupSizes: 2 }, {})).toThrow(/groupSizes/);
  });
});
