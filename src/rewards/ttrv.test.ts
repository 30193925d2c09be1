/**
 * TTRV's reward (ttrv.ts) against hand-made groups, the numbers computed from the authors' formula
 * (Akshit21112002/TTRV ttt_metrics.py `rewards_en`: frequency − 0.75 · entropy / log distinct) in
 * float64 Python: no answer is one more answer, one distinct answer or one sample has no entropy
 * term. Also by name through the factory registry and the runner.
 */
import { describe, expect, it } from 'vitest';
import { rewardFactories } from './factories.js';
import { scoreRewards } from './run.js';
import { makeRewardInput, type GroupReward } from './types.js';
import { ttrvReward } from './ttrv.js';

const group = (completions: string[]) =>
  completions.map((completion, indexInGroup) => makeRewardInput({ completion, group: completions, indexInGroup }));
const score = async (reward: GroupReward, completions: string[]) =>
  Array.from(await reward.scoreGroup(group(completions)));
const close = (actual: readonly (number | null)[], expected: number[]) =>
  actual.forEach((value, index) => expect(value).toBeCloseTo(expected[index]!, 6));

describe('ttrv', () => {
  it('frequency minus 0.75 of the normalised entropy; no answer is an answer of its own', async () => {
    close(await score(ttrvReward(), ['4', '4', '5', 'none']), [-0.209796, -0.209796, -0.459796, -0.459796]);
    close(await score(ttrvReward(), ['3', '3', '3', '8']), [0.141541, 0.141541, 0.141541, -0.358459]);
  });
  it('all distinct: frequency 1/N minus the whole weight', async () => {
    close(await score(ttrvReward(), ['1', '2', '3', '4']), [-0.5, -0.5, -0.5, -0.5]);
  });
  it('one distinct answer, or a group of one, has no entropy term', async () => {
    expect(await score(ttrvReward(), ['4', 'so 4', '\\boxed{4}', '4'])).toEqual([1, 1, 1, 1]);
    expect(await score(ttrvReward(), ['7'])).toEqual([1]);
  });
  it('entropyWeight scales the term; 0 leaves the frequency alone', async () => {
    close(await score(ttrvReward({ entropyWeight: 0 }), ['4', '4', '5', 'none']), [0.5, 0.5, 0.25, 0.25]);
    close(await score(ttrvReward({ entropyWeight: 1.5 }), ['1', '2', '3', '4']), [-1.25, -1.25, -1.25, -1.25]);
  });
  it('by name, scored per group by the runner; options are checked', async () => {
    expect(rewardFactories.get('ttrv').citation).toContain('2510.06783');
    const reward = rewardFactories.get('ttrv').create({});
    const matrix = await scoreRewards(
      [{ name: 'ttrv', reward, weight: 1 }],
      [group(['1', '2', '3', '4']), group(['6'])],
    );
    close(Array.from(matrix.scores), [-0.5, -0.5, -0.5, -0.5, 1]);
    expect(() => rewardFactories.get('ttrv').create({ entropyWeight: -1 })).toThrow('reward "ttrv": bad options');
  });
});
