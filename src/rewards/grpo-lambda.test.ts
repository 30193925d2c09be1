/**
 * GRPO-λ (grpo-lambda.ts) against the paper's §3 equations: only the top λ fraction of a step's
 * groups by correctness ratio get r = 1 − α·σ(z-scored length among the group's right answers) on
 * right answers and 0 on wrong ones; every other group keeps 0/1. The expected values were computed
 * independently in float64 (numpy's population std, Python's stable sorted(reverse=True)). Also by
 * name through the registry and the reward runner, with the batch split into its prompts' groups.
 */
import { describe, expect, it } from 'vitest';
import { grpoLambda, grpoLambdaScores } from './grpo-lambda.js';
import { rewardFactories } from './factories.js';
import { scoreRewards } from './run.js';
import { makeRewardInput, type BatchReward, type RewardInput } from './types.js';

/** Five groups of a step: right/wrong and token lengths. */
const step = [
  { correct: [true, true, true, false], lengths: [10, 20, 30, 5] }, // ratio 0.75
  { correct: [true, false, false, false], lengths: [7, 3, 3, 3] }, // 0.25
  { correct: [true, true, true, true], lengths: [12, 12, 12, 12] }, // 1, one length: z = 0
  { correct: [false, false, false, false], lengths: [4, 4, 4, 4] }, // 0
  { correct: [true, true, false, false], lengths: [6, 14, 9, 9] }, // 0.5
];

describe('grpo-lambda', () => {
  it("scores the paper's equations: top ⌈λ·groups⌉ by correctness ratio penalised by length, the rest 0/1", () => {
    // λ = 0.4 of 5 groups → the top 2: ratios 1 (group 2) and 0.75 (group 0); α = 0.5
    const scores = grpoLambdaScores(step, { topFraction: 0.4, alpha: 0.5 });
    expect(scores[0]![0]).toBeCloseTo(0.8864487403, 9); // 1 − 0.5·σ(−1.2247): shortest right answer
    expect(scores[0]![1]).toBeCloseTo(0.75, 9); // at the mean: 1 − α/2
    expect(scores[0]![2]).toBeCloseTo(0.6135512597, 9); // longest right answer
    expect(scores[0]![3]).toBe(0); // wrong in a top group: 0
    expect(scores[2]).toEqual([0.75, 0.75, 0.75, 0.75]); // std 0 → z 0
    expect(scores[1]).toEqual([1, 0, 0, 0]); // not in the top: plain 0/1, whatever the length
    expect(scores[3]).toEqual([0, 0, 0, 0]);
    expect(scores[4]).toEqual([1, 1, 0, 0]);
  });

  it('the top set is at least one group, ranked by ratio with ties kept in batch order', () => {
    // 0.2 of 2 groups rounds up to 1; the second group (ratio 1) outranks the first (0.5)
    const two = [
      { correct: [true, false], lengths: [3, 9] },
      { correct: [true, true], lengths: [2, 6] },
    ];
    const scores = grpoLambdaScores(two, { topFraction: 0.2, alpha: 0.6 });
    expect(scores[0]).toEqual([1, 0]);
    expect(scores[1]![0]).toBeCloseTo(1 - 0.6 / (1 + Math.exp(1)), 12); // z = −1
    expect(scores[1]![1]).toBeCloseTo(1 - 0.6 / (1 + Math.exp(-1)), 12); // z = +1
    // equal ratios: the earlier group is the top one
    const tied = grpoLambdaScores(
      [
        { correct: [true, false], lengths: [3, 9] },
        { correct: [false, true], lengths: [2, 6] },
      ],
      { topFraction: 0.5, alpha: 0.6 },
    );
    expect(tied).toEqual([
      [0.7, 0],
      [0, 1],
    ]);
  });

  it('refuses a top fraction outside (0, 1], naming the option', () => {
    expect(() => grpoLambdaScores(step, { topFraction: 0 })).toThrow(/grpo-lambda.*topFraction must be in \(0, 1\]/);
    expect(() => rewardFactories.get('grpo-lambda').create({ topFraction: 1.5 })).toThrow(/grpo-lambda.*topFraction/);
    expect(() => rewardFactories.get('grpo-lambda').create({ lambda: 0.2 })).toThrow(/grpo-lambda.*bad options/);
  });

  /** The step's inputs: each group's completions, right answer "7", ids as long as the lengths. */
  const inputsOf = (groups: typeof step): RewardInput[] =>
    groups.flatMap(({ correct, lengths }, groupIndex) => {
      const texts = correct.map((ok, index) => `group ${groupIndex} try ${index}: ${ok ? '7' : '8'}`);
      return texts.map((completion, indexInGroup) =>
        makeRewardInput({
          completion,
          completionIds: Array.from({ length: lengths[indexInGroup]! }, () => 1),
          row: { answer: '7' },
          group: texts,
          indexInGroup,
        }),
      );
    });

  it('as a step reward: splits the batch into its groups, checks answers, counts tokens', async () => {
    const reward = grpoLambda({
      correctness: (input) => (input.completion.endsWith('7') ? 1 : 0),
      topFraction: 0.4,
      alpha: 0.5,
    });
    const scores = await reward.scoreBatch(inputsOf(step));
    const expected = grpoLambdaScores(step, { topFraction: 0.4, alpha: 0.5 }).flat();
    expect(scores).toHaveLength(expected.length);
    scores.forEach((score, index) => expect(score).toBeCloseTo(expected[index]!, 12));
    const broken = inputsOf(step).slice(1); // starts inside a group
    await expect(reward.scoreBatch(broken)).rejects.toThrow(/grpo-lambda.*not whole groups/);
  });

  it('by name in grpo list, with math-answer on the answer column when no task check is given', async () => {
    const factory = rewardFactories.get('grpo-lambda');
    expect(factory.citation).toMatch(/2505\.18086/);
    expect(factory.columns({})).toEqual([{ column: 'answer', option: 'correctness "math-answer"\'s answerColumn' }]);
    const reward = factory.create({}) as BatchReward;
    expect(reward.scope).toBe('batch');
    const inputs = inputsOf(step.slice(0, 2));
    const matrix = await scoreRewards(
      [{ name: 'grpo-lambda', reward, weight: 1 }],
      [inputs.slice(0, 4), inputs.slice(4)],
    );
    expect(matrix.failures).toEqual([]);
    // defaults λ 0.2 (top 1 of 2 groups: the first) and α 0.6
    const expected = grpoLambdaScores(step.slice(0, 2), { topFraction: 0.2, alpha: 0.6 }).flat();
    Array.from(matrix.scores).forEach((score, index) => expect(score).toBeCloseTo(expected[index]!, 6));
  });
});
