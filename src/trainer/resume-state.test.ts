/**
 * Per-prompt state survives a resume: a run with the vade prompt selector (Beta posteriors) and the
 * single-stream estimator (SPO's value tracker) and KL in the reward, stopped by a failing rollout
 * after its first checkpoint and resumed in a fresh context, ends with the same metrics, posteriors,
 * tracker and weights as the same run left alone.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunContext, resolveConfig, singleTurnRollout, train, type RolloutFn } from './index.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-resume-state-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const config = resolveConfig({
  model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
  sft: { steps: 0 },
  grpo: { steps: 3, promptsPerStep: 4, microBatchSize: 8, learningRate: 0.01 },
  sampling: { groupSize: 4, maxNewTokens: 4 },
  evaluation: { examples: 8 },
  checkpoint: { every: 1, keepLast: 5 },
  logging: { samplesEvery: 1 },
  algorithm: {
    advantage: 'single-stream',
    promptSelector: 'vade',
    promptSelectorOptions: { candidates: 64 },
    klCoefficient: 0.1,
    klPlacement: 'reward',
  },
});

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
const metrics = (run: string) =>
  readFileSync(join(run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(record).filter(([key]) => !/^time\/|^tokensPerSecond$/.test(key)));
    });

describe('resumable per-prompt state', () => {
  it('posteriors and value tracker are checkpointed and a resumed run equals an uninterrupted one', async () => {
    const whole = join(scratch, 'whole');
    await train(createRunContext(config), { runDirectory: whole, quiet: true });

    const broken = join(scratch, 'broken');
    let calls = 0;
    const failsOnSecondStep: RolloutFn = async (context, prompts, settings) => {
      if (++calls === 2) throw new Error('rollout engine went away');
      return singleTurnRollout(context, prompts, settings);
    };
    await expect(
      train(createRunContext(config), { runDirectory: broken, quiet: true, rollout: failsOnSecondStep }),
    ).rejects.toThrow(/went away/);
    const saved = readJson(join(broken, 'checkpoints', 'step-1', 'trainer-state.json'));
    expect(Object.keys(saved.extra.promptPosteriors).length).toBe(4);
    expect(Object.keys(saved.extra.valueTracker).length).toBe(4);

    await train(createRunContext(config), { runDirectory: broken, quiet: true, resume: true });
    expect(metrics(broken)).toEqual(metrics(whole));
    const final = (run: string) => readJson(join(run, 'checkpoints', 'step-3', 'trainer-state.json')).extra;
    expect(final(broken)).toEqual(final(whole));
    expect(Object.keys(final(whole).promptPosteriors).length).toBeGreaterThan(4); // later steps chose other prompts too
    const weights = (run: string) => readFileSync(join(run, 'checkpoints', 'step-3', 'model.safetensors'));
    expect(weights(broken).equals(weights(whole))).toBe(true);
  });
});
