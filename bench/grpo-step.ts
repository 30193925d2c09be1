/**
 * Bench scenario `grpo-step`: one full GRPO step — rollout of G completions for each of P prompts
 * (KV-cached `generate`, temperature 1, no stop ids so every completion has `new-tokens` ids), a
 * trivial reward (the share of even ids in the completion), GRPO group advantages, and one
 * `policyStep` (PPO-clip ε 0.2, token-mean, grad clip 1, forward + backward + AdamW) — for the
 * tinystories-656k fixture and the ~25M random model of bench/generate.ts, per backend.
 *
 * Is: `npm run bench -- grpo-step [--json] [--backends native,wasm,js] [--models fixture,random-25m]
 * [--prompts 8] [--group-size 8] [--prompt-length 32] [--new-tokens 32] [--micro-batch 64]`.
 * Each (model, backend) runs in its own child process so its peak memory (the kernel's RSS
 * high-water mark, process.resourceUsage().maxRSS) is its own. Prints rollout tokens/s (completion
 * tokens generated / rollout seconds) and training tokens/s (prompt + completion tokens through
 * forward and backward / policyStep seconds), after a small untimed warm-up step. The 25M model is
 * skipped on `js` (plain loops: many minutes per step). bench/reference/grpo_step.py is the same
 * step in PyTorch with the same shapes.
 * Is not: a test, or the trainer loop (no run folder, logging or checkpoints).
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { advantageEstimators } from '../src/algorithms/index.js';
import { loadCheckpoint } from '../src/model/checkpoint.js';
import { createSmallConfig } from '../src/model/config.js';
import { Transformer } from '../src/model/transformer.js';
import { AdamW } from '../src/nn/index.js';
import { generate } from '../src/sampling/sampler.js';
import { getBackend, Random, setBackend } from '../src/tensor/index.js';
import { trainerConfigSchema } from '../src/trainer/config.js';
import { optimizedParameters, policyStep, stepSettingsOf, type TrainingSample } from '../src/trainer/optimize.js';
import { bindAlgorithm } from '../src/trainer/algorithm.js';
import { RANDOM_25M_SHAPE } from './generate.js';
import { readFlags } from './_flags.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;

interface StepCase {
  model: string;
  backend: string;
  prompts: number;
  groupSize: number;
  promptLength: number;
  newTokens: number;
  microBatch: number;
}

function parseArguments(argv: string[]): {
  json: boolean;
  backends: string[];
  models: string[];
  shape: Omit<StepCase, 'model' | 'backend'>;
} {
  const { value, positive } = readFlags(argv);
  const models = value('--models', 'fixture,random-25m').split(',');
  for (const model of models)
    if (model !== 'fixture' && model !== 'random-25m')
      throw new Error(`--models: unknown model '${model}'; known: fixture, random-25m`);
  const shape = {
    prompts: positive('--prompts', '8'),
    groupSize: positive('--group-size', '8'),
    promptLength: positive('--prompt-length', '32'),
    newTokens: positive('--new-tokens', '32'),
    microBatch: positive('--micro-batch', '64'),
  };
  if ((shape.prompts * shape.groupSize) % shape.microBatch !== 0)
    throw new Error(
      `--micro-batch: ${shape.microBatch} does not divide the ${shape.prompts * shape.groupSize} completions`,
    );
  return {
    json: argv.includes('--json'),
    backends: value('--backends', process.env.GRPO_BACKEND ?? 'native,wasm,js').split(','),
    models,
    shape,
  };
}

function loadModel(name: string): Transformer {
  if (name === 'fixture') {
    const checkpoint = loadCheckpoint(FIXTURE);
    return Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  }
  return Transformer.random(createSmallConfig(RANDOM_25M_SHAPE), 7);
}

/** Rollout → reward → advantages → policyStep; returns the two phases' seconds and token counts. */
function grpoStep(model: Transformer, optimizer: AdamW, stepCase: StepCase, seed: number) {
  const config = trainerConfigSchema.parse({
    sampling: { groupSize: stepCase.groupSize, maxNewTokens: stepCase.newTokens, temperature: 1 },
    grpo: { promptsPerStep: stepCase.prompts, microBatchSize: stepCase.microBatch },
    algorithm: { loss: 'ppo-clip', aggregation: 'token-mean' },
  });
  const random = new Random(seed);
  const prompts = Array.from({ length: stepCase.prompts }, () =>
    Array.from(
      { length: stepCase.promptLength },
      () => 1 + Math.floor(random.uniform() * (model.config.vocabSize - 1)),
    ),
  );
  let start = performance.now();
  const completions = generate(model, {
    prompts,
    numSamples: stepCase.groupSize,
    maxNewTokens: stepCase.newTokens,
    stopTokenIds: [],
    seed,
    temperature: 1,
  });
  const rolloutSeconds = (performance.now() - start) / 1000;
  start = performance.now();
  const rewards = completions.map((c) => c.ids.filter((id) => id % 2 === 0).length / Math.max(1, c.ids.length));
  const { advantages } = advantageEstimators.get('grpo')({ rewards, groupSizes: stepCase.groupSize });
  const samples: TrainingSample[] = completions.map((c, i) => ({
    promptIds: prompts[c.promptIndex],
    completionIds: c.ids,
    oldLogprobs: c.logprobs,
    advantage: advantages[i],
    group: c.promptIndex,
  }));
  const rewardSeconds = (performance.now() - start) / 1000;
  start = performance.now();
  const bound = bindAlgorithm(config, { sampleRows: [], rolloutProvides: [] });
  const outcome = policyStep(bound, stepSettingsOf(config), model, optimizer, samples);
  const trainSeconds = (performance.now() - start) / 1000;
  const rolloutTokens = completions.reduce((total, c) => total + c.ids.length, 0);
  const trainTokens = samples.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
  return {
    rolloutSeconds,
    rewardSeconds,
    trainSeconds,
    rolloutTokens,
    trainTokens,
    loss: outcome.metrics['loss/total'],
  };
}

/** Runs one (model, backend) case in this process and prints its result as one JSON line. */
function runCase(stepCase: StepCase): void {
  setBackend(stepCase.backend);
  const model = loadModel(stepCase.model);
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: 1e-5,
    beta1: 0.9,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  grpoStep(model, optimizer, { ...stepCase, prompts: 1, groupSize: 2, newTokens: 4, microBatch: 2 }, 1); // JIT warm-up
  const step = grpoStep(model, optimizer, stepCase, 2);
  const parameters = [...model.parameters.values()].reduce((total, p) => total + p.size, 0);
  console.log(
    JSON.stringify({
      ...stepCase,
      threads: getBackend().threads,
      parameters,
      rolloutTokens: step.rolloutTokens,
      rolloutSeconds: step.rolloutSeconds,
      rolloutTokensPerSecond: step.rolloutTokens / step.rolloutSeconds,
      trainTokens: step.trainTokens,
      trainSeconds: step.trainSeconds,
      trainTokensPerSecond: step.trainTokens / step.trainSeconds,
      rewardSeconds: step.rewardSeconds,
      stepSeconds: step.rolloutSeconds + step.rewardSeconds + step.trainSeconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      loss: step.loss,
    }),
  );
  getBackend().dispose();
}

function report(line: Record<string, number | string>, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(line));
    return;
  }
  const number = (key: string, digits = 0) => Number(line[key]).toFixed(digits);
  console.log(
    `${String(line.model).padEnd(11)}${String(line.backend).padEnd(8)}${number('rolloutTokensPerSecond').padStart(10)}${number('rolloutSeconds', 2).padStart(9)}` +
      `${number('trainTokensPerSecond').padStart(10)}${number('trainSeconds', 2).padStart(9)}${number('peakRssMiB').padStart(10)}`,
  );
}

/** Runs the scenario; see the file header for flags. */
export async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--child') return runCase(JSON.parse(argv[1]) as StepCase);
  const settings = parseArguments(argv);
  const runner = join(dirname(fileURLToPath(import.meta.url)), 'run.ts');
  if (!settings.json)
    console.log(`${'model'.padEnd(11)}${'backend'.padEnd(8)}rollout/s rollout s   train/s  train s  peak MiB`);
  for (const backend of settings.backends) {
    for (const model of settings.models) {
      if (backend === 'js' && model === 'random-25m') {
        console.error('grpo-step bench: random-25m skipped on js (plain loops take many minutes per step)');
        continue;
      }
      const stepCase: StepCase = { model, backend, ...settings.shape };
      // A child per case: its RSS high-water mark is then this case's peak memory alone.
      const child = spawnSync(
        process.execPath,
        [...process.execArgv, runner, 'grpo-step', '--child', JSON.stringify(stepCase)],
        {
          encoding: 'utf8',
          env: { ...process.env, GRPO_QUIET: '1' },
          maxBuffer: 1 << 24,
        },
      );
      const lastLine = child.stdout.trim().split('\n').pop() ?? '';
      if (child.status !== 0 || !lastLine.startsWith('{')) {
        console.error(`grpo-step bench: ${model} on ${backend} failed (exit ${child.status}):\n${child.stderr}`);
        continue;
      }
      report(JSON.parse(lastLine) as Record<string, number | string>, settings.json);
    }
  }
}
