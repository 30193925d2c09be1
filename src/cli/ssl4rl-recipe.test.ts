/**
 * SSL4RL's recipe (#78, recipes/papers/ssl4rl.ts): the RotationQA rows (PIL's counter-clockwise turn,
 * every angle giving the same pixels a ground truth), the reward as the authors' `compute_score`
 * (verl/utils/reward_score/ssl4rl.py in PKU-ML/SSL4RL), and a run through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rotateCounterClockwise, rotationTask, ssl4rlScore } from '../../recipes/papers/ssl4rl.js';
import { makeRewardInput } from '../rewards/types.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-ssl4rl-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const score = (completion: string, answer: string) =>
  ssl4rlScore(makeRewardInput({ completion, row: { prompt: '', answer } }));

describe('SSL4RL RotationQA', () => {
  it('turns counter-clockwise as PIL rotate: [[a, b], [c, d]] by 90° is [[b, d], [a, c]]', () => {
    const image = {
      width: 2,
      height: 2,
      channels: 3 as const,
      data: Uint8Array.from([1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]),
    };
    const firstChannel = (degrees: number) =>
      Array.from(rotateCounterClockwise(image, degrees).data).filter((_, i) => i % 3 === 0);
    expect(firstChannel(90)).toEqual([2, 4, 1, 3]);
    expect(firstChannel(180)).toEqual([4, 3, 2, 1]);
    expect(firstChannel(270)).toEqual([3, 1, 4, 2]);
    expect(firstChannel(360)).toEqual([1, 2, 3, 4]);
  });

  it('scores as compute_score: the first <answer>, stripped, equal to one comma-separated truth; no format score', () => {
    expect(score('<think>the red square moved up</think> <answer>90</answer>', '90')).toBe(1);
    expect(score('<answer> 180 </answer>', '0,180')).toBe(1);
    expect(score('<answer>90</answer>', '0,180')).toBe(0);
    expect(score('<answer>0</answer> <answer>90</answer>', '90')).toBe(0); // only the first answer counts
    expect(score('90', '90')).toBe(0); // no tags, no answer
    expect(score('<answer>\n270\n</answer>', '270')).toBe(1); // re.DOTALL
  });

  it('rows: images [original, turned], the turn among the truths, each truth turning to the same pixels', () => {
    const rows = rotationTask.trainExamples(200, 1);
    let symmetric = 0;
    for (const row of rows) {
      const [original, turned] = row.images as { width: number; height: number; channels: 3; data: Uint8Array }[];
      const truths = String(row.answer).split(',').map(Number);
      expect(truths).toContain(row.angle);
      for (const truth of truths) expect(rotateCounterClockwise(original, truth).data).toEqual(turned.data);
      if (truths.length > 1) symmetric++;
    }
    expect(symmetric).toBeGreaterThan(0); // an empty or uniform layout looks the same after every turn
    expect(symmetric).toBeLessThan(100);
    const held = new Set(rotationTask.evalExamples(50, 1).map((row) => JSON.stringify(row.images)));
    expect(rows.some((row) => held.has(JSON.stringify(row.images)))).toBe(false);
    expect(rotationTask.isCorrect(rows[0], `<answer>${rows[0].angle}</answer>`)).toBe(true);
  });

  it('trains through grpo train: SFT for the format, then GRPO on the rotation reward', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=10',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/ssl4rl.ts', set, runName: 'rotation', quiet: true })).toBe(
      0,
    );
    const run = join(scratch, 'rotation');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      task: 'ssl4rl-rotation',
      sampling: { groupSize: 5 },
      algorithm: { klCoefficient: 0.01 },
    });
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const steps = lines.filter((line) => 'reward/ssl4rl/mean' in line);
    expect(steps.length).toBe(2);
    for (const line of steps)
      expect([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]).toContain(
        Math.round(line['reward/ssl4rl/mean'] * 10) / 10,
      );
  }, 180_000);
});
