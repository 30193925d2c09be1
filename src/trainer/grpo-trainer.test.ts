/**
 * GRPOTrainer and SFTTrainer on the TinyStories checkpoint: a TRL-shaped batched reward scored once
 * per step over the whole batch, the callbacks (steps, evaluations, checkpoints) in order, the early
 * stop from onStep, the returned summary; a reward that always throws fails a 2-step run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchedReward, type RewardBatch } from '../rewards/batched.js';
import { GRPOTrainer, SFTTrainer } from './grpo-trainer.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-trainer-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const rows = Array.from({ length: 12 }, (_, i) => ({
  prompt: `Once upon a time there were ${i} cats.`,
  answer: `${i}`,
}));
const small = {
  grpo: { steps: 2, promptsPerStep: 2, microBatchSize: 8 },
  sampling: { groupSize: 4, maxNewTokens: 6 },
  evaluation: { examples: 2 },
  checkpoint: { every: 1 },
};

describe('GRPOTrainer', () => {
  it('trains 2 steps with a batched reward: callbacks fire with the right steps and train() returns the summary', async () => {
    const batches: RewardBatch[] = [];
    const catReward = batchedReward(function mentionsCats(batch) {
      batches.push(batch);
      return batch.completions.map((completion) => (completion.includes('cat') ? 1 : 0));
    });
    const events: string[] = [];
    const trainer = new GRPOTrainer({
      model: tinyStoriesModel,
      rewardFunctions: [catReward],
      trainDataset: rows.slice(2),
      evalDataset: rows.slice(0, 2),
      config: small,
      runDirectory: join(scratch, 'two-steps'),
      quiet: true,
      callbacks: {
        onStep: (metrics) => {
          events.push(`step ${metrics.step} ${metrics.phase}`);
          expect(Object.keys(metrics)).toContain('reward/mentionsCats/mean');
        },
        onEvaluate: (metrics) => void events.push(`eval ${metrics.step}`),
        onCheckpoint: (path) => void events.push(`checkpoint ${path.split('/').pop()}`),
      },
    });
    const summary = await trainer.train();
    expect(summary.steps).toBe(2);
    expect(summary.runDirectory).toBe(join(scratch, 'two-steps'));
    expect(summary.evalBefore?.['eval/accuracy']).toBeTypeOf('number');
    expect(summary.evalAfter?.['eval/accuracy']).toBeTypeOf('number');
    expect(events).toEqual([
      'eval 0',
      'checkpoint step-1',
      'step 1 grpo',
      'checkpoint step-2',
      'step 2 grpo',
      'checkpoint step-2', // the end of the GRPO phase saves step 2 again (atomically replaced)
      'eval 2',
    ]);
    // Called once per step with all 2 × 4 completions; at each evaluation once per answer for
    // correctness (the first reward decides it) and once with both answers for the mean reward.
    expect(batches.map((batch) => batch.completions.length)).toEqual([1, 1, 2, 8, 8, 1, 1, 2]);
    // Columns are lists: answer[i] belongs to completion i.
    const stepBatches = batches.filter((batch) => batch.completions.length === 8);
    expect(stepBatches).toHaveLength(2);
    const [first] = stepBatches;
    expect(first!.prompts).toHaveLength(8);
    expect(first!.completionIds[0]!.length).toBeGreaterThan(0);
    expect(first!.answer).toHaveLength(8);
    expect(String(first!.prompts[0])).toContain(`there were ${String(first!.answer[0])} cats`);
    const status = JSON.parse(readFileSync(join(scratch, 'two-steps', 'summary.json'), 'utf8'));
    expect(status.status).toBe('finished');
    expect(await trainer.evaluate()).toHaveProperty('eval/accuracy');
  });

  it("stops after the step whose onStep returns false (or 'stop'), and still finishes the run", async () => {
    for (const verdict of [false, 'stop'] as const) {
      const seen: number[] = [];
      const trainer = new GRPOTrainer({
        model: tinyStoriesModel,
        rewardFunctions: [(input) => input.completion.length / 10],
        trainDataset: rows,
        config: { ...small, grpo: { ...small.grpo, steps: 5 }, checkpoint: { every: 0 } },
        runDirectory: join(scratch, `early-stop-${verdict}`),
        quiet: true,
        callbacks: { onStep: ({ step }) => (seen.push(step), step === 1 ? verdict : undefined) },
      });
      const summary = await trainer.train();
      expect(seen).toEqual([1]);
      expect(summary.steps).toBe(1);
      expect(summary.evalAfter).not.toBeNull();
      expect(existsSync(join(scratch, `early-stop-${verdict}`, 'checkpoints', 'step-1'))).toBe(true);
      const status = JSON.parse(readFileSync(join(scratch, `early-stop-${verdict}`, 'summary.json'), 'utf8'));
      expect(status.status).toBe('finished');
    }
  });

  it('fails a run (however short) whose rewards all failed, with the reward named', async () => {
    const trainer = new GRPOTrainer({
      model: tinyStoriesModel,
      rewardFunctions: [
        batchedReward(function broken() {
          throw new Error('no judge');
        }),
      ],
      trainDataset: rows,
      isCorrect: () => false, // the default judge is the first reward, which would fail the evaluation first
      config: { ...small, checkpoint: { every: 0 } },
      runDirectory: join(scratch, 'all-failed'),
      quiet: true,
    });
    await expect(trainer.train()).rejects.toThrow(/none of the 2 GRPO steps had a sample with a valid reward/);
    const status = JSON.parse(readFileSync(join(scratch, 'all-failed', 'summary.json'), 'utf8'));
    expect(status.status).toBe('failed');
  });

  it('refuses no rewards, and names trainDataset when its file is missing', async () => {
    expect(() => new GRPOTrainer({ rewardFunctions: [], trainDataset: rows })).toThrow(/rewardFunctions needs/);
    const missing = new GRPOTrainer({ rewardFunctions: [() => 1], trainDataset: join(scratch, 'nope.jsonl') });
    await expect(missing.train()).rejects.toThrow(/^trainDataset .*nope\.jsonl: /);
  });
});

describe('SFTTrainer', () => {
  it('runs only the SFT phase on the rows of a file', async () => {
    const file = join(scratch, 'sft.jsonl');
    writeFileSync(file, rows.map((row) => JSON.stringify({ ...row, completion: ` ${row.answer}` })).join('\n'));
    const phases: string[] = [];
    const trainer = new SFTTrainer({
      model: tinyStoriesModel,
      trainDataset: file,
      config: { sft: { steps: 2, batchSize: 2 }, evaluation: { examples: 2 }, sampling: { maxNewTokens: 4 } },
      runDirectory: join(scratch, 'sft'),
      quiet: true,
      callbacks: { onStep: ({ phase }) => void phases.push(phase) },
    });
    const summary = await trainer.train();
    expect(phases).toEqual(['sft', 'sft']);
    expect(summary.steps).toBe(2);
    await expect(new SFTTrainer({ trainDataset: rows, model: tinyStoriesModel }).prepare()).rejects.toThrow(
      /config\.sft\.steps is 0/,
    );
  });
});
