/**
 * ReFine-RFT's recipe (#141, recipes/papers/refine-rft.ts): its rule rewards as the authors'
 * reward_func.py (`accuracy_reward`, `think_punishment_reward`, and `accuracy_reward_openai` against a
 * local stand-in endpoint), and SFT then GRPO with the MRN
 * advantage through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  mllmAccuracyPrompt,
  mllmAccuracyScore,
  refineAccuracy,
  refineRftRecipe,
  thinkPunishment,
} from '../../recipes/papers/refine-rft.js';
import { makeRewardInput, type RewardFn } from '../rewards/types.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-refine-rft-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('ReFine-RFT rewards', () => {
  it('accuracy_reward: spaces, underscores and case dropped, either answer inside the other', () => {
    const solution = '<answer>Black_footed Albatross</answer>'; // a CUB class name
    expect(refineAccuracy('<think>x</think><answer>black footed albatross</answer>', solution)).toBe(1);
    expect(refineAccuracy('<answer>Albatross</answer>', solution)).toBe(1); // the answer is inside the label
    expect(refineAccuracy('<answer>Black-footed Albatross</answer>', solution)).toBe(0); // "-" stays
    expect(refineAccuracy('<answer></answer>', solution)).toBe(1); // "" is in every label, as in Python
    expect(refineAccuracy('untagged: black footed albatross', solution)).toBe(1); // the whole text, squeezed, holds the label
    expect(refineAccuracy('a Laysan Albatross', solution)).toBe(0); // "alaysanalbatross": neither holds the other
    expect(refineAccuracy('<answer> A </answer>', '<answer> B </answer>')).toBe(0);
    expect(refineAccuracy('the answer is 0.5', '1/2')).toBe(1); // Math-Verify first
  });

  it('think_punishment_reward: 1 for a stripped <think> under 10 characters, 0 for longer or none', () => {
    expect(thinkPunishment('<think>  3 red  </think><answer>A</answer>')).toBe(1); // "3 red": 5
    expect(thinkPunishment('<think>123456789</think>')).toBe(1); // 9
    expect(thinkPunishment('<think>1234567890</think>')).toBe(0); // 10 is not under 10
    expect(thinkPunishment('<answer>A</answer>')).toBe(0); // no block
  });

  it('accuracy_mllm: their prompt, and the first number of the reply clamped to [0, 10] over 10', () => {
    const prompt = mllmAccuracyPrompt('Boeing 707', '707-320');
    expect(prompt.startsWith('You are a scoring assistant. Based on the similarity')).toBe(true);
    expect(prompt).toContain('\n\n        ---\n        [Example 1]\n');
    expect(
      prompt.endsWith('        Predicted Answer: "Boeing 707"\n        Correct Answer: "707-320"\n        Score:'),
    ).toBe(true);
    expect(mllmAccuracyScore('6')).toBe(0.6);
    expect(mllmAccuracyScore('Score: 7.5 out of 10')).toBe(0.75); // the first number
    expect(mllmAccuracyScore('12')).toBe(1); // clamped
    expect(mllmAccuracyScore('no idea')).toBe(0);
  });

  it('REFINE_RFT_JUDGE=1 adds accuracy-mllm (weight 0.1), asking the endpoint about the answer and the label', async () => {
    const asked: string[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        asked.push(JSON.parse(body).messages[0].content);
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ choices: [{ message: { content: '8' } }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    Object.assign(process.env, {
      REFINE_RFT_JUDGE: '1',
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      JUDGE_MODEL: 'judge',
    });
    try {
      const judge = refineRftRecipe().rewards?.find((reward) => reward.name === 'accuracy-mllm');
      expect(judge?.weight).toBe(0.1);
      const input = makeRewardInput({
        completion: '<think>2</think><answer>B</answer>',
        row: { answer: '<answer> A </answer>' },
      });
      expect(await (judge!.reward as RewardFn)(input)).toBe(0.8);
      expect(asked[0]).toContain('Predicted Answer: "B"\n        Correct Answer: "A"');
      delete process.env.OPENAI_BASE_URL;
      expect(() => refineRftRecipe()).toThrow(/REFINE_RFT_JUDGE=1 needs a judge: set OPENAI_BASE_URL/);
      process.env.REFINE_RFT_JUDGE = 'yes';
      expect(() => refineRftRecipe()).toThrow(/REFINE_RFT_JUDGE=yes: use 1/);
    } finally {
      for (const name of ['REFINE_RFT_JUDGE', 'OPENAI_BASE_URL', 'JUDGE_MODEL']) delete process.env[name];
      server.close();
    }
  });

  it('trains through grpo train: SFT, then GRPO with mrn on format + accuracy + think-punishment', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=16',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const recipe = 'recipes/papers/refine-rft.ts';
    expect(await runTrainCommand({ recipe, set, runName: 'refine-rft', quiet: true })).toBe(0);
    const run = join(scratch, 'refine-rft');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      sampling: { groupSize: 8 },
      algorithm: { advantage: 'mrn', klCoefficient: 0, advantageOptions: { epsilon: 1e-4 } },
    });
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => 'reward/think-punishment/mean' in line);
    expect(steps).toHaveLength(2);
    for (const step of steps) expect(step['reward/accuracy/invalid']).toBe(0);
  }, 180_000);
});
