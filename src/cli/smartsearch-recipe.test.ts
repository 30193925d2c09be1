/**
 * SmartSearch's recipe (#164, recipes/papers/smartsearch.ts) end to end through `grpo train` at a
 * tiny size: SFT on the teacher's episodes, two GRPO steps of multi-turn search episodes whose calls
 * the environment scores, with the `smartsearch` reward logged. And the teacher's episodes scored
 * through the recipe's environment and reward: a clean episode gets 1, one with a bare-name or
 * repeated first query gets one query scored 0 and 1 − γ.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';
import type { ToolCallRecord } from '../agents/types.js';
import { createReward } from '../rewards/factories.js';
import { makeRewardInput, type RewardFn } from '../rewards/types.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/smartsearch.ts');
const { runs, grpo } = inProcessCli('grpo-smartsearch-');

describe('recipes/papers/smartsearch.ts', () => {
  it('runs SFT and two GRPO steps of scored search episodes with the smartsearch reward through grpo train', async () => {
    const tiny = tinyRunFlags(runs);
    await grpo('train', recipe, '--run-name', 'smartsearch', ...tiny);
    const steps = grpoStepRecords(runs, 'smartsearch');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/smartsearch/invalid']).toBe(0);
      const mean = step['reward/smartsearch/mean'] as number;
      // Eq. 17 with γ 0.2, φ_min 0.5, φ_max 0.3 keeps every score in [0, 1].
      expect(mean).toBeGreaterThanOrEqual(0);
      expect(mean).toBeLessThanOrEqual(1);
      expect(step['turns/mean']).toBeGreaterThanOrEqual(1);
    }
    const config = JSON.parse(readFileSync(join(runs, 'smartsearch', 'config.json'), 'utf8'));
    expect(config.rewards[0]).toEqual({
      name: 'smartsearch',
      weight: 1,
      options: { gamma: 0.2, phiMin: 0.5, phiMax: 0.3 },
    });
  });

  it("fits the teacher's episodes: every turn within sampling.maxNewTokens, every episode within the agent budget", async () => {
    const { default: loaded, task } = await import(recipe);
    const texts: string[] = task
      .trainExamples(300, 1)
      .flatMap((row: unknown) => [0.1, 0.9].map((d) => task.demonstration(row, () => d)));
    const turns = texts.flatMap((text) => text.split(/<eos>\nR:[^\n]*\n[^\n]*\nA:/));
    // One character per token; the end-of-turn token is one more.
    expect(Math.max(...turns.map((turn) => turn.length)) + 1).toBeLessThanOrEqual(loaded.config.sampling.maxNewTokens);
    expect(Math.max(...texts.map((text) => text.length))).toBeLessThanOrEqual(loaded.config.agent.maxEpisodeTokens);
  });

  it("scores the teacher's episodes: clean 1, a bare-name or repeated first query 1 − γ = 0.8", async () => {
    const { default: loaded, task } = await import(recipe);
    const reward = createReward('smartsearch', { gamma: 0.2, phiMin: 0.5, phiMax: 0.3 }) as RewardFn;
    const search = (await loaded.environment({}, { seed: 0, episodeIndex: 0 })).tools[0];
    const signal = new AbortController().signal;
    const scored: number[] = [];
    for (const row of task.trainExamples(40, 2)) {
      for (const draws of [[0.9], [0.1, 0.9], [0.1, 0.1]]) {
        const queue = [...draws];
        const text: string = task.demonstration(row, () => queue.shift() ?? 0.9);
        const queries = [...text.matchAll(/"query": "([^"]+)"/g)].map((match) => match[1]!);
        const calls: ToolCallRecord[] = queries.map((query, turn) => ({
          name: 'search',
          arguments: { query },
          turn,
          result: String(search.run({ query }, { signal })),
          milliseconds: 0,
        }));
        const environment = await loaded.environment(row, { seed: 0, episodeIndex: 0 });
        const scores = await environment.scoreToolCalls(calls);
        const toolCalls = calls.map((call, index) => ({ ...call, reward: scores[index] }));
        const episode = { messages: [], toolCalls, turns: calls.length + 1, turnRewards: [], stopReason: 'stop' };
        const value = await reward(
          makeRewardInput({ completion: `<answer>${String(row.answer)}</answer>`, row, episode }),
        );
        expect(task.isCorrect(row, text)).toBe(true);
        if (queries.length === 1) {
          expect(scores).toEqual([1]);
          expect(value).toBe(1);
        } else {
          // The bare name found the other person ([0, 1]), or the right one, so the good query after it
          // retrieved the same document again ([1, 0], redundant); a repeated query is redundant too.
          expect(scores[0]! + scores[1]!).toBe(1);
          if (queries[0] === queries[1]) expect(scores).toEqual([1, 0]);
          expect(value).toBeCloseTo(0.8, 12);
        }
        scored.push(value as number);
      }
    }
    expect(scored.filter((value) => value === 1)).toHaveLength(40);
  });

  it("usefulnessJudge sends the paper's scoring prompt to an endpoint and reads <answer>0|1</answer>", async () => {
    const { usefulnessJudge, parseUsefulness, task } = await import(recipe);
    const prompts: string[] = [];
    const replies = ['<answer> 1 </answer> <explanation>the actor</explanation>', 'Score: 1', '<answer>0</answer>'];
    const server = createServer((request, response) => {
      let raw = '';
      request.on('data', (chunk) => (raw += chunk));
      request.on('end', () => {
        prompts.push(JSON.parse(raw).messages[0].content);
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: replies.shift() } }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
      const judge = usefulnessJudge({ baseUrl, model: 'judge', backoffMs: 1 });
      const [row] = task.trainExamples(1, 2);
      const call = { name: 'search', arguments: { query: 'Mira actor' }, turn: 0, result: '[1] x', milliseconds: 0 };
      expect(await judge({ row, call, history: [call] })).toBe(1);
      // A reply without <answer>0|1</answer> is refused and asked again.
      expect(await judge({ row, call, history: [call] })).toBe(0);
      expect(prompts).toHaveLength(3);
      expect(prompts[0]).toContain(`### User's question ${String(row.prompt)}`);
      expect(prompts[0]).toContain(`### Golden answer ${String(row.answer)}`);
      expect(prompts[0]).toContain('<search> Mira actor </search> <result> [1] x </result>');
      expect(prompts[0]).toContain('the score for the query should be 0');
      expect(() => parseUsefulness('<answer>2</answer>')).toThrow(/no <answer>0\|1<\/answer>/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
