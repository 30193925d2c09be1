/** Tests of the reward runner: matrix layout, null handling, failure policy, timeouts, concurrency, group rewards. */
import { describe, expect, it } from 'vitest';
import { cellScore, scoreRewards } from './run.js';
import { groupReward, makeRewardInput, type NamedReward, type RewardInput } from './types.js';

function group(...completions: string[]): RewardInput[] {
  return completions.map((completion, indexInGroup) =>
    makeRewardInput({ completion, group: completions, indexInGroup }),
  );
}

describe('scoreRewards', () => {
  it('fills a [sample × reward] matrix; null and NaN are not applicable', async () => {
    const rewards: NamedReward[] = [
      { name: 'length', reward: ({ completion }) => completion.length, weight: 1 },
      { name: 'onlyShort', reward: ({ completion }) => (completion.length < 3 ? 1 : null), weight: 1 },
      { name: 'nan', reward: () => Number.NaN, weight: 1 },
    ];
    const matrix = await scoreRewards(rewards, [group('ab', 'abcd'), group('x')]);
    expect(matrix.sampleCount).toBe(3);
    expect(matrix.groupSizes).toEqual([2, 1]);
    expect(Array.from(matrix.scores.filter((_, cell) => cell % 3 === 0))).toEqual([2, 4, 1]);
    expect(matrix.status).toEqual(['ok', 'ok', 'null', 'ok', 'null', 'null', 'ok', 'ok', 'null']);
    expect(cellScore(matrix, 1, 'onlyShort')).toBeNull(); // "abcd" is not short: not applicable
    expect(matrix.failures).toEqual([]);
  });

  it('records throws, bad return values and timeouts as failures, never as 0', async () => {
    const rewards: NamedReward[] = [
      {
        name: 'throws',
        reward: ({ completion }) => {
          if (completion === 'bad') throw new Error('boom');
          return 1;
        },
        weight: 1,
      },
      { name: 'infinite', reward: () => Number.POSITIVE_INFINITY, weight: 1 },
      { name: 'string', reward: (() => 'yes') as unknown as NamedReward['reward'], weight: 1 },
      {
        name: 'slow',
        // 'bad' never settles: scoring can only finish because the 100 ms limit abandons it.
        reward: ({ completion }) =>
          completion === 'bad'
            ? new Promise<number>(() => {})
            : new Promise((resolve) => setTimeout(() => resolve(1), 1)),
        weight: 1,
      },
    ];
    const matrix = await scoreRewards(rewards, [group('good', 'bad')], { timeoutMs: 100 });
    expect(matrix.status).toEqual(['ok', 'error', 'error', 'ok', 'error', 'error', 'error', 'timeout']);
    expect(Number.isNaN(matrix.scores[4]!)).toBe(true); // the failed cell holds no score
    expect(matrix.failures.map((failure) => `${failure.sample}:${failure.reward}:${failure.status}`)).toEqual([
      '0:infinite:error',
      '0:string:error',
      '1:throws:error',
      '1:infinite:error',
      '1:string:error',
      '1:slow:timeout',
    ]);
    expect(matrix.failures.find((failure) => failure.reward === 'throws')?.message).toBe('boom');
  });

  it('aborts the signal of a call that times out', async () => {
    let aborted = false;
    const reward: NamedReward = {
      name: 'waits',
      weight: 1,
      reward: ({ signal }) =>
        new Promise((resolve) => {
          signal?.addEventListener('abort', () => {
            aborted = true;
            resolve(0);
          });
        }),
    };
    await scoreRewards([reward], [group('a')], { timeoutMs: 20 });
    expect(aborted).toBe(true);
  });

  it('keeps at most `concurrency` calls in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const reward: NamedReward = {
      name: 'tracked',
      weight: 1,
      reward: async () => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return 1;
      },
    };
    const matrix = await scoreRewards([reward], [group('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')], { concurrency: 3 });
    expect(peak).toBe(3);
    expect(matrix.status.every((status) => status === 'ok')).toBe(true);
  });

  it('runs group rewards once per group and checks their length', async () => {
    let calls = 0;
    const rank = groupReward((inputs) => {
      calls++;
      return inputs.map((input) => input.completion.length);
    });
    const wrongLength = groupReward(() => [1]);
    const matrix = await scoreRewards(
      [
        { name: 'rank', reward: rank, weight: 1 },
        { name: 'wrong', reward: wrongLength, weight: 0 },
      ],
      [group('a', 'bbb'), group('cc')],
    );
    expect(calls).toBe(2);
    expect(Array.from(matrix.scores.filter((_, cell) => cell % 2 === 0))).toEqual([1, 3, 2]);
    expect(matrix.status.filter((_, cell) => cell % 2 === 1)).toEqual(['error', 'error', 'ok']); // 1 score for a group of 2 is an error; the group of 1 is fine
  });

  it('rejects duplicate names', async () => {
    const reward: NamedReward = { name: 'same', reward: () => 1, weight: 1 };
    await expect(scoreRewards([reward, reward], [group('a')])).rejects.toThrow(/duplicate reward names/);
  });
});

describe('a per-completion reward call', () => {
  it("keeps the input's accessors lazy: a getter (the trainer's token texts) runs only for a reward that reads it", async () => {
    let decoded = 0;
    const input = Object.defineProperty(makeRewardInput({ completion: 'ab' }), 'completionTokenTexts', {
      get: () => (decoded++, ['a', 'b']),
      enumerable: true,
      configurable: true,
    });
    const plain: NamedReward = { name: 'plain', weight: 1, reward: ({ completion }) => completion.length };
    await scoreRewards([plain], [[input]], { timeoutMs: 5_000 });
    expect(decoded).toBe(0);
    const reading: NamedReward = { name: 'reading', weight: 1, reward: (i) => i.completionTokenTexts!.length };
    const matrix = await scoreRewards([reading], [[input]], { timeoutMs: 5_000 });
    expect([decoded, matrix.scores[0]]).toEqual([1, 2]);
  });
});
