/**
 * Tests of the OPMD advantage (#205): the float64 torch reference written from the authors' code
 * (scripts/reference/group_reinforce.py → test/fixtures/group-reinforce.json), hand-computed vectors,
 * and the edge cases: all-equal rewards, unscored samples, one-sample groups, huge rewards, bad options.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import { opmdAdvantage, opmdAdvantagePart } from './advantages-opmd.js';
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

describe('opmd advantage', () => {
  it.each(fixture.advantages.filter((c) => c.estimator === 'opmd'))(
    'matches the torch reference of OPMDGroupAdvantage, options $options',
    (referenceCase) => {
      const result = opmdAdvantage(
        { rewards: referenceCase.rewards, groupSizes: referenceCase.groupSizes },
        referenceCase.options,
      );
      expectClose(result.advantages, referenceCase.advantages);
      // The unscored samples (null) and nothing else leave the loss.
      expect([...result.keep]).toEqual(referenceCase.rewards.map((r) => (r === null ? 0 : 1)));
    },
  );
  it('by hand: mean baseline is r − mean; logavgexp of [1, 0] at τ = 1 is ln((e + 1)/2)', () => {
    expectClose(opmdAdvantage({ rewards: [1, 0, 1, 0], groupSizes: 4 }).advantages, [0.5, -0.5, 0.5, -0.5]);
    const b = Math.log((Math.E + 1) / 2); // 0.620115
    expectClose(opmdAdvantage({ rewards: [1, 0], groupSizes: 2 }, { baseline: 'logavgexp' }).advantages, [1 - b, -b]);
    // τ·log mean exp(r/τ) lies between the mean and the max: → max as τ → 0.
    const sharp = opmdAdvantage({ rewards: [1, 0], groupSizes: 2 }, { baseline: 'logavgexp', tau: 0.01 }).advantages;
    expectClose(sharp, [0.01 * Math.log(2), -1 + 0.01 * Math.log(2)], 1e-5);
  });
  it('all-equal rewards give exactly 0 with either baseline, and stdIsZero', () => {
    for (const baseline of ['mean', 'logavgexp'] as const) {
      const result = opmdAdvantage({ rewards: [0.3, 0.3, 0.3], groupSizes: 3 }, { baseline });
      expectClose(result.advantages, [0, 0, 0], 1e-7);
      expect([...result.stdIsZero]).toEqual([1]);
    }
  });
  it('a group of one scored sample has baseline 0 (A = r), as the authors; an all-unscored group gives zeros', () => {
    const result = opmdAdvantage({ rewards: [0.7, null, null, null], groupSizes: [2, 2] }, { baseline: 'logavgexp' });
    expectClose(result.advantages, [0.7, 0, 0, 0]);
    expect([...result.keep]).toEqual([1, 0, 0, 0]);
  });
  it('huge rewards do not overflow the soft maximum', () => {
    const result = opmdAdvantage({ rewards: [1000, 999], groupSizes: 2 }, { baseline: 'logavgexp' });
    const b = 1000 + Math.log((1 + Math.exp(-1)) / 2);
    expectClose(result.advantages, [1000 - b, 999 - b], 1e-4);
  });
  it('rejects bad inputs and options', () => {
    expect(() => opmdAdvantage({ rewards: [1, 0, 1], groupSizes: 2 })).toThrow(/not a multiple/);
    expect(() => opmdAdvantage({ rewards: [1, 0], groupSizes: 2 }, { baseline: 'logavgexp', tau: 0 })).toThrow(/tau/);
    expect(() =>
      parsePartOptions(opmdAdvantagePart.options!, { tau: -1 }, 'algorithm.advantageOptions', 'opmd'),
    ).toThrow(/algorithm\.advantageOptions\.tau/);
    expect(() =>
      parsePartOptions(opmdAdvantagePart.options!, { shift: 1 }, 'algorithm.advantageOptions', 'opmd'),
    ).toThrow(/no option "shift"; known: baseline, tau/);
  });
  it('is registered as opmd', () => {
    expect(advantageEstimators.get('opmd')).toBe(opmdAdvantage);
  });
});
