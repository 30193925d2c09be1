/**
 * Defaults by where the model comes from: the built-in run (`grpo train` with no arguments, a
 * from-scratch model on the addition task) resolves exactly as it did before checkpoint defaults
 * existed (a literal snapshot); `--model DIR` and `GRPOTrainer({ model })` get TRL's defaults
 * (src/config/checkpoint-defaults.ts) under whatever `--set`, a recipe or a preset gives; an
 * unset micro-batch fits a small step, an explicit one that does not fit is still refused.
 * Not here: what the settings do in training (src/trainer tests).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GRPOTrainer, loadRunTask, mergeConfig, resolveConfig } from '../trainer/index.js';
import { applyOverrides, dataFlagOverrides, runTrainCommand, type DataFlags } from './train-command.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-train-defaults-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The config `grpo train [flags] --set …` resolves, composed as runTrainCommand composes it (no recipe). */
async function resolvedByCommand(data: DataFlags, set: string[] = []) {
  const raw = applyOverrides(mergeConfig({}, dataFlagOverrides(data)), set);
  return resolveConfig(raw, [], await loadRunTask(raw));
}

/** `grpo train` with no arguments, resolved before checkpoint defaults were added (commit cd6f305). */
const builtInBefore = {
  task: 'addition',
  taskOptions: {},
  seed: 0,
  model: {
    chatTemplate: 'auto',
    hiddenSize: 64,
    numLayers: 2,
    numHeads: 4,
    initSeed: 0,
    recomputeActivations: 'selective',
    vision: null,
    imageProcessor: {},
  },
  sft: {
    steps: 1500,
    batchSize: 64,
    learningRate: 0.003,
    warmupSteps: 20,
    schedule: 'cosine',
    examples: 4096,
    packLength: 0,
    thoughtDropout: 0, // added with sft.thoughtDropout (off by default: the run is as before)
  },
  sampling: { groupSize: 8, maxNewTokens: 6, temperature: 1, topK: 0, topP: 1, minP: 0 },
  grpo: {
    steps: 200,
    promptsPerStep: 16,
    iterations: 1,
    microBatchSize: 64,
    learningRate: 0.0001,
    warmupSteps: 0,
    schedule: 'constant',
    examples: 4096,
    drawTogether: null, // added with grpo.drawTogether (Co-Reward pairs; off by default: the run is as before)
    groundTruthCompletion: null, // added with TempSamp-R1's injection (off by default: the run is as before)
  },
  algorithm: {
    advantage: 'grpo',
    advantageOptions: {},
    loss: 'ppo-clip',
    lossOptions: {},
    aggregation: 'token-mean',
    klCoefficient: 0,
    klEstimator: 'k3',
    klPlacement: 'loss',
    entropyCoefficient: 0,
    groupFilter: null,
    groupFilterOptions: {},
    maxRefills: 2,
    maskTruncated: false,
    promptSelector: null,
    promptSelectorOptions: {},
    referenceSync: null, // added later, off: the reference stays the policy at GRPO start, as before
    mismatchCorrection: null,
    turnCredit: null,
  },
  optimizer: { beta1: 0.9, beta2: 0.99, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 1, maxSkippedSteps: 5 },
  rewards: [],
  rewardWorkers: { threads: 0, timeoutMs: 30000, memoryMb: 1024 },
  evaluation: { examples: 300, every: 50, passAtK: 0 },
  logging: { runsDirectory: 'runs', samplesEvery: 1, samplesPerStep: 2, printEvery: 10, reportTo: [] },
  checkpoint: { every: 250, keepLast: 2 },
  rollout: { engine: 'local', model: 'grpo-policy', concurrency: 1, timeoutMs: 600000, retries: 3, retryDelayMs: 1000 },
  lora: null,
  agent: null,
};

/** What TRL's GRPOConfig (v1.9.0) and TrainingArguments default to, in our fields. */
const trlDefaults = {
  sampling: { groupSize: 8, maxNewTokens: 256, temperature: 1 },
  grpo: { learningRate: 1e-6, schedule: 'linear', warmupSteps: 0, microBatchSize: 8 },
  optimizer: { beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 1 },
  algorithm: { klCoefficient: 0, aggregation: 'token-mean', advantage: 'grpo', loss: 'ppo-clip', lossOptions: {} },
};

describe('the built-in run (no checkpoint)', () => {
  it('resolves exactly as before', async () => {
    expect(JSON.parse(JSON.stringify(await resolvedByCommand({})))).toEqual(builtInBefore);
  });

  it('fits an unset micro-batch to a step smaller than its 64, and still refuses an explicit one that does not fit', async () => {
    const small = await resolvedByCommand({}, ['grpo.promptsPerStep=4']); // 4 × 8 = 32 completions
    expect(small.grpo.microBatchSize).toBe(32);
    const uneven = await resolvedByCommand({}, ['grpo.promptsPerStep=12']); // 96: 64 does not divide it
    expect(uneven.grpo.microBatchSize).toBe(48);
    await expect(resolvedByCommand({}, ['grpo.promptsPerStep=4', 'grpo.microBatchSize=64'])).rejects.toThrow(
      'grpo.microBatchSize: 64 is larger than the 32 completions of a step',
    );
  });
});

describe('a checkpoint (--model DIR)', () => {
  it("gets TRL's defaults where the user sets nothing", async () => {
    const config = await resolvedByCommand({ model: tinyStoriesModel });
    expect(config).toMatchObject(trlDefaults);
    expect(config.model.checkpoint).toBe(tinyStoriesModel);
  });

  it('lets --set, a recipe config and a preset win over them', async () => {
    const config = await resolvedByCommand({ model: tinyStoriesModel }, [
      'grpo.learningRate=1e-5',
      'sampling.maxNewTokens=32',
      'grpo.schedule=constant',
      'optimizer.beta2=0.99',
      'grpo.microBatchSize=16',
      'preset=grpo',
    ]);
    expect(config.grpo).toMatchObject({ learningRate: 1e-5, schedule: 'constant', microBatchSize: 16 });
    expect(config.sampling.maxNewTokens).toBe(32);
    expect(config.optimizer.beta2).toBe(0.99);
    expect(config.algorithm.klCoefficient).toBe(0.04); // the grpo preset's β
    expect(config.optimizer.beta1).toBe(0.9); // what nobody set stays TRL's
  });

  it('fits the default micro-batch of 8 to a step of 4 completions', async () => {
    const config = await resolvedByCommand({ model: tinyStoriesModel }, [
      'grpo.promptsPerStep=1',
      'sampling.groupSize=4',
    ]);
    expect(config.grpo.microBatchSize).toBe(4);
  });

  it('is what grpo train writes to the run folder', async () => {
    const runName = 'model-flag';
    const set = ['sft.steps=0', 'grpo.steps=0', 'evaluation.examples=1', 'sampling.maxNewTokens=4'];
    expect(
      await runTrainCommand({
        set: [...set, `logging.runsDirectory=${JSON.stringify(scratch)}`],
        runName,
        quiet: true,
        data: { model: tinyStoriesModel },
      }),
    ).toBe(0);
    const written = JSON.parse(readFileSync(join(scratch, runName, 'config.json'), 'utf8'));
    expect(written).toMatchObject({ ...trlDefaults, sampling: { ...trlDefaults.sampling, maxNewTokens: 4 } });
  });

  it('applies to GRPOTrainer({ model }) too', async () => {
    const trainer = new GRPOTrainer({
      model: tinyStoriesModel,
      rewardFunctions: [({ completion }) => completion.length],
      trainDataset: Array.from({ length: 10 }, (_, i) => ({ prompt: `Once upon a time ${i}`, answer: String(i) })),
      config: { grpo: { promptsPerStep: 2 } },
    });
    const { config } = await trainer.prepare();
    expect(config).toMatchObject(trlDefaults);
  });
});
