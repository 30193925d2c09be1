/**
 * `grpo train --set algorithm.advantage=grpo-care` on the addition task with the paper's moving
 * reference (`algorithm.referenceSync {every: 1, mixupAlpha: 0.005}`, β = 0: the run keeps a reference
 * for the estimator alone): every logged advantage equals GRPO-CARE's formula on that group's logged
 * rewards, and its bonus moved some groups away from plain GRPO's. The addition model writes no
 * `<answer>`, so every answer likelihood is exp(0) clamped to 0.95 (the authors' value for a
 * completion without the tag) and the bonus goes to the accurate samples; the likelihoods themselves
 * are checked through a trainer step in src/trainer/step-composition.test.ts. An accuracy reward the
 * run does not score is refused before any compute, naming the field.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { careAdvantage, grpoAdvantage } from '../algorithms/index.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-care-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// As train-trust-grpo.test.ts: an SFT-trained addition model whose groups mix right and wrong answers
// at temperature 1 in groups of 8, scored by char-f1 (partial credit: with 1/0 accuracy the bonus of 0.5·a only
// rescales a group, which leaves its z-scores), plus exact match (the authors sum their rewards).
const run = [
  'sft.steps=600',
  'sampling.temperature=1',
  'grpo.steps=2',
  'grpo.promptsPerStep=4',
  'logging.samplesPerStep=4',
  'grpo.microBatchSize=16',
  'sampling.groupSize=8',
  'sampling.maxNewTokens=5',
  'evaluation.examples=2',
  'checkpoint.every=0',
  'algorithm.klCoefficient=0',
  'algorithm.advantage=grpo-care',
  'algorithm.referenceSync={"every":1,"mixupAlpha":0.005}',
  `rewards=${JSON.stringify([
    { name: 'char-f1', weight: 1, options: { referenceColumn: 'answer' } },
    { name: 'exact-match', weight: 0.5 },
  ])}`,
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

interface Logged {
  phase: string;
  completions: { reward: number | null; rewards: Record<string, number | null>; text: string; advantage: number }[];
}

describe('grpo train with the grpo-care advantage', () => {
  it('logs the advantages of the paper’s formula on the logged rewards', async () => {
    expect(await runTrainCommand({ set: run, runName: 'care', quiet: true })).toBe(0);
    const groups = readFileSync(join(scratch, 'care', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Logged)
      .filter((record) => record.phase === 'grpo');
    expect(groups.length).toBe(8);
    let moved = 0;
    for (const group of groups) {
      const names = ['char-f1', 'exact-match'];
      const input = {
        rewards: group.completions.map((c) => c.reward),
        groupSizes: [group.completions.length],
        rewardComponents: names.map((name) => group.completions.map((c) => c.rewards[name])),
        rewardNames: names,
        rewardWeights: [1, 0.5],
        referenceLogprobs: group.completions.map(() => []),
        tokenTexts: group.completions.map((c) => [c.text]),
      };
      expect(group.completions.every((c) => !c.text.includes('<answer>'))).toBe(true);
      const expected = careAdvantage(input).advantages;
      group.completions.forEach((c, i) => expect(c.advantage).toBeCloseTo(expected[i], 4));
      const plain = grpoAdvantage(input, { epsilon: 1e-4 }).advantages;
      if (expected.some((a, i) => Math.abs(a - plain[i]) > 1e-3)) moved++;
    }
    expect(moved, 'groups whose bonus changed the advantage').toBeGreaterThan(0);
  }, 240_000); // 600 SFT steps and two GRPO steps: under a minute alone, more on a shared machine

  it('is refused before any compute when the accuracy reward is not one of the run’s', async () => {
    const set = [...run, 'algorithm.advantageOptions.accuracyReward=accuracy'];
    await expect(runTrainCommand({ set, runName: 'care-refused', quiet: true })).rejects.toThrow(
      /algorithm\.advantageOptions\.accuracyReward: "accuracy" is not a reward of this run \(rewards: char-f1, exact-match\)/,
    );
    expect(existsSync(join(scratch, 'care-refused', 'metrics.jsonl'))).toBe(false);
  });
});
