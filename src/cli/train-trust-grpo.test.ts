/**
 * `grpo train --set algorithm.advantage=trust-grpo` on the addition task, its thinking reward an
 * `llm-judge` (as the paper's) served by a scripted OpenAI-compatible judge on 127.0.0.1 whose
 * score depends on the text it reads: every logged advantage equals Trust-GRPO's formula applied to
 * that sample's logged rewards at its GRPO step, and the thinking reward moved some of them away
 * from plain GRPO's; a thinking reward the run does not score is refused before any compute,
 * naming the field.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpoAdvantage, trustAdvantage } from '../algorithms/index.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-trust-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// The judge: "Score: k", k = the sum of the character codes of what it was asked to judge, mod 11.
let judge: Server;
let judgeUrl = '';
beforeAll(async () => {
  judge = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      const asked = (JSON.parse(raw) as { messages: { content: string }[] }).messages.at(-1)!.content;
      const score = [...asked].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 11;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `Score: ${score}` } }] }));
    });
  });
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve));
  judgeUrl = `http://127.0.0.1:${(judge.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => judge.close(() => resolve())));
const rewards = () =>
  `rewards=${JSON.stringify([
    { name: 'char-f1', weight: 1, options: { referenceColumn: 'answer' } },
    {
      name: 'llm-judge',
      weight: 0,
      options: { baseUrl: judgeUrl, model: 'thinking-judge', rubric: 'Judge the reasoning.' },
    },
  ])}`;

// The addition task's default model, SFT-trained so that at temperature 0.7 groups mix right and
// wrong answers (train-paper-rewards.test.ts uses the same run). The outcome is char-f1 against the
// answer, a partial credit: with a 1/0 outcome and right answers all the same text (so the same
// judge score), the thinking reward would shift each group by a constant and leave its z-scores.
const run = [
  'sft.steps=600',
  'sampling.temperature=0.7',
  'grpo.steps=2',
  'grpo.promptsPerStep=4',
  'logging.samplesPerStep=4',
  'grpo.microBatchSize=16',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=5',
  'evaluation.examples=2',
  'checkpoint.every=0',
  'algorithm.advantage=trust-grpo',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

interface Logged {
  step: number;
  completions: { reward: number | null; rewards: Record<string, number | null>; advantage: number }[];
}

describe('grpo train with the trust-grpo advantage', () => {
  it('logs the advantages of the paper’s formula on the logged rewards', async () => {
    const set = [...run, rewards(), 'algorithm.advantageOptions.thinkingReward=llm-judge'];
    expect(await runTrainCommand({ set, runName: 'trust', quiet: true })).toBe(0);
    const groups = readFileSync(join(scratch, 'trust', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Logged & { phase: string })
      .filter((record) => record.phase === 'grpo');
    const steps = [...new Set(groups.map((g) => g.step))];
    expect(groups.length).toBe(8);
    let moved = 0;
    for (const group of groups) {
      const input = {
        rewards: group.completions.map((c) => c.reward),
        groupSizes: [group.completions.length],
        rewardComponents: ['char-f1', 'llm-judge'].map((name) => group.completions.map((c) => c.rewards[name])),
        rewardNames: ['char-f1', 'llm-judge'],
        rewardWeights: [1, 0],
        step: steps.indexOf(group.step),
      };
      const expected = trustAdvantage(input, { thinkingReward: 'llm-judge' }).advantages;
      group.completions.forEach((c, i) => expect(c.advantage).toBeCloseTo(expected[i], 5));
      const plain = grpoAdvantage(input).advantages;
      if (expected.some((a, i) => Math.abs(a - plain[i]) > 1e-3)) moved++;
    }
    expect(moved, 'groups whose thinking reward changed the advantage').toBeGreaterThan(0);
  }, 240_000); // 600 SFT steps and two GRPO steps: under a minute alone, more on a shared machine

  it('is refused before any compute when the thinking reward is not one of the run’s', async () => {
    const set = [...run, rewards(), 'algorithm.advantageOptions.thinkingReward=judge'];
    await expect(runTrainCommand({ set, runName: 'trust-refused', quiet: true })).rejects.toThrow(
      /algorithm\.advantageOptions\.thinkingReward: "judge" is not a reward of this run \(rewards: char-f1, llm-judge\)/,
    );
    expect(existsSync(join(scratch, 'trust-refused', 'metrics.jsonl'))).toBe(false);
  });
});
