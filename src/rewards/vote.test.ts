/**
 * The label-free vote rewards (vote.ts) against hand-made groups: TTRL's majority vote (pseudo-label,
 * no-answer and tie handling as PRIME-RL/TTRL's `_majority_vote`) and TTRV's frequency reward; the
 * dataset's answer column is never read. Also through the factory registry by name.
 */
import { describe, expect, it } from 'vitest';
import { rewardFactories } from './factories.js';
import { scoreRewards } from './run.js';
import { makeRewardInput, type GroupReward } from './types.js';
import { answerClasses, majorityVote, voteFrequency } from './vote.js';

const group = (completions: string[], row: Record<string, unknown> = {}) =>
  completions.map((completion, indexInGroup) => makeRewardInput({ completion, row, group: completions, indexInGroup }));
const score = async (reward: GroupReward, completions: string[], row?: Record<string, unknown>) =>
  Array.from(await reward.scoreGroup(group(completions, row)));

describe('answer classes', () => {
  it('groups equivalent answers, in order of first appearance; no answer is −1', () => {
    expect(answerClasses(['\\boxed{1/2}', 'it is 0.5', 'so 3', 'no idea', '\\frac{1}{2}'])).toEqual([0, 0, 1, -1, 0]);
  });
});

describe('majority-vote (TTRL)', () => {
  it('the most common answer is the pseudo-label: 1 for its samples, 0 for the rest', async () => {
    expect(await score(majorityVote(), ['so 4', 'the answer is 4', '5', '\\boxed{4}'])).toEqual([1, 1, 0, 1]);
  });
  it('never reads the dataset answer', async () => {
    expect(await score(majorityVote(), ['5', '5', '4'], { answer: '4' })).toEqual([1, 1, 0]);
  });
  it('no-answer completions do not vote and score 0, even when they are the most numerous', async () => {
    expect(await score(majorityVote(), ['hmm', 'well', '7', 'maybe'])).toEqual([0, 0, 1, 0]);
  });
  it('a group with no answer at all scores 0 everywhere', async () => {
    expect(await score(majorityVote(), ['hmm', 'well'])).toEqual([0, 0]);
  });
  it('a tie goes to the answer seen first', async () => {
    expect(await score(majorityVote(), ['3', '8', '8', '3'])).toEqual([1, 0, 0, 1]);
    expect(await score(majorityVote(), ['8', '3', '3', '8'])).toEqual([1, 0, 0, 1]);
  });
  it('requireBoxed: only boxed answers vote', async () => {
    expect(await score(majorityVote({ requireBoxed: true }), ['4', '4', '\\boxed{5}'])).toEqual([0, 0, 1]);
  });
});

describe('vote-frequency (TTRV)', () => {
  it('the share of the group agreeing with the sample, no-answer samples in the denominator', async () => {
    expect(await score(voteFrequency(), ['4', '4.0', '5', 'none'])).toEqual([0.5, 0.5, 0.25, 0]);
  });
  it('a unanimous group scores 1', async () => {
    expect(await score(voteFrequency(), ['12', '12', '12'])).toEqual([1, 1, 1]);
  });
});

describe('by name', () => {
  it('both are group rewards the runner scores per group, and refuse unknown options', async () => {
    const rewards = ['majority-vote', 'vote-frequency'].map((name) => ({
      name,
      reward: rewardFactories.get(name).create({}),
      weight: 1,
    }));
    const matrix = await scoreRewards(rewards, [group(['1', '1', '2']), group(['3', '4', '4'])]);
    expect(Array.from(matrix.scores)).toEqual([1, 2 / 3, 1, 2 / 3, 0, 1 / 3, 0, 1 / 3, 1, 2 / 3, 1, 2 / 3]);
    expect(() => rewardFactories.get('majority-vote').create({ answerColumn: 'answer' })).toThrow(
      /reward "majority-vote": bad options/,
    );
  });
});
