/*
 * The training worker's side of a typed reward (typed-reward.ts), with stand-ins for the reward's
 * worker: one that compiles and scores on this thread through reward-function.ts as
 * reward-worker.ts does, and one that never answers. Checks the reward matrix the step code reads,
 * that a compile error comes back as it was sent, and that a request past the time limit ends the
 * worker and stops the run with one sentence.
 */
import { describe, expect, it } from 'vitest';
import type { RewardInput } from '../rewards/types.js';
import { compileReward, scoreCompletions } from './reward-function.js';
import { startTypedReward, type RewardThread } from './typed-reward.js';

/** A reward worker on this thread, answering as reward-worker.ts does. */
function inlineThread(): RewardThread {
  let reward: ReturnType<typeof compileReward> | null = null;
  const thread: RewardThread = {
    onmessage: null,
    onerror: null,
    terminate: () => undefined,
    postMessage(message) {
      const data = message as { type: string; source?: string; inputs?: Parameters<typeof scoreCompletions>[1] };
      const reply = (value: unknown) => setTimeout(() => thread.onmessage?.({ data: value as never }), 0);
      const fail = (error: unknown) => reply({ type: 'error', message: (error as Error).message });
      try {
        if (data.type === 'compile') {
          reward = compileReward(data.source ?? '');
          reply({ type: 'compiled' });
        } else scoreCompletions(reward!, data.inputs ?? []).then((scores) => reply({ type: 'scores', scores }), fail);
      } catch (error) {
        fail(error);
      }
    },
  };
  return thread;
}

const group = (completions: string[]): RewardInput[] =>
  completions.map((completion, indexInGroup) => ({
    prompt: 'There was a big',
    completion,
    completionIds: [1, 2],
    row: { prompt: 'There was a big', answer: '' },
    group: completions,
    indexInGroup,
    step: 3,
    signal: new AbortController().signal,
  }));

describe('startTypedReward', () => {
  it('scores groups into a one-reward matrix, null cells left out', async () => {
    const typed = await startTypedReward(
      '({ completion, step }) => (completion ? completion.length + step : null)',
      1000,
      inlineThread,
    );
    const matrix = await typed.score([group(['dog', '']), group(['ball'])]);
    expect(matrix.names).toEqual(['reward']);
    expect(Array.from(matrix.scores)).toEqual([6, Number.NaN, 7]);
    expect(matrix.status).toEqual(['ok', 'null', 'ok']);
    expect(matrix.groupSizes).toEqual([2, 1]);
    typed.close();
  });

  it("passes on the reward worker's sentence for a reward that does not compile", async () => {
    await expect(startTypedReward('(', 1000, inlineThread)).rejects.toThrow(
      /^the reward does not compile as JavaScript \(.+\) nor as TypeScript \(.+\)$/,
    );
  });

  it('ends a reward worker that runs past the time limit and stops the run with one sentence', async () => {
    let compiled = false;
    let terminated = false;
    const stuck: RewardThread = {
      onmessage: null,
      onerror: null,
      terminate: () => (terminated = true),
      postMessage(message) {
        // Compiles, then never answers a score request (a reward stuck in a loop).
        if ((message as { type: string }).type === 'compile' && !compiled) {
          compiled = true;
          setTimeout(() => stuck.onmessage?.({ data: { type: 'compiled' } }), 0);
        }
      },
    };
    const typed = await startTypedReward('() => 1', 50, () => stuck);
    await expect(typed.score([group(['a', 'b'])])).rejects.toThrow(
      "the reward did not return within 50 ms for the step's 2 completions (an endless loop?), so the run stopped",
    );
    expect(terminated).toBe(true);
    await expect(typed.score([group(['a'])])).rejects.toThrow('the reward has stopped: start a new run');
  });

  it('refuses a time limit that is not a positive number', async () => {
    await expect(startTypedReward('() => 1', 0, inlineThread)).rejects.toThrow(
      "the reward's time limit must be a positive number of milliseconds, got 0",
    );
  });
});
