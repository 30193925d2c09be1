/** Tests of batched (TRL-shaped) rewards: one call over every group, columns as lists, the failure policy. */
import { describe, expect, it } from 'vitest';
import { batchedReward, type RewardBatch } from './batched.js';
import { scoreOne, scoreRewards } from './run.js';
import { makeRewardInput, type NamedReward, type RewardInput } from './types.js';

const inputs = (answer: string, ...completions: string[]): RewardInput[] =>
  completions.map((completion, indexInGroup) =>
    makeRewardInput({ prompt: `q${answer}`, completion, row: { answer }, group: completions, indexInGroup, step: 3 }),
  );

describe('batchedReward', () => {
  it('is called once over every group, with the columns as lists and the step', async () => {
    const calls: Array<{ batch: RewardBatch; step: number }> = [];
    const exact = batchedReward(function exactAnswer(batch, { step }) {
      calls.push({ batch, step });
      return batch.completions.map((completion, i) => (completion === batch.answer[i] ? 1 : null));
    });
    expect(exact.name).toBe('exactAnswer'); // named after the function
    expect(batchedReward(() => [], 'judge').name).toBe('judge');
    const matrix = await scoreRewards(
      [{ name: 'exact', reward: exact, weight: 1 }],
      [inputs('1', '1', '2'), inputs('5', '5')],
    );
    expect(calls).toHaveLength(1); // one call for both groups, as TRL calls a reward once per batch
    expect(calls[0]!.batch.prompts).toEqual(['q1', 'q1', 'q5']);
    expect(calls[0]!.batch.answer).toEqual(['1', '1', '5']);
    expect(calls[0]!.step).toBe(3);
    expect(matrix.status).toEqual(['ok', 'null', 'ok']); // null: not applicable, as for per-sample rewards
    expect(await scoreOne(exact, inputs('7', '7')[0]!)).toBe(1);
  });

  it('fails every cell of the call when it throws or returns the wrong number of scores, never scoring 0', async () => {
    const rewards: NamedReward[] = [
      {
        name: 'throws',
        reward: batchedReward(() => {
          throw new Error('judge down');
        }),
        weight: 1,
      },
      { name: 'short', reward: batchedReward(() => [1]), weight: 1 },
    ];
    const matrix = await scoreRewards(rewards, [inputs('1', 'a', 'b')]);
    expect(matrix.status).toEqual(['error', 'error', 'error', 'error']);
    expect(matrix.failures.map((failure) => failure.message)).toEqual([
      'judge down',
      'batched reward returned 1 scores for a batch of 2',
      'judge down',
      'batched reward returned 1 scores for a batch of 2',
    ]);
  });
});
