/**
 * Co-Reward (co-reward.ts) against hand-made batches, with the authors' rules (resistzzz/Co-Reward
 * co_reward.py): each group is labelled by its partner group's majority answer, never by its own or
 * by the dataset's; no-answer completions do not vote and score 0; an empty label scores 0; a tie
 * goes to the answer seen first. Also through the factory registry and the reward runner by name.
 */
import { describe, expect, it } from 'vitest';
import { coReward } from './co-reward.js';
import { createReward, rewardFactories } from './factories.js';
import { scoreRewards } from './run.js';
import { makeRewardInput, type BatchReward, type RewardInput } from './types.js';

/** One prompt's group: its completions with the row (pair key) they share. */
const group = (completions: string[], row: Record<string, unknown>): RewardInput[] =>
  completions.map((completion, indexInGroup) => makeRewardInput({ completion, row, group: completions, indexInGroup }));
const score = async (reward: BatchReward, ...groups: RewardInput[][]) =>
  Array.from(await reward.scoreBatch(groups.flat()));

describe('co-reward', () => {
  it("labels each group with its partner's majority, not its own", async () => {
    // Own majority of the original is 5; the rephrasing votes 4, so the original's 4 scores.
    const original = group(['5', '5', '4'], { pair_id: 'q1' });
    const rephrased = group(['4', '4', '5'], { pair_id: 'q1' });
    expect(await score(coReward(), original, rephrased)).toEqual([0, 0, 1, 0, 0, 1]);
  });
  it('pairs by the key, whatever the order of groups in the batch', async () => {
    const a1 = group(['1', '2'], { pair_id: 'a' });
    const b1 = group(['7', '7'], { pair_id: 'b' });
    const a2 = group(['2', '2'], { pair_id: 'a' });
    const b2 = group(['7', '8'], { pair_id: 'b' });
    // a1 ← a2's vote 2; b1 ← b2's vote (tie 7/8, first seen 7); a2 ← a1's vote (tie, 1); b2 ← 7.
    expect(await score(coReward(), a1, b1, a2, b2)).toEqual([0, 1, 1, 1, 0, 0, 1, 0]);
  });
  it('never reads the dataset answer', async () => {
    const original = group(['5', '4'], { pair_id: 'q', answer: '4' });
    const rephrased = group(['5', '5'], { pair_id: 'q', answer: '4' });
    expect(await score(coReward(), original, rephrased)).toEqual([1, 0, 1, 1]);
  });
  it('no-answer completions do not vote and score 0; a partner without any answer gives every sample 0', async () => {
    const original = group(['hmm', '3', 'well'], { pair_id: 'q' });
    const rephrased = group(['no idea', 'maybe', 'so 3'], { pair_id: 'q' });
    expect(await score(coReward(), original, rephrased)).toEqual([0, 1, 0, 0, 0, 1]);
    const silent = group(['hmm', 'well'], { pair_id: 'r' });
    const answering = group(['3', '3'], { pair_id: 'r' });
    expect(await score(coReward(), answering, silent)).toEqual([0, 0, 0, 0]);
  });
  it('a group without a partner in the batch is left unscored', async () => {
    const alone = group(['3', '3'], { pair_id: 'x' });
    const original = group(['1'], { pair_id: 'y' });
    const rephrased = group(['1'], { pair_id: 'y' });
    expect(await score(coReward(), alone, original, rephrased)).toEqual([null, null, 1, 1]);
  });
  it('compares answers by value, as majority-vote does (0.5 and 1/2 are one answer)', async () => {
    const original = group(['\\boxed{1/2}', '0.3'], { pair_id: 'q' });
    const rephrased = group(['the answer is 0.5', '0.5'], { pair_id: 'q' });
    expect(await score(coReward(), original, rephrased)).toEqual([1, 0, 1, 1]);
  });
  it('requireBoxed: only boxed answers vote and score', async () => {
    const original = group(['\\boxed{4}', '4'], { pair_id: 'q' });
    const rephrased = group(['\\boxed{4}', '5'], { pair_id: 'q' });
    expect(await score(coReward({ requireBoxed: true }), original, rephrased)).toEqual([1, 0, 1, 0]);
  });
  it('pairColumn names the key; a row without it is an error naming the column', async () => {
    const original = group(['4'], { question_id: 7 });
    const rephrased = group(['4'], { question_id: 7 });
    expect(await score(coReward({ pairColumn: 'question_id' }), original, rephrased)).toEqual([1, 1]);
    await expect(score(coReward(), original, rephrased)).rejects.toThrow('no "pair_id" column');
  });
});

describe('co-reward by name', () => {
  it('is a registered factory with its paper, and the runner scores the whole step at once', async () => {
    expect(rewardFactories.get('co-reward').citation).toContain('2508.00410');
    const reward = rewardFactories.get('co-reward').create({ pairColumn: 'pair' });
    const groups = [group(['5', '4'], { pair: 1 }), group(['4', '4'], { pair: 1 })];
    const matrix = await scoreRewards([{ name: 'co-reward', reward, weight: 1 }], groups);
    // The first group is labelled 4 by the second; the second by the first's tie, won by 5.
    expect(Array.from(matrix.scores)).toEqual([0, 1, 0, 0]);
  });
  it('refuses unknown options and cannot be nested or run outside training', () => {
    expect(() => rewardFactories.get('co-reward').create({ pairColum: 'x' })).toThrow(
      'reward "co-reward": bad options',
    );
    expect(() => createReward('co-reward')).toThrow('scores a whole training step at once');
  });
});
