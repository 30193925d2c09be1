/**
 * UI-S1's turn credit (#96) against the float64 restatement of the authors' code on their step rows
 * (scripts/reference/uis1_advantage.py → test/fixtures/uis1-advantage.json), through the registry by
 * name with options; the cut of the discounted return at an unmatched turn; unscored episodes get 0
 * and enter no statistic; bad options are refused naming the field.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { turnCreditEstimators } from './index.js';
import { brokenDiscountedReturns } from './turn-credit-uis1.js';

const fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/uis1-advantage.json', import.meta.url), 'utf8'),
) as {
  groups: number[][][];
  cases: Array<{
    gamma: number;
    stepWeight: number;
    episodeWeight: number;
    normalization: string;
    turnAdvantages: number[][];
  }>;
};

const inputOf = (groups: number[][][], extraUnscored = false) => {
  const episodes = groups.flat();
  const rewards = Float64Array.from(episodes, () => 1);
  const turnRewards: (number | null)[][] = episodes.map((turns) => [...turns]);
  const groupSizes = groups.map((group) => group.length);
  if (!extraUnscored) return { rewards, groupSizes, turnRewards };
  // An unscored episode added to the first group: it must change nothing.
  turnRewards.splice(groupSizes[0]!, 0, [1, 1]);
  const withUnscored = Float64Array.from([
    ...rewards.slice(0, groupSizes[0]),
    Number.NaN,
    ...rewards.slice(groupSizes[0]),
  ]);
  return { rewards: withUnscored, groupSizes: [groupSizes[0]! + 1, ...groupSizes.slice(1)], turnRewards };
};

describe('ui-s1 turn credit', () => {
  it.each(fixture.cases)('matches the authors’ code (γ $gamma, w_S $stepWeight, $normalization)', (testCase) => {
    const { turnAdvantages: expected, ...options } = testCase;
    const { turnAdvantages } = turnCreditEstimators.get('ui-s1')(inputOf(fixture.groups), options);
    expect(turnAdvantages).toHaveLength(expected.length);
    turnAdvantages.forEach((turns, episode) =>
      turns.forEach((value, turn) => expect(value).toBeCloseTo(expected[episode]![turn]!, 10)),
    );
    const withUnscored = turnCreditEstimators.get('ui-s1')(inputOf(fixture.groups, true), options).turnAdvantages;
    expect(withUnscored[fixture.groups[0]!.length]).toEqual([0, 0]);
    expect(withUnscored.filter((_, episode) => episode !== fixture.groups[0]!.length)).toEqual(turnAdvantages);
  });

  it('reproduces the hand vector of docs/turn-credit.md (γ 0.5, mean)', () => {
    const { turnAdvantages } = turnCreditEstimators.get('ui-s1')(
      {
        rewards: Float64Array.from([1, 1]),
        groupSizes: [2],
        turnRewards: [
          [1, 0.55, 1],
          [1, 1],
        ],
      },
      { gamma: 0.5, normalization: 'mean' },
    );
    [
      [-0.16, -0.585, 0.09],
      [0.34, 0.315],
    ].forEach((turns, episode) =>
      turns.forEach((value, turn) => expect(turnAdvantages[episode]![turn]).toBeCloseTo(value, 12)),
    );
  });

  it('cuts the discounted return at an unmatched turn: earlier turns see nothing past it', () => {
    expect(brokenDiscountedReturns([1, 1, 0.55, 1], [true, true, false, true], 0.5)).toEqual([1.5, 1, 0.55, 1]);
    expect(brokenDiscountedReturns([1, 1, 1], [true, true, true], 0.5)).toEqual([1.75, 1.5, 1]);
  });

  it('reads a null turn reward as 0, not matched; refuses bad options naming the field', () => {
    const { turnAdvantages } = turnCreditEstimators.get('ui-s1')(
      {
        rewards: Float64Array.from([1, 1]),
        groupSizes: [2],
        turnRewards: [
          [null, 1],
          [1, 1],
        ],
      },
      { normalization: 'mean' },
    );
    // pooled mean 0.75; step 0: returns {0, 1.5} mean 0.75; step 1: {1, 1}
    expect(turnAdvantages[0]).toEqual([-0.75 - 0.75, 0.25]);
    const options = turnCreditEstimators.list().find((entry) => entry.name === 'ui-s1')!.options!;
    expect(
      options.safeParse({ gamma: 0.5, stepWeight: 1, normalization: 'mean-std', matchThreshold: 0.9 }).success,
    ).toBe(true);
    expect(options.safeParse({ stepWeight: -1 }).error?.issues[0]?.path).toEqual(['stepWeight']);
    expect(options.safeParse({ gama: 0.5 }).success).toBe(false);
  });
});
