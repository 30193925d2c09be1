/**
 * ProRAG's dual-granularity advantage (#100) against the float64 restatement of the authors' token-level
 * code (scripts/reference/prorag_advantage.py → test/fixtures/prorag-advantage.json), through the
 * registry by name, with and without per-turn token counts; the hand vector of docs/turn-credit.md §7;
 * a lone group, unscored episodes and bad shapes and options.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { turnCreditEstimators } from './index.js';
import { proragCredit } from './turn-credit-prorag.js';

interface Episode {
  reward: number;
  turns: (number | null)[];
  counts: number[];
}

const fixture = JSON.parse(
  readFileSync(new URL('../../test/fixtures/prorag-advantage.json', import.meta.url), 'utf8'),
) as { cases: Array<{ beta: number; tokenCounts: boolean; group: Episode[]; turnAdvantages: number[][] }> };

const inputOf = (group: Episode[], tokenCounts: boolean) => ({
  rewards: Float64Array.from(group, (episode) => episode.reward),
  groupSizes: [group.length],
  turnRewards: group.map((episode) => episode.turns),
  turnTokenCounts: tokenCounts ? group.map((episode) => episode.counts) : undefined,
});

describe('prorag turn credit', () => {
  it.each(fixture.cases)("matches the authors' code (β $beta, token counts $tokenCounts)", (testCase) => {
    const input = inputOf(testCase.group, testCase.tokenCounts);
    const { turnAdvantages } = testCase.tokenCounts
      ? proragCredit(input, { beta: testCase.beta })
      : turnCreditEstimators.get('prorag')(input, { beta: testCase.beta });
    expect(turnAdvantages).toHaveLength(testCase.turnAdvantages.length);
    turnAdvantages.forEach((turns, episode) =>
      turns.forEach((value, turn) => expect(value).toBeCloseTo(testCase.turnAdvantages[episode]![turn]!, 10)),
    );
  });

  it('reproduces the hand vector of docs/turn-credit.md §7 (β 0.5, one per turn)', () => {
    const { turnAdvantages } = turnCreditEstimators.get('prorag')(
      {
        rewards: Float64Array.from([1, 0, 2]),
        groupSizes: [3],
        turnRewards: [[1, 0, null], [0.5, 1], [null]],
      },
      { beta: 0.5 },
    );
    // A^out = [0, −1, 1]/1.0001; pool {1, 0, 0.5, 1}: mean 0.625, σ = √(0.171875 + 1e-8) = 0.41457811.
    [[0.452267, -0.753778, 0], [-1.150657, -0.547633], [0.9999]].forEach((turns, episode) =>
      turns.forEach((value, turn) => expect(turnAdvantages[episode]![turn]).toBeCloseTo(value, 5)),
    );
  });

  it('gives a lone episode A^out = 0, unscored episodes 0 everywhere, and uses the 0.3 default', () => {
    const { turnAdvantages } = turnCreditEstimators.get('prorag')(
      {
        rewards: Float64Array.from([5, Number.NaN, 1, 3]),
        groupSizes: [1, 3],
        turnRewards: [[2, 4], [1, 1], [0], [1]],
      },
      {},
    );
    // Group 1: A^out 0; pool {2, 4}: mean 3, σ = √(1 + 1e-8); step parts ∓1 × 0.3.
    expect(turnAdvantages[0]![0]).toBeCloseTo(-0.3, 6);
    expect(turnAdvantages[0]![1]).toBeCloseTo(0.3, 6);
    expect(turnAdvantages[1]).toEqual([0, 0]);
    // Group 2 (scored 1 and 3): A^out = ∓1/(√2 + 1e-4); pool {0, 1}: σ = 0.5 → step parts ∓1 × 0.3.
    expect(turnAdvantages[2]![0]).toBeCloseTo(-1 / (Math.SQRT2 + 1e-4) - 0.3, 6);
    expect(turnAdvantages[3]![0]).toBeCloseTo(1 / (Math.SQRT2 + 1e-4) + 0.3, 6);
  });

  it('refuses mismatched shapes naming the field, and options outside the schema', () => {
    expect(() =>
      proragCredit(
        { rewards: Float64Array.from([1]), groupSizes: [1], turnRewards: [[1]], turnTokenCounts: [[1, 2]] },
        {},
      ),
    ).toThrow(/turnTokenCounts\[0\] has 2 turns but turnRewards\[0\] has 1/);
    expect(() => proragCredit({ rewards: Float64Array.from([1]), groupSizes: [2], turnRewards: [[1]] }, {})).toThrow(
      /groupSizes sum to 2/,
    );
    const options = turnCreditEstimators.entry('prorag').options!;
    expect(options.safeParse({ beta: -1 }).success).toBe(false);
    expect(options.safeParse({ gamma: 0.5 }).success).toBe(false);
    expect(options.safeParse({ beta: 0.5 }).success).toBe(true);
  });
});
