/**
 * TEMPO's token advantages (#247) against the float64 restatement of the authors' estimator
 * (scripts/reference/tempo_advantage.py → test/fixtures/tempo-advantage.json), through the registry
 * by name; a hand-computed fork; the GRPO limit with no branching; unscored completions, a lone
 * completion and the input checks.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import { grpoAdvantage } from './advantages.js';
import { tempoAdvantage, tempoAdvantagePart } from './advantages-tempo.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/tempo-advantage.json', import.meta.url), 'utf8'),
) as {
  cases: Array<{
    name: string;
    completions: number[][];
    rewards: number[];
    groupSizes: number[];
    epsilon: number;
    tokenAdvantages: number[][];
  }>;
};

describe('tempo advantage', () => {
  it.each(fixture.cases)("matches the authors' code: $name (ε $epsilon)", (testCase) => {
    const { tokenAdvantages } = advantageEstimators.get('tempo')(
      { rewards: testCase.rewards, groupSizes: testCase.groupSizes, completionIds: testCase.completions },
      { epsilon: testCase.epsilon },
    );
    expect(tokenAdvantages).toHaveLength(testCase.tokenAdvantages.length);
    tokenAdvantages!.forEach((row, i) => {
      expect(row).toHaveLength(testCase.tokenAdvantages[i]!.length);
      row.forEach((value, t) => expect(value).toBeCloseTo(testCase.tokenAdvantages[i]![t]!, 5));
    });
  });

  it('adds V(child) − V(parent) at the fork only (hand vector)', () => {
    // Rewards 1, 0, 1, 0: mean ½, sample std √(1/3). Completions 0 and 1 share token 4 then fork.
    const result = tempoAdvantage(
      { rewards: [1, 0, 1, 0], groupSizes: 4, completionIds: [[4, 1, 9], [4, 2, 9], [5], [6]] },
      { epsilon: 0 },
    );
    const std = Math.sqrt(1 / 3);
    // Token 0 of completion 0: child {0, 1} has V ½, parent (the group) ½: no correction.
    // Token 1: child {0} has V 1, parent {0, 1} has V ½: +½. Token 2: alone, no correction.
    expect(Array.from(result.tokenAdvantages![0]!)).toEqual(
      [0.5 / std, 1 / std, 0.5 / std].map((value) => expect.closeTo(value, 5)),
    );
    expect(Array.from(result.tokenAdvantages![1]!)).toEqual(
      [-0.5 / std, -1 / std, -0.5 / std].map((value) => expect.closeTo(value, 5)),
    );
    // Completion 2 leaves the group at token 0: child {2} V 1 vs the group's ½.
    expect(result.tokenAdvantages![2]![0]).toBeCloseTo(1 / std, 5);
    expect(result.advantages[0]).toBeCloseTo(0.5 / std, 5);
  });

  it('is GRPO at every token when no completion shares a first token', () => {
    const rewards = [0.2, 1, 0.7];
    const result = tempoAdvantage({ rewards, groupSizes: 3, completionIds: [[1, 2], [3], [4, 5, 6]] });
    const grpo = grpoAdvantage({ rewards, groupSizes: 3 }).advantages;
    // Token 0 already separates each completion: V(child) = r_i, V(parent) = mean, so the first token
    // carries twice the outcome term, the rest (alone) the plain GRPO value.
    result.tokenAdvantages!.forEach((row, i) => {
      expect(row[0]).toBeCloseTo(2 * grpo[i]!, 5);
      for (let t = 1; t < row.length; t++) expect(row[t]).toBeCloseTo(grpo[i]!, 5);
    });
  });

  it('gives unscored completions 0 and leaves them out of every mean; a lone completion gets r', () => {
    const result = tempoAdvantage({
      rewards: [1, null, 0, 3],
      groupSizes: [3, 1],
      completionIds: [[7, 1], [7, 2], [8], [9, 9]],
    });
    expect(Array.from(result.tokenAdvantages![1]!)).toEqual([0, 0]);
    expect(Array.from(result.keep)).toEqual([1, 0, 1, 1]);
    // Group {1, 0} (the null is out): mean ½, sample std √½; token 0 of completion 0: child {0, 1}
    // has V 1 (its only scored member), the group ½.
    expect(result.tokenAdvantages![0]![0]).toBeCloseTo((0.5 + 0.5) / (Math.SQRT1_2 + 1e-6), 5);
    expect(Array.from(result.tokenAdvantages![3]!)).toEqual([3, 3]);
  });

  it('needs completionIds of the right length and checks its options', () => {
    expect(() => tempoAdvantage({ rewards: [1, 0], groupSizes: 2 })).toThrow(/completionIds/);
    expect(() => tempoAdvantage({ rewards: [1, 0], groupSizes: 2, completionIds: [[1]] })).toThrow(/completionIds/);
    expect(tempoAdvantagePart.needs).toEqual(['completionIds']);
    expect(tempoAdvantagePart.options?.safeParse({ epsilon: -1 }).success).toBe(false);
  });
});
