/**
 * Evaluation of a multi-turn run goes through the run's rollout: greedy (temperature 0, one episode
 * per example), the task's check on the episode's final text, rewards seeing the episode and the
 * policy's logprobs; pass@k samples k episodes at the sampling temperature. A correctness check that
 * throws (a failing `llm-judge`) counts the answer as not correct, counts the failure and reports it; it never aborts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDatasetTask } from '../data/dataset-task.js';
import type { Task } from '../data/task.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import type { Transformer } from '../model/transformer.js';
import type { RewardFn } from '../rewards/types.js';
import { evaluate } from './evaluate.js';
import type { RolloutFn, RolloutSettings } from '../rollout/rollout.js';

const tokenizer = new CharTokenizer();
const task = {
  isCorrect: (example: { answer?: string }, completion: string) => completion === example.answer,
} as unknown as Task;
const examples = [
  { prompt: '2*3', answer: '6' },
  { prompt: '4*5', answer: '20' },
];

describe('evaluate with episodes', () => {
  it('runs the rollout greedily and checks the final text; rewards see the episode', async () => {
    const calls: RolloutSettings[] = [];
    const rollout: RolloutFn = async (_context, prompts, settings) => {
      calls.push(settings);
      return prompts.flatMap((prompt, promptIndex) =>
        Array.from({ length: settings.groupSize }, () => ({
          promptIndex,
          completionIds: [5, 6],
          oldLogprobs: [-0.5, 0],
          lossMask: [1, 0],
          // The first episode answers right only when sampled (pass@k), the second always.
          text: promptIndex === 1 || settings.temperature > 0 ? String(prompt.example.answer) : 'wrong',
          truncated: false,
          episode: { messages: [], toolCalls: [], turns: 2, turnRewards: [null, null], stopReason: 'stop' },
        })),
      );
    };
    // and the policy's logprobs, NaN on the token the policy did not produce (lossMask 0)
    const sawEpisode: RewardFn = ({ episode, policyLogprobs }) =>
      episode?.turns === 2 && policyLogprobs?.[0] === -0.5 && Number.isNaN(policyLogprobs[1]) ? 1 : 0;
    const result = await evaluate(
      {} as Transformer,
      { tokenizer, chatTemplate: null },
      task,
      examples,
      [{ name: 'episode', reward: sawEpisode, weight: 1 }],
      {
        maxNewTokens: 8,
        stopTokenIds: [2],
        passAtK: 3,
        temperature: 0.7,
        seed: 1,
        episodes: { rollout, context: { model: {} as Transformer, tokenizer } },
      },
    );
    expect(result).toEqual({ 'eval/accuracy': 0.5, 'eval/meanReward': 1, 'eval/passAtK': 1 });
    expect(calls.map((settings) => [settings.groupSize, settings.temperature])).toEqual([
      [1, 0],
      [3, 0.7],
    ]);
  });
});

describe('a correctness check that fails', () => {
  it('an unreachable llm-judge counts as not correct, is counted and reported, and does not abort', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'grpo-eval-judge-'));
    try {
      const file = join(folder, 'rows.jsonl');
      writeFileSync(file, examples.map((row) => JSON.stringify(row)).join('\n') + '\n');
      const judged = await loadDatasetTask({
        trainFile: file,
        evalFile: file,
        rewards: [{ name: 'exact-match' }],
        // Port 9 (discard) refuses the connection at once; one attempt, so no back-off.
        correctness: { name: 'llm-judge', options: { baseUrl: 'http://127.0.0.1:9/v1', model: 'm', maxAttempts: 1 } },
      });
      const rollout: RolloutFn = async (_context, prompts, settings) =>
        prompts.flatMap((prompt, promptIndex) =>
          Array.from({ length: settings.groupSize }, () => ({
            promptIndex,
            completionIds: [5],
            oldLogprobs: [0],
            lossMask: [1],
            text: String(prompt.example.answer),
            truncated: false,
          })),
        );
      const reported: string[] = [];
      const result = await evaluate({} as Transformer, { tokenizer, chatTemplate: null }, judged, examples, [], {
        maxNewTokens: 8,
        stopTokenIds: [2],
        passAtK: 2,
        temperature: 0.7,
        seed: 1,
        episodes: { rollout, context: { model: {} as Transformer, tokenizer } },
        onCheckError: (message) => reported.push(message),
      });
      expect(result['eval/accuracy']).toBe(0);
      expect(result['eval/passAtK']).toBe(0);
      expect(result['eval/checkErrors']).toBe(2 + 2 * 2); // greedy answers and pass@k samples
      expect(reported).toHaveLength(1); // one distinct message, reported once
      expect(reported[0]).toMatch(/llmJudge|fetch failed|ECONNREFUSED/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('a reward that scores the greedy answer after another prompt (self-aligned)', () => {
  it('gets the model’s log-probs there, as in training: every held-out answer is scored', async () => {
    const { Transformer: Model } = await import('../model/transformer.js');
    const { createSmallConfig } = await import('../model/config.js');
    const { selfAlignedReward } = await import('../rewards/policy.js');
    const model = Model.random(
      createSmallConfig({
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 16,
        numLayers: 1,
        numHeads: 2,
        bosTokenId: tokenizer.bosTokenId,
        eosTokenIds: [tokenizer.eosTokenId],
      }),
      5,
    );
    const rewards: (number | null)[] = [];
    const result = await evaluate(
      model,
      { tokenizer, chatTemplate: null },
      task,
      examples,
      [{ name: 'self-aligned', reward: selfAlignedReward(), weight: 1 }],
      {
        maxNewTokens: 4,
        stopTokenIds: [],
        passAtK: 0,
        temperature: 0,
        seed: 1,
        onCompletion: ({ reward }) => rewards.push(reward),
      },
    );
    expect(rewards).toHaveLength(2);
    for (const reward of rewards) {
      expect(reward).not.toBeNull();
      expect(reward!).toBeGreaterThanOrEqual(-1);
      expect(reward!).toBeLessThan(1);
    }
    expect(result['eval/meanReward']).toBeCloseTo((rewards[0]! + rewards[1]!) / 2, 12);
  });
});
