/**
 * `grpo train --set algorithm.advantage=dcpo` on a random tiny model: the first step's target
 * temperature is the warm one (no update yet: the authors' entropy 0 ≤ H), each update's −mean logπ
 * is kept in trainer state and picks the next step's temperature (a random model's ≈ ln V is far above
 * H = 0.5, so 0.8; with H = 100 it stays 1.2), and the kept value reaches the checkpoint.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-dcpo-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const tiny = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=0',
  'grpo.steps=3',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=3',
  'evaluation.examples=2',
  'algorithm.advantage=dcpo',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

async function train(runName: string, extra: string[]): Promise<Record<string, number>[]> {
  expect(await runTrainCommand({ set: [...tiny, ...extra], runName, quiet: true })).toBe(0);
  return readFileSync(join(scratch, runName, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
    .filter((m) => 'train/samples' in m);
}

describe('grpo train with the dcpo advantage', () => {
  it('warms first, then follows the previous update’s entropy; the entropy reaches the checkpoint', async () => {
    const metrics = await train('dcpo', []);
    expect(metrics.map((m) => m['advantage/logprobTemperature'])).toEqual([1.2, 0.8, 0.8]);
    const entropies = metrics.map((m) => m['loss/sampledNegativeLogprob']);
    expect(entropies.every((e) => e > 0.5)).toBe(true);
    const checkpoints = join(scratch, 'dcpo', 'checkpoints');
    const last = readdirSync(checkpoints).sort().at(-1)!;
    const statePath = join(checkpoints, last, 'trainer-state.json');
    expect(existsSync(statePath)).toBe(true);
    const state = JSON.parse(readFileSync(statePath, 'utf8')) as { extra: { previousEntropy: number } };
    expect(state.extra.previousEntropy).toBeCloseTo(entropies[2], 5); // μ = 1: the one pass's value
  });

  it('stays warm while the entropy is at or below the target', async () => {
    const metrics = await train('dcpo-warm', ['algorithm.advantageOptions.entropyTarget=100', 'grpo.iterations=2']);
    expect(metrics.map((m) => m['advantage/logprobTemperature'])).toEqual([1.2, 1.2, 1.2]);
  });
});
