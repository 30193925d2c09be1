/**
 * `algorithm.referenceSync` (TRL's sync_ref_model) through `grpo train`: the reference each checkpoint
 * keeps is the one TRL's formula gives from the saved weights — unmoved between syncs, and
 * π_ref ← (1 − α)·π_ref + α·π_θ at every `every`-th GRPO step — and the settings it cannot work with
 * are refused before any model loads, naming the field. (Kill-and-resume with it: trainer/resume.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSafetensors } from '../model/safetensors.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-reference-sync-'));
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
  'checkpoint.every=1',
  'checkpoint.keepLast=5',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

describe('grpo train with algorithm.referenceSync', () => {
  it('keeps the reference of TRL’s formula in each checkpoint', async () => {
    const set = [...tiny, 'algorithm.klCoefficient=0.04', 'algorithm.referenceSync={"every":2,"mixupAlpha":0.25}'];
    expect(await runTrainCommand({ set, runName: 'sync', quiet: true })).toBe(0);
    const checkpoints = join(scratch, 'sync', 'checkpoints');
    const start = readSafetensors(join(checkpoints, 'reference', 'model.safetensors'));
    const kept = (step: number) =>
      readSafetensors(join(checkpoints, `step-${step}`, 'training-state', 'reference.safetensors'));
    const policy = (step: number) => readSafetensors(join(checkpoints, `step-${step}`, 'model.safetensors'));
    let moved = 0;
    for (const [name, tensor] of start) {
      // Step 1 is not a sync step: the reference is the policy at GRPO start, which the policy has left.
      expect(Array.from(kept(1).get(name)!.data)).toEqual(Array.from(tensor.data));
      const theta = policy(2).get(name)!.data;
      const expected = tensor.data.map((r, i) => Math.fround(r * Math.fround(0.75)) + Math.fround(theta[i] * 0.25));
      expect(Array.from(kept(2).get(name)!.data), name).toEqual(Array.from(expected));
      expect(Array.from(kept(3).get(name)!.data)).toEqual(Array.from(expected));
      moved += expected.filter((value, i) => value !== tensor.data[i]).length;
    }
    expect(moved, 'the sync moved the reference').toBeGreaterThan(0);
  });

  it.each([
    [
      ['algorithm.referenceSync={"every":2}'],
      /algorithm\.referenceSync: set, but this run has no reference model to move/,
    ],
    [
      ['algorithm.klCoefficient=0.04', 'algorithm.referenceSync={"every":2}', 'lora={"rank":2}'],
      /algorithm\.referenceSync: a LoRA run's reference is the base model/,
    ],
    [['sync_ref_model=true'], /"sync_ref_model" is TRL's name; here it is algorithm\.referenceSync/],
  ])('refuses %j before any model loads', async (extra, message) => {
    const attempt = runTrainCommand({
      set: [...tiny, ...extra, 'model.checkpoint="/nonexistent/checkpoint"'],
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(message);
    await expect(attempt).rejects.not.toThrow(/nonexistent/);
  });
});
