/**
 * Evaluation of a multi-turn run goes through the run's rollout: greedy (temperature 0, one episode
 * per example), the task's check on the episode's final text, rewards seeing the episode; pass@k
 * samples k episodes at the sampling temperature.
 */
import { describe, expect, it } from 'vitest';
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
          oldLogprobs: [0, 0],
          lossMask: [1, 0],
          // The first episode answers right only when sampled (pass@k), the second always.
          text: promptIndex === 1 || settings.temperature > 0 ? String(prompt.example.answer) : 'wrong',
          truncated: false,
          episode: { messages: [], toolCalls: [], turns: 2, turnRewards: [null, null], stopReason: 'stop' },
        })),
      );
    };
    const sawEpisode: RewardFn = ({ episode }) => (episode?.turns === 2 ? 1 : 0);
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
