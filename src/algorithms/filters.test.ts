/**
 * Tests of group filters, overlong shaping and prompt selection: the ALGORITHMS.md §5.4, §6.1–§6.4
 * vectors, the refill loop and input errors.
 */
import { describe, expect, it } from 'vitest';
import {
  dropAllCorrectGroups,
  dropZeroVarianceGroups,
  intersectFilters,
  maskTruncatedCompletions,
  refillKeptGroups,
  softOverlongPunishment,
} from './filters.js';
import {
  knapsackAllocation,
  knapsackValue,
  nonzeroGradientProbability,
  sampleBeta,
  updateBetaPosterior,
  vadeSelection,
} from './filters-selection.js';

describe('§6.1 dynamic sampling', () => {
  const input = { rewards: [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0], groupSizes: 4 };
  it('DAPO keeps only the mixed group; NGRPO strategy keeps all-wrong and mixed', () => {
    expect([...dropZeroVarianceGroups(input).keepGroups]).toEqual([0, 0, 1]);
    expect([...dropZeroVarianceGroups(input).keepSamples]).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    expect([...dropAllCorrectGroups(input).keepGroups]).toEqual([0, 1, 1]);
  });
  it('unscored rewards are ignored; a group with one scored reward has no variance', () => {
    expect([...dropZeroVarianceGroups({ rewards: [1, null, 0, 1, null], groupSizes: [2, 3] }).keepGroups]).toEqual([
      0, 1,
    ]);
  });
  it('the refill loop generates until enough groups survive, cutting the surplus', async () => {
    const batches = [
      [1, 1, 0, 0],
      [1, 0, 1, 0],
      [0, 1, 1, 1],
    ];
    const result = await refillKeptGroups(
      (round) => ({ batch: round, filterInput: { rewards: batches[round], groupSizes: 2 } }),
      dropZeroVarianceGroups,
      3,
      5,
    );
    expect(result.kept).toEqual([
      { batch: 1, groupIndices: [0, 1] },
      { batch: 2, groupIndices: [0] },
    ]);
    expect(result).toMatchObject({ keptGroupCount: 3, generatedBatches: 3, complete: true });
    const capped = await refillKeptGroups(
      () => ({ batch: 0, filterInput: { rewards: [1, 1], groupSizes: 2 } }),
      dropZeroVarianceGroups,
      1,
      2,
    );
    expect(capped).toMatchObject({ keptGroupCount: 0, generatedBatches: 2, complete: false });
  });
});

describe('§6.2 truncated completions', () => {
  it('truncated samples leave the loss, groups stay; the field is required', () => {
    const result = maskTruncatedCompletions({ rewards: [1, 0, 1], groupSizes: 3, truncated: [false, true, 0] });
    expect([...result.keepSamples]).toEqual([1, 0, 1]);
    const both = intersectFilters([result, dropZeroVarianceGroups({ rewards: [1, 0, 1], groupSizes: 3 })]);
    expect([...both.keepSamples]).toEqual([1, 0, 1]);
    expect(() => maskTruncatedCompletions({ rewards: [1], groupSizes: 1 })).toThrow(/needs input.truncated/);
    expect(() => maskTruncatedCompletions({ rewards: [1], groupSizes: 1, truncated: [] })).toThrow(
      /truncated has 0 entries/,
    );
  });
});

describe('§5.4 soft overlong punishment', () => {
  it('L_max=10, L_cache=4', () => {
    expect([...softOverlongPunishment([6, 7, 8, 10, 11], { maxLength: 10, cacheLength: 4 })]).toEqual([
      0, -0.25, -0.5, -1, -1,
    ]);
    expect(() => softOverlongPunishment([1], { maxLength: 4, cacheLength: 5 })).toThrow(/cacheLength/);
    expect(() => softOverlongPunishment([-1], { maxLength: 4, cacheLength: 2 })).toThrow(/lengths\[0\]/);
  });
});

describe('§6.3 knapsack allocation', () => {
  it('P_nz and the optimum (6,4,2) beating uniform (4,4,4)', () => {
    expect(nonzeroGradientProbability(4, 0.1)).toBeCloseTo(0.3438, 4);
    expect(nonzeroGradientProbability(8, 0.1)).toBeCloseTo(0.5695, 4);
    // Beta(5,5), Beta(1,9), Beta(9,1) have posterior means 0.5, 0.1, 0.9.
    const result = knapsackAllocation(
      { alpha: [5, 1, 9], beta: [5, 9, 1] },
      { budget: 12, allowedCounts: [2, 4, 6, 8] },
    );
    expect([...result.rolloutCounts]).toEqual([6, 4, 2]);
    expect(result.scores.reduce((a, b) => a + b, 0)).toBeCloseTo(0.15056, 5);
    expect(knapsackValue(4, 0.5) + knapsackValue(4, 0.1) + knapsackValue(4, 0.9)).toBeCloseTo(0.14032, 5);
  });
  it('an infeasible budget is a clear error', () => {
    expect(() => knapsackAllocation({ alpha: [1, 1], beta: [1, 1] }, { budget: 3 })).toThrow(
      /budget 3 cannot give 2 prompts/,
    );
    expect(() => knapsackAllocation({ alpha: [1], beta: [0] }, { budget: 3 })).toThrow(/prompt 0 must have alpha > 0/);
  });
});

describe('§6.4 VADE selection', () => {
  const input = { alpha: [2, 5, 9], beta: [8, 5, 1] };
  it('posterior means give scores [0.16, 0.25, 0.09] and order [2, 1, 3]', () => {
    const result = vadeSelection(input, { promptCount: 2, rolloutsPerPrompt: 4 });
    expect([...result.scores].map((s) => Number(s.toFixed(4)))).toEqual([0.16, 0.25, 0.09]);
    expect([...result.rolloutCounts]).toEqual([4, 4, 0]);
  });
  it('Thompson draws repeat with the seed and follow the Beta mean', () => {
    expect(vadeSelection(input, { seed: 3 }).scores).toEqual(vadeSelection(input, { seed: 3 }).scores);
    let state = 1;
    const uniform = (): number => (state = (state * 48271) % 2147483647) / 2147483647;
    let total = 0;
    for (let i = 0; i < 4000; i++) total += sampleBeta(2, 8, uniform);
    expect(total / 4000).toBeCloseTo(0.2, 2);
  });
  it('posterior update with decay toward the prior', () => {
    expect(updateBetaPosterior({ alpha: 4, beta: 2 }, 3, 1)).toEqual({ alpha: 7, beta: 3 });
    expect(updateBetaPosterior({ alpha: 4, beta: 2 }, 0, 0, 0.5)).toEqual({ alpha: 2.5, beta: 1.5 });
  });
});
