/**
 * Tests of the turn-credit estimators against the vectors of docs/turn-credit.md (hand-derived,
 * and reproduced by scripts/reference/turn_credit.py, which follows the IGPO and GiGPO authors' code),
 * plus the shared rules: unscored episodes get zeros and stay out of the statistics, shapes are checked.
 */
import { describe, expect, it } from 'vitest';
import { turnCreditEstimators } from './index.js';
import { type TurnCreditInput, gigpoCredit, igpoCredit, matchtirCredit, turnRewardsCredit } from './turn-credit.js';

function expectRows(actual: number[][], expected: number[][], tolerance = 5e-6): void {
  expect(actual.map((row) => row.length)).toEqual(expected.map((row) => row.length));
  expected.forEach((row, episode) =>
    row.forEach((value, turn) =>
      expect(
        Math.abs(actual[episode][turn] - value),
        `episode ${episode} turn ${turn}: ${actual[episode][turn]} vs ${value}`,
      ).toBeLessThanOrEqual(tolerance),
    ),
  );
}

describe('turn-rewards (docs/turn-credit.md §1)', () => {
  const input: TurnCreditInput = {
    rewards: Float64Array.from([1, 0, NaN]),
    groupSizes: [3],
    turnRewards: [[0.5, null], [null], [null, null]],
  };
  it('discounted returns with the outcome on the last turn, z-scored over the pooled turn returns', () => {
    // G = [1, 1], [0]; pooled mean 2/3, sample std √(1/3); the NaN episode gets zeros.
    const std = Math.sqrt(1 / 3) + 1e-6;
    expectRows(turnRewardsCredit(input, { gamma: 0.5 }).turnAdvantages, [
      [1 / 3 / std, 1 / 3 / std],
      [-2 / 3 / std],
      [0, 0],
    ]);
  });
  it("normalization 'mean' only centres", () => {
    expectRows(turnRewardsCredit(input, { gamma: 0.5, normalization: 'mean' }).turnAdvantages, [
      [1 / 3, 1 / 3],
      [-2 / 3],
      [0, 0],
    ]);
  });
});

describe('igpo (docs/turn-credit.md §2)', () => {
  // The last entry of each gains row is the final turn's and is ignored (the outcome replaces it).
  const input: TurnCreditInput = {
    rewards: Float64Array.from([1, 0, -1, NaN]),
    groupSizes: [4],
    turnRewards: [[null, null, null], [null, null], [null], [null, null]],
    informationGains: [[0.5, 0.5, 9], [-1, 9], [9], [0.3, 0.3]],
  };
  it('joint normalisation then discounted sums (γ = 0.5)', () => {
    expectRows(igpoCredit(input, { gamma: 0.5 }).turnAdvantages, [
      [1.3093056, 1.3093056, 1.3093056],
      [-1.3093056, 0],
      [-1.3093056],
      [0, 0],
    ]);
  });
  it('separate normalisation (γ = 1)', () => {
    expectRows(igpoCredit(input, { gamma: 1, pooling: 'separate' }).turnAdvantages, [
      [2.6389549, 1.9318491, 1.2247434],
      [-1.4142115, 0],
      [-1.2247434],
      [0, 0],
    ]);
  });
  it('refuses input without information gains, naming the field', () => {
    expect(() => igpoCredit({ ...input, informationGains: undefined }, {})).toThrow(/informationGains/);
  });
});

describe('gigpo (docs/turn-credit.md §3)', () => {
  const input: TurnCreditInput = {
    rewards: Float64Array.from([1, 0, 1, 0.4]),
    groupSizes: [3, 1],
    turnRewards: [[null, null], [null, null], [null, null, null], [null]],
    stateKeys: [['s0', 's1'], ['s0', 's2'], ['s0', 's1', 's3'], ['s0']],
  };
  it('episode advantage + ω·step advantage, F_norm = 1 (γ = 0.5, ω = 1); step groups stay inside their group', () => {
    const result = gigpoCredit(input, { gamma: 0.5 });
    expectRows(result.turnAdvantages, [
      [0.5833333, 0.5833333],
      [-0.9166667, -0.6666667],
      [0.3333333, 0.0833333, 0.3333333],
      [0.4],
    ]);
    // Step groups: {s0 ×3, s1 ×2, s2, s3} in group 1 and {s0} in group 2.
    expect(result.metrics['credit/stepGroupSize/mean']).toBeCloseTo(8 / 5, 12);
    expect(result.metrics['credit/stepGroups/singletonFraction']).toBeCloseTo(3 / 5, 12);
  });
  it('F_norm = sample std + 1e-6 (γ = 0.5, ω = 0.5)', () => {
    expectRows(gigpoCredit(input, { gamma: 0.5, omega: 0.5, normalization: 'mean-std' }).turnAdvantages, [
      [1.0773473, 0.9309017],
      [-1.6546965, -1.1546985],
      [0.5773493, 0.2237969, 0.5773493],
      [0.3999996],
    ]);
  });
  it('an unscored episode gets zeros and does not move the others', () => {
    const withUnscored: TurnCreditInput = {
      rewards: Float64Array.from([1, 0, 1, NaN, 0.4]),
      groupSizes: [4, 1],
      turnRewards: [...input.turnRewards.slice(0, 3), [5, 5], [null]],
      stateKeys: [...input.stateKeys!.slice(0, 3), ['s0', 's1'], ['s0']],
    };
    const rows = gigpoCredit(withUnscored, { gamma: 0.5 }).turnAdvantages;
    expectRows(rows, [
      [0.5833333, 0.5833333],
      [-0.9166667, -0.6666667],
      [0.3333333, 0.0833333, 0.3333333],
      [0, 0],
      [0.4],
    ]);
  });
  it('refuses input without state keys, and keys of the wrong length', () => {
    expect(() => gigpoCredit({ ...input, stateKeys: undefined }, {})).toThrow(/stateKeys/);
    expect(() => gigpoCredit({ ...input, stateKeys: [['s0'], ['s0', 's2'], ['s0', 's1', 's3'], ['s0']] }, {})).toThrow(
      /stateKeys\[0\] has 1 turns but turnRewards\[0\] has 2/,
    );
  });
});

describe('matchtir (docs/turn-credit.md §4)', () => {
  // Tool-call turns carry the mean of their calls' rewards; the outcome R joins the last turn.
  const input: TurnCreditInput = {
    rewards: Float64Array.from([1, 0, 0, NaN]),
    groupSizes: [4],
    turnRewards: [[0.5, null], [1, 0.5, null], [null], [null, null]],
    toolCallTurns: [[true, false], [true, true, false], [false], [true, false]],
  };
  it('(trajectory z-score of Σ r + per-turn-index z-score of discounted returns)/2 (γ = 0.5)', () => {
    // r = [0.5, 1], [1, 0.5, 0], [0]: S = [1.5, 1.5, 0] → A^T = [0.57735, 0.57735, −1.15470];
    // G = [1, 1], [1.25, 0.5, 0], [0]; index 0 {1, 1.25, 0}, index 1 {1, 0.5}, index 2 {0}: a lone value → mean 0, std 1.
    const { turnAdvantages } = matchtirCredit(input, { gamma: 0.5 });
    expectRows(turnAdvantages, [[0.477657, 0.642227], [0.666639, -0.064878, 0.288675], [-1.144295], [0, 0]]);
  });
  it("defaults to γ = 0.9 (the code's lam), and checks the tool-call flags against the turns", () => {
    const { turnAdvantages } = matchtirCredit({ ...input, groupSizes: [1, 1, 1, 1] }, {});
    // One-episode groups: A^T = S (mean 0, std 1), A^t = G/(1 + ε): episode 1 = ((1.5) + [0.5 + 0.9, 1])/2.
    expectRows(turnAdvantages.slice(0, 1), [[(1.5 + 1.4) / 2, (1.5 + 1) / 2]], 1e-5);
    expect(() => matchtirCredit({ ...input, toolCallTurns: [[true], [], [], []] }, {})).toThrow(
      /toolCallTurns\[0\] has 1 turns but turnRewards\[0\] has 2/,
    );
  });
});

describe('registry', () => {
  it('registers the estimators with their needs and strict options', () => {
    expect(turnCreditEstimators.names()).toEqual(['turn-rewards', 'igpo', 'gigpo', 'matchtir', 'ui-s1', 'prorag']);
    const needs = Object.fromEntries(turnCreditEstimators.list().map((entry) => [entry.name, entry.needs]));
    expect(needs).toEqual({
      'turn-rewards': [],
      igpo: ['informationGains'],
      gigpo: ['stateKeys'],
      matchtir: [],
      'ui-s1': [],
      prorag: [],
    });
    const gigpoOptions = turnCreditEstimators.list().find((entry) => entry.name === 'gigpo')!.options!;
    expect(gigpoOptions.safeParse({ omega: 0.5 }).success).toBe(true);
    expect(gigpoOptions.safeParse({ pooling: 'joint' }).success).toBe(false);
  });
  it('rejects group sizes that do not cover the episodes', () => {
    expect(() =>
      turnRewardsCredit({ rewards: Float64Array.from([1, 0]), groupSizes: [3], turnRewards: [[null], [null]] }, {}),
    ).toThrow(/groupSizes sum to 3 but there are 2/);
  });
});
