/**
 * Tests of the structured advantage estimators (GDPO, stratified, SEED-GRPO, S-GRPO,
 * single-stream, tree) against the ALGORITHMS.md §1.7–§1.13 vectors, plus their input checks.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { grpoAdvantage } from './advantages.js';
import {
  gdpoAdvantage,
  mrnAdvantage,
  seedGrpoAdvantage,
  semanticEntropy,
  serialGroupAdvantage,
  serialGroupRewards,
  singleStreamAdvantage,
  stratifiedAdvantage,
  updateSingleStreamBaseline,
} from './advantages-structured.js';
import { treeAdvantage } from './advantages-tree.js';
import { expectCloseWithin } from '../../test/helpers/numeric.js';

/** The spec prints 4 decimals: half a unit in the last place, plus float32 rounding of the result. */
const expectClose = expectCloseWithin(5.1e-5);

describe('§1.7 GDPO', () => {
  const correctness = [1, 1, 0, 0];
  const format = [1, 0, 1, 1];
  it('GRPO on the summed reward ties rollout 2 with rollouts 3 and 4 (ε=1e-4)', () => {
    const summed = correctness.map((c, i) => c + format[i]);
    expectClose(
      grpoAdvantage({ rewards: summed, groupSizes: 4 }, { epsilon: 1e-4 }).advantages,
      [1.4997, -0.4999, -0.4999, -0.4999],
    );
  });
  it('per-reward normalisation then batch normalisation breaks the tie', () => {
    const perReward = [correctness, format].map(
      (r) => grpoAdvantage({ rewards: r, groupSizes: 4 }, { epsilon: 1e-4 }).advantages,
    );
    expectClose(perReward[0], [0.8659, 0.8659, -0.8659, -0.8659]);
    expectClose(perReward[1], [0.4999, -1.4997, 0.4999, 0.4999]);
    const result = gdpoAdvantage({
      rewards: correctness,
      groupSizes: 4,
      rewardComponents: [correctness, format],
      rewardWeights: [1, 1],
    });
    expectClose(result.advantages, [1.4856, -0.6894, -0.3981, -0.3981]);
  });
  it('a NaN component counts as 0 in the weighted sum; all-NaN samples leave the loss', () => {
    const result = gdpoAdvantage({
      rewards: [0, 0, 0, 0],
      groupSizes: 4,
      rewardComponents: [
        [1, 0, null, null],
        [1, 0, 1, null],
      ],
    });
    expect([...result.keep]).toEqual([1, 1, 1, 0]);
    expect(result.advantages[3]).toBe(0);
    expect(result.advantages.every(Number.isFinite)).toBe(true);
  });
  it('rejects missing or mis-sized components', () => {
    expect(() => gdpoAdvantage({ rewards: [1, 0], groupSizes: 2 })).toThrow(/needs input.rewardComponents/);
    expect(() => gdpoAdvantage({ rewards: [1, 0], groupSizes: 2, rewardComponents: [[1]] })).toThrow(
      /rewardComponents\[0\] has 1 entries/,
    );
    expect(() =>
      gdpoAdvantage({ rewards: [1, 0], groupSizes: 2, rewardComponents: [[1, 0]], rewardWeights: [1, 2] }),
    ).toThrow(/rewardWeights has 2/);
  });
});

describe('MRN (ReFine-RFT #141): per-reward group z-scores, weighted, no batch normalisation', () => {
  const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/refine-rft-mrn.json', import.meta.url), 'utf8'));
  it("equals the authors' compute_loss lines in float64 torch (five rewards, weights 1, 1, 1, 0.1, 0.1)", () => {
    const { rewardComponents, rewardWeights, groupSize, advantages } = fixture;
    const result = mrnAdvantage({
      rewards: rewardComponents[0],
      groupSizes: groupSize,
      rewardComponents,
      rewardWeights,
    });
    expectCloseWithin(1e-5)(result.advantages, advantages); // float32 advantages, as every estimator returns
  });
  it('is GDPO before its batch z-score: the §1.7 pair sums to [1.3658, −0.6338, −0.3660, −0.3660]', () => {
    const input = {
      rewards: [1, 1, 0, 0],
      groupSizes: 4,
      rewardComponents: [
        [1, 1, 0, 0],
        [1, 0, 1, 1],
      ],
    };
    expectClose(mrnAdvantage(input).advantages, [1.3658, -0.6338, -0.366, -0.366]);
    expect(() => mrnAdvantage({ rewards: [1, 0], groupSizes: 2 })).toThrow(/mrn advantage estimator needs/);
  });
});

describe('§1.8 stratified', () => {
  const input = { rewards: [1, 0, 0, 1, 1, 0], groupSizes: 6, strata: [0, 0, 0, 1, 1, 1] };
  it('α=1 is the within-stratum z-score, α=0 the group z-score, α=0.5 the blend', () => {
    expectClose(
      stratifiedAdvantage(input, { alpha: 0 }).advantages,
      [0.9129, -0.9129, -0.9129, 0.9129, 0.9129, -0.9129],
    );
    expectClose(
      stratifiedAdvantage(input, { alpha: 1 }).advantages,
      [1.1547, -0.5774, -0.5774, 0.5774, 0.5774, -1.1547],
    );
    expectClose(
      stratifiedAdvantage(input, { alpha: 0.5 }).advantages,
      [1.0338, -0.7451, -0.7451, 0.7451, 0.7451, -1.0338],
    );
  });
  it('a stratum of one sample has A^S = 0; α and strata are required', () => {
    expectClose(
      stratifiedAdvantage({ rewards: [1, 0, 0], groupSizes: 3, strata: ['x', 'y', 'y'] }, { alpha: 1 }).advantages,
      [0, 0, 0],
    );
    expect(() => stratifiedAdvantage({ rewards: [1, 0], groupSizes: 2, strata: [0, 1] })).toThrow(
      /needs options.alpha/,
    );
    expect(() => stratifiedAdvantage({ rewards: [1, 0], groupSizes: 2 }, { alpha: 0.5 })).toThrow(/needs input.strata/);
  });
});

describe('§1.9 SEED-GRPO', () => {
  it('frequency semantic entropy of {a,a,b,c} and the linear factor', () => {
    expect(semanticEntropy(['a', 'a', 'b', 'c'])).toBeCloseTo(1.1552, 4);
    expect(semanticEntropy(['a', 'a', 'b', 'c']) / Math.log(4)).toBeCloseTo(0.8333, 4);
    const input = { rewards: [1, 1, 0, 0], groupSizes: 4, clusters: ['a', 'a', 'b', 'c'] };
    expectClose(
      seedGrpoAdvantage(input, { alpha: 0.5 }).advantages,
      [0.5, 0.5, -0.5, -0.5].map((a) => a * 0.5833),
    );
    expectClose(
      seedGrpoAdvantage(input, { alpha: 1 }).advantages,
      [0.5, 0.5, -0.5, -0.5].map((a) => a * 0.1667),
    );
  });
});

describe('§1.10 S-GRPO', () => {
  it('decayed serial rewards and mean-centred advantages', () => {
    expect(serialGroupRewards([0, 1, 1, 1])).toEqual([0, 1, 0.5, 0.25]);
    expectClose(
      serialGroupAdvantage({ rewards: [0, 1, 1, 1], groupSizes: 4 }).advantages,
      [-0.4375, 0.5625, 0.0625, -0.1875],
    );
    expect(() => serialGroupAdvantage({ rewards: [0, 0.5], groupSizes: 2 })).toThrow(/expects exit correctness 0 or 1/);
  });
});

describe('§1.12 tree advantages', () => {
  // root → a (token 1) → leaves 11, 12 with rewards [1, 1]; root → b (token 2) → b1 (token 3) → leaves
  // [1, 0]; b → b2 (token 4) → leaves [0, 0].
  const completionIds = [
    [1, 10, 11],
    [1, 10, 12],
    [2, 3, 5],
    [2, 3, 6],
    [2, 4, 7],
    [2, 4, 8],
  ];
  const result = treeAdvantage({ rewards: [1, 1, 1, 0, 0, 0], groupSizes: 6, completionIds });
  it('node values R(s) = (GA + LA)/√|leaves| on each segment', () => {
    const tokens = result.tokenAdvantages as Float32Array[];
    expectClose(tokens[0].subarray(0, 2), [0.7071, 0.7071]); // a
    expectClose([tokens[2][0], tokens[4][0]], [-0.25, -0.25]); // b
    expectClose([tokens[2][1], tokens[3][1]], [0.1768, 0.1768]); // b1
    expectClose([tokens[4][1], tokens[5][1]], [-0.5303, -0.5303]); // b2
    // Leaf of sample 3 (reward 1 under b1 with V 0.5): GA = 0.5, LA = 0.5, one leaf.
    expectClose([tokens[2][2]], [1]);
  });
  it('empty completions get no tokens and a zero advantage', () => {
    const empty = treeAdvantage({ rewards: [1, 0], groupSizes: 2, completionIds: [[], [3]] });
    expect(empty.tokenAdvantages?.[0].length).toBe(0);
    expect(empty.advantages[0]).toBe(0);
  });
});

describe('§1.13 single-stream baseline', () => {
  it('A = r − v before batch normalisation; batch-normalised otherwise', () => {
    expectClose(
      singleStreamAdvantage({ rewards: [1], groupSizes: 1, baselines: [0.3] }, { batchNormalize: false }).advantages,
      [0.7],
    );
    const normalized = singleStreamAdvantage({ rewards: [1, 0, 1], groupSizes: 1, baselines: [0.3, 0.3, 0.9] });
    expect(Math.abs(normalized.advantages.reduce((a, b) => a + b, 0))).toBeLessThan(1e-6);
    expect(updateSingleStreamBaseline(0.3, 1, 0.5)).toBeCloseTo(0.65, 10);
    expect(() => singleStreamAdvantage({ rewards: [1], groupSizes: 1, baselines: [] })).toThrow(
      /baselines has 0 entries/,
    );
  });
});
