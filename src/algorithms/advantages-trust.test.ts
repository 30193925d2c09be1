/**
 * Tests of Trust-GRPO's advantage (#228): rewards and advantages against the float64 port of the
 * authors' custom.py and their GRPO z-score (scripts/reference/trust_grpo.py →
 * test/fixtures/trust-grpo.json) at three steps, ALGORITHMS.md §5.6's vector (which leaves out the
 * authors' r_o ≥ 0.2 gate: queryThreshold 0), the thinking reward's weight in the combined reward,
 * unscored samples, and the errors and refusals that name what is missing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import type { RunSettings } from './registry.js';
import { trustAdvantage, trustAdvantagePart, trustRewards } from './advantages-trust.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/trust-grpo.json', import.meta.url), 'utf8')) as {
  outcomes: number[];
  thinking: number[];
  groupSizes: number[];
  cases: { step: number; rewards: number[]; advantages: number[] }[];
};

function expectClose(actual: ArrayLike<number>, expected: readonly number[], what: string, tolerance = 1e-9): void {
  expect(actual.length, what).toBe(expected.length);
  expected.forEach((value, i) =>
    expect(Math.abs(actual[i] - value), `${what} ${i}`).toBeLessThanOrEqual(tolerance * (1 + Math.abs(value))),
  );
}

/** The run's combined reward is the outcome (the thinking reward weighs 0), as in the authors' trainer. */
function input(
  step: number,
  outcomes = fixture.outcomes,
  thinking = fixture.thinking,
  groupSizes = fixture.groupSizes,
) {
  return {
    rewards: outcomes,
    groupSizes,
    rewardComponents: [outcomes, thinking],
    rewardNames: ['accuracy', 'thinking'],
    rewardWeights: [1, 0],
    step,
  };
}

describe('trust-grpo against the port of the authors’ custom.py and GRPO', () => {
  it.each(fixture.cases)('step $step', ({ step, rewards, advantages }) => {
    expectClose(trustRewards(input(step), { thinkingReward: 'thinking' }), rewards, 'reward');
    expect(advantageEstimators.get('trust-grpo')).toBe(trustAdvantage);
    const result = trustAdvantage(input(step), { thinkingReward: 'thinking' });
    expectClose(result.advantages, advantages, 'advantage', 1e-5);
    expect(Array.from(result.keep)).toEqual(fixture.outcomes.map(() => 1));
  });
});

describe('trust-grpo', () => {
  const group = input(0, [1, 1, 0, 0], [0.3, 0.4, 0.8, 0.6], [4]);
  it('gives ALGORITHMS.md §5.6’s vector when every thinking score counts (γ = exp(0.35 − 0.7))', () => {
    const all = { thinkingReward: 'thinking', queryThreshold: 0 };
    expectClose(trustRewards(group, all), [1.0634, 1.0846, 0.1691, 0.1268], 'step 0', 1e-4);
    expectClose(trustRewards({ ...group, step: 500 }, all), [1.0233, 1.0311, 0.0622, 0.0467], 'step 500', 1e-4);
  });
  it('counts the thinking score only where r_o ≥ 0.2 by default, so the wrong answers get none', () => {
    expectClose(trustRewards(group, { thinkingReward: 'thinking' }), [1.09, 1.12, 0, 0], 'gated');
  });
  it('takes r_o as the combined reward without the thinking reward’s weighted share', () => {
    const outcomes = [1, 0.3, 0.3, 0];
    const thinking = [0.2, 0.9, 0.7, 0.5];
    const weighted = {
      ...input(37, outcomes, thinking, [4]),
      rewards: outcomes.map((r, i) => r + 0.5 * thinking[i]),
      rewardWeights: [1, 0.5],
    };
    expectClose(
      trustRewards(weighted, { thinkingReward: 'thinking' }),
      Array.from(trustRewards(input(37, outcomes, thinking, [4]), { thinkingReward: 'thinking' })),
      'weighted',
    );
  });
  it('leaves unscored samples out of their group’s means and out of the loss', () => {
    const scored = trustRewards(input(0, [1, 0.3, 0], [0.2, 0.9, 0.5], [3]), { thinkingReward: 'thinking' });
    const withGap = input(0, [1, 0.3, 0, 0], [0.2, 0.9, 0.5, 0.99], [4]);
    const rewards = [1, 0.3, 0, null];
    const gapped = trustRewards({ ...withGap, rewards }, { thinkingReward: 'thinking' });
    expectClose(gapped.subarray(0, 3), Array.from(scored), 'scored');
    expect(gapped[3]).toBeNaN();
    const result = trustAdvantage({ ...withGap, rewards }, { thinkingReward: 'thinking' });
    expect(Array.from(result.keep)).toEqual([1, 1, 1, 0]);
    expect(result.advantages[3]).toBe(0);
  });
  it('differs from grpo on a group whose thinking scores differ, and matches it when α = 0', () => {
    const grpo = advantageEstimators.get('grpo')(group, {});
    const trusted = trustAdvantage(group, { thinkingReward: 'thinking' });
    expect(Math.abs(trusted.advantages[0] - grpo.advantages[0])).toBeGreaterThan(1e-3);
    expectClose(
      trustAdvantage(group, { thinkingReward: 'thinking', scale: 0 }).advantages,
      Array.from(grpo.advantages),
      'α = 0',
    );
  });
  it('throws naming what is missing', () => {
    expect(() => trustAdvantage(group, {})).toThrow(/options\.thinkingReward/);
    expect(() => trustAdvantage(group, { thinkingReward: 'judge' })).toThrow(
      /"judge" is not among the rewards \(accuracy, thinking\)/,
    );
    expect(() => trustAdvantage({ ...group, step: undefined }, { thinkingReward: 'thinking' })).toThrow(/input\.step/);
  });
  it('refuses, before any compute, a thinking reward the run does not score', () => {
    const settings = { rewardNames: ['correct', 'format'] } as unknown as RunSettings;
    expect(trustAdvantagePart.refuses!({ thinkingReward: 'format' }, settings)).toEqual([]);
    expect(trustAdvantagePart.refuses!({ thinkingReward: 'judge' }, settings)).toEqual([
      'algorithm.advantageOptions.thinkingReward: "judge" is not a reward of this run (rewards: correct, format)',
    ]);
    expect(trustAdvantagePart.refuses!({}, settings)[0]).toMatch(/^algorithm\.advantageOptions\.thinkingReward: /);
  });
});
