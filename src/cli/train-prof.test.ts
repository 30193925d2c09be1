/**
 * `grpo train --set algorithm.advantage=prof` (PROF #126) on the addition task with a tiny random
 * model: the outcome is a 1/0 regex check for a bare number (groups of a random model mix both),
 * `char-f1` against the answer stands in for the PRM's mean step score and `step-count` counts the
 * steps (always 1 here: the alphabet has no newline, so the length penalty hits all alike), both at
 * weight 0. Every logged response is in the loss exactly when PROF's filter keeps it and has the
 * advantage PROF gives on the step's logged rewards; some responses left the loss.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { profAdvantage } from '../algorithms/index.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-prof-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const names = ['regex', 'char-f1', 'step-count'];
const options = { processReward: 'char-f1', stepReward: 'step-count', removePerGroup: 2, lengthPenalty: 10 };
const run = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=0',
  'grpo.steps=2',
  'grpo.promptsPerStep=4',
  'logging.samplesPerStep=4',
  'grpo.microBatchSize=8',
  'sampling.groupSize=6',
  'sampling.maxNewTokens=4',
  'evaluation.examples=2',
  'checkpoint.every=0',
  `rewards=${JSON.stringify([
    { name: 'regex', weight: 1, options: { pattern: '^\\d+$' } }, // a bare number: 1/0
    { name: 'char-f1', weight: 0, options: { referenceColumn: 'answer' } },
    { name: 'step-count', weight: 0 },
  ])}`,
  'algorithm.advantage=prof',
  `algorithm.advantageOptions=${JSON.stringify(options)}`,
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

interface Logged {
  step: number;
  phase: string;
  completions: { reward: number | null; rewards: Record<string, number | null>; advantage: number; inLoss: boolean }[];
}

describe('grpo train with the prof advantage', () => {
  it('keeps and weighs the responses as PROF’s filter and GRPO do on the logged rewards', async () => {
    expect(await runTrainCommand({ set: run, runName: 'prof', quiet: true })).toBe(0);
    const groups = readFileSync(join(scratch, 'prof', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Logged)
      .filter((record) => record.phase === 'grpo');
    expect(groups.length).toBe(8);
    let dropped = 0;
    let trained = 0;
    for (const step of new Set(groups.map((g) => g.step))) {
      const completions = groups.filter((g) => g.step === step).flatMap((g) => g.completions);
      const result = profAdvantage(
        {
          rewards: completions.map((c) => c.reward),
          groupSizes: 6,
          rewardComponents: names.map((name) => completions.map((c) => c.rewards[name])),
          rewardNames: names,
          rewardWeights: [1, 0, 0],
        },
        options,
      );
      completions.forEach((c, i) => {
        expect(c.inLoss, `step ${step} response ${i}`).toBe(result.keep[i] === 1);
        expect(c.advantage).toBeCloseTo(result.advantages[i], 5);
        if (!c.inLoss) dropped++;
        if (c.inLoss && c.advantage !== 0) trained++;
      });
    }
    expect(dropped, 'responses PROF took out of the loss').toBe(2 * 8);
    expect(trained, 'kept responses with a non-zero advantage').toBeGreaterThan(0);
  }, 120_000);
});
