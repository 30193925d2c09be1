/** Tests of reward combination against ALGORITHMS.md §1.7, §5.1, §5.6, §5.7 vectors. */
import { describe, expect, it } from 'vitest';
import {
  annealedWeight,
  combineRewards,
  outcomeGatedProcessReward,
  rewardColumns,
  rewardMetrics,
  trustWeightedProcessReward,
  weightedSum,
  weightsAt,
} from './combine.js';
import type { RewardMatrix } from './run.js';

/** A matrix built by hand; `null` cells are not applicable, 'error' cells failed. */
function matrix(names: string[], rows: Array<Array<number | null | 'error'>>): RewardMatrix {
  const width = names.length;
  const scores = new Float64Array(rows.length * width).fill(Number.NaN);
  const status: RewardMatrix['status'] = [];
  rows.forEach((row, sample) =>
    row.forEach((value, column) => {
      if (typeof value === 'number') scores[sample * width + column] = value;
      status.push(typeof value === 'number' ? 'ok' : value === null ? 'null' : 'error');
    }),
  );
  return { names, sampleCount: rows.length, scores, status, failures: [], groupSizes: [rows.length] };
}

function close(actual: ArrayLike<number>, expected: number[], digits = 4): void {
  expect(Array.from(actual).map((value) => Number(value.toFixed(digits)))).toEqual(expected);
}

describe('weightedSum', () => {
  it('sums weights × scores, skipping null and weight-0 metrics', () => {
    const scores = matrix(
      ['correct', 'format', 'length'],
      [
        [1, 1, 120], // 1·1 + 0.5·1; length is a logged metric only
        [0, null, 80], // format not applicable: skipped, not counted as 0 or NaN
        [null, null, 10], // nothing applies: nansum gives 0
      ],
    );
    const combined = weightedSum(scores, [1, 0.5, 0]);
    expect(Array.from(combined.rewards)).toEqual([1.5, 0, 0]);
    expect(combined.invalidCount).toBe(0);
  });

  it('takes samples out of the loss when a weighted reward failed, but not for a failing metric', () => {
    const scores = matrix(
      ['correct', 'metric'],
      [
        [1, 'error'],
        ['error', 3],
        [0, 1],
      ],
    );
    const combined = weightedSum(scores, [1, 0]);
    expect(combined.valid).toEqual([true, false, true]); // sample 1's weighted reward failed
    expect(Number.isNaN(combined.rewards[1]!)).toBe(true); // never silently scored 0
    expect(combined.invalidCount).toBe(1);
  });

  it('checks the weight count', () => {
    expect(() => weightedSum(matrix(['a'], [[1]]), [1, 2])).toThrow(/2 weights for 1 rewards/);
  });
});

describe('rewardColumns (GDPO input, §1.7)', () => {
  it('hands over one column per weighted reward; metrics and invalid samples are left out', () => {
    const scores = matrix(
      ['correct', 'format', 'length', 'judge'],
      [
        [1, 1, 5, 1],
        [1, 0, 6, 1],
        [0, 1, 7, 'error'],
        [0, 1, 8, 0],
      ],
    );
    const columns = rewardColumns(scores, [1, 1, 0, 0.5]);
    expect(columns.names).toEqual(['correct', 'format', 'judge']); // length has weight 0: a metric, not a GDPO component
    expect(columns.weights).toEqual([1, 1, 0.5]);
    expect(columns.columns.map((column) => Array.from(column))).toEqual([
      [1, 1, NaN, 0], // §1.7 correctness inputs, sample 2 invalid (its judge call failed)
      [1, 0, NaN, 1],
      [1, 1, NaN, 0],
    ]);
    expect(columns.valid).toEqual([true, true, false, true]);
    expect(columns.groupSizes).toEqual([4]);
  });
});

describe('rewardMetrics', () => {
  it('logs mean/std over applicable scores, the null fraction and failures', () => {
    const metrics = rewardMetrics(matrix(['a'], [[1], [3], [null], ['error']]));
    expect(metrics['reward/a/mean']).toBe(2);
    expect(metrics['reward/a/std']).toBe(1); // population std of [1, 3]
    expect(metrics['reward/a/nullFraction']).toBe(0.25);
    expect(metrics['reward/a/failures']).toBe(1);
  });
});

describe('process-reward combinators', () => {
  it('Trust-GRPO §5.6 vector at steps 0 and 500', () => {
    close(trustWeightedProcessReward([1, 1, 0, 0], [0.3, 0.4, 0.8, 0.6], 0), [1.0634, 1.0846, 0.1691, 0.1268]);
    close(trustWeightedProcessReward([1, 1, 0, 0], [0.3, 0.4, 0.8, 0.6], 500), [1.0233, 1.0311, 0.0622, 0.0467]);
  });
  it('Trust-GRPO drops the thinking reward when all outcomes agree', () => {
    close(trustWeightedProcessReward([1, 1], [0.3, 0.9], 0), [1, 1]);
  });
  it('Trust-GRPO trusts fully (γ = 1) when the thinking reward favours correct answers', () => {
    close(trustWeightedProcessReward([1, 0], [0.8, 0.2], 0), [1 + 0.3 * 0.8, 0.3 * 0.2]);
  });
  it('Posterior-GRPO §5.7 vector', () => {
    close(outcomeGatedProcessReward([1, 1, 0, 0], [0.9, 0.2, 0.8, 0.1], 0.5), [1.45, 1.1, 0, 0]);
  });
});

describe('annealedWeight and weightsAt', () => {
  const cases: Array<[Parameters<typeof annealedWeight>[0], number, number, string]> = [
    [{ from: 1, to: 0, steps: 100 }, 50, 0.5, 'linear halfway'],
    [{ from: 1, to: 0, steps: 100 }, 500, 0, 'held at `to` after the schedule'],
    [{ from: 1, to: 0, steps: 100, shape: 'cosine' }, 50, 0.5, 'cosine halfway'],
    [{ from: 1, to: 0.01, steps: 100, shape: 'exponential' }, 50, 0.1, 'exponential halfway is the geometric mean'],
    [{ from: 0, to: 1, steps: 10, shape: 'step' }, 9, 0, 'step has not jumped yet'],
    [{ from: 0, to: 1, steps: 10, shape: 'step' }, 10, 1, 'step jumps at the end'],
    [{ from: 0, to: 1, steps: 10, warmupSteps: 5 }, 5, 0, 'warm-up holds `from`'],
  ];
  it.each(cases)('%j at step %d → %d (%s)', (options, step, expected) => {
    expect(annealedWeight(options)(step)).toBeCloseTo(expected, 10);
  });
  it('rejects an exponential schedule through zero', () => {
    expect(() => annealedWeight({ from: 1, to: 0, steps: 10, shape: 'exponential' })).toThrow(/exponential/);
  });
  it('resolves step-dependent weights by name', () => {
    const rewards = combineRewards({
      a: [() => 1, 2],
      b: [() => 1, annealedWeight({ from: 1, to: 0, steps: 10 })],
      c: [() => 1, () => Number.NaN],
    });
    expect(weightsAt(rewards.slice(0, 2), 5)).toEqual([2, 0.5]);
    expect(() => weightsAt(rewards, 5)).toThrow(/reward "c": weight at step 5 is NaN/);
  });
});
