/**
 * Tests of the AsymRE advantage (#205's reading of arXiv 2506.20520): the float64 torch reference
 * written from the authors' code (scripts/reference/group_reinforce.py → test/fixtures/group-reinforce.json),
 * hand-computed vectors, and the edge cases: all-equal rewards (A = −δ, not 0), unscored samples,
 * one-sample groups, bad options.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import { asymreAdvantage, asymreAdvantagePart } from './advantages-asymre.js';
import { parsePartOptions } from './option-schemas.js';
import { expectCloseWithin } from '../../test/helpers/numeric.js';
import { testFixture } from '../../test/helpers/fixtures.js';

interface AdvantageCase {
  estimator: string;
  options: Record<string, unknown>;
  rewards: (number | null)[];
  groupSizes: number[];
  advantages: number[];
}
const fixture = JSON.parse(readFileSync(testFixture('group-reinforce.json'), 'utf8')) as {
  advantages: AdvantageCase[];
};

const expectClose = expectCloseWithin(1e-6);

describe('asymre advantage', () => {
  it.each(fixture.advantages.filter((c) => c.estimator === 'asymre'))(
    'matches the torch reference of ASYMREGroupAdvantage, options $options',
    (referenceCase) => {
      const result = asymreAdvantage(
        { rewards: referenceCase.rewards, groupSizes: referenceCase.groupSizes },
        referenceCase.options,
      );
      expectClose(result.advantages, referenceCase.advantages);
      expect([...result.keep]).toEqual(referenceCase.rewards.map((r) => (r === null ? 0 : 1)));
    },
  );
  it('by hand: r = [1, 0, 1, 0] with δ = −0.1 gives r − 0.4', () => {
    expectClose(asymreAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }).advantages, [0.6, -0.4, 0.6, -0.4]);
    expectClose(
      asymreAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }, { baselineShift: 0 }).advantages,
      [0.5, -0.5, 0.5, -0.5],
    );
  });
  it('all-equal rewards give A = −δ on every sample (the shift is the method), with stdIsZero set', () => {
    const result = asymreAdvantage({ rewards: [0, 0, 0, 0], groupSizes: 4 });
    expectClose(result.advantages, [0.1, 0.1, 0.1, 0.1]);
    expect([...result.stdIsZero]).toEqual([1]);
  });
  it('a group of one scored sample has baseline 0, not δ (A = r); unscored samples get 0, keep 0', () => {
    const result = asymreAdvantage({ rewards: [null, 0.4, 1], groupSizes: [2, 1] });
    expectClose(result.advantages, [0, 0.4, 1]);
    expect([...result.keep]).toEqual([0, 1, 1]);
  });
  it('rejects bad inputs and options', () => {
    expect(() => asymreAdvantage({ rewards: [1, 0], groupSizes: [3] })).toThrow(/sum to 3/);
    expect(() => asymreAdvantage({ rewards: [1, 0], groupSizes: 2 }, { baselineShift: NaN })).toThrow(/baselineShift/);
    expect(() =>
      parsePartOptions(asymreAdvantagePart.options!, { tau: 1 }, 'algorithm.advantageOptions', 'asymre'),
    ).toThrow(/no option "tau"; known: baselineShift/);
  });
  it('is registered as asymre', () => {
    expect(advantageEstimators.get('asymre')).toBe(asymreAdvantage);
  });
});
