/**
 * Bench scenario `lora`: full fine-tuning against LoRA (rank 16, alpha 32, every linear layer, as in
 * "LoRA without regret") on the same GRPO optimiser step, for the ~25M random model of
 * bench/generate.ts and a random model with SmolLM2-135M's shape (Llama: hidden 576, 30 layers, 9
 * heads, 3 KV heads, intermediate 1536, vocabulary 49152, tied embeddings, rope theta 100000).
 *
 * Is: `npm run bench -- lora [--json] [--models random-25m,smollm2-135m-shape] [--backend native]
 * [--prompts 4] [--group-size 4] [--prompt-length 32] [--new-tokens 64] [--micro-batch 4]
 * [--steps 2] [--recompute selective|layers|none]`. Each (model, full|lora) case runs in its own child process, so its peak RSS (the
 * kernel's high-water mark, process.resourceUsage().maxRSS) is its own. A case builds the model
 * (seed 7), attaches adapters with trainer/setup.ts's attachLora (rank 16, alpha 32, all-linear, the
 * frozen linears in bfloat16 as baseDtype 'auto' keeps a BF16 checkpoint's, selective recomputation
 * of activations: the lora section's defaults), rolls out G
 * completions for each of P random prompts once (temperature 1, no stop ids, so every completion
 * has `new-tokens` ids; fresh adapters have B = 0, so both cases get the same batch), scores them
 * with a trivial reward (share of even ids) and GRPO advantages, then runs one untimed warm-up
 * `policyStep` (PPO-clip, token-mean, grad clip 1: forward + backward + AdamW) and `--steps` timed
 * ones on that fixed batch. Prints per case the trainable parameters, the bytes that parameters
 * (all, at their width) + gradients + AdamW's two moments (trainable ones, fp32) hold, the RSS after
 * setup, the peak RSS, the rollout seconds (apart) and the mean optimiser-step seconds, wall and CPU
 * (all threads; steadier on a shared machine); per model the ratios LoRA/full of peak RSS (issue
 * 17's target: ≤ 0.40 on the 135M model) and step seconds (target: ≤ 1).
 * Is not: a test, or the trainer loop (no run folder, logging, checkpoints or reference model).
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { advantageEstimators } from '../src/algorithms/index.js';
import { createSmallConfig, type SmallConfigOptions } from '../src/model/config.js';
import { Transformer } from '../src/model/transformer.js';
import { AdamW } from '../src/nn/index.js';
import { generate } from '../src/sampling/sampler.js';
import { getBackend, Random, setBackend } from '../src/tensor/index.js';
import { bindAlgorithm } from '../src/config/algorithm.js';
import { trainerConfigSchema } from '../src/config/config.js';
import { attachLora } from '../src/trainer/setup.js';
import { optimizedParameters, policyStep, stepSettingsOf, trainingBatch } from '../src/trainer/optimize.js';
import { RANDOM_25M_SHAPE, SMOLLM2_135M_SHAPE } from './generate.js';
import { readFlags } from './_flags.js';

const MODELS: Record<string, SmallConfigOptions> = {
  'random-25m': RANDOM_25M_SHAPE,
  'smollm2-135m-shape': SMOLLM2_135M_SHAPE,
};
// baseDtype bfloat16: what 'auto' picks for SmolLM2-135M's own checkpoint, which stores BF16 weights.
const LORA = { rank: 16, alpha: 32, targetModules: 'all-linear', baseDtype: 'bfloat16' };

interface Shape {
  prompts: number;
  groupSize: number;
  promptLength: number;
  newTokens: number;
  microBatch: number;
  steps: number;
  /** model.recomputeActivations of both cases: 'selective' (the default), 'layers' or 'none'. */
  recompute: 'selective' | 'layers' | 'none';
}

interface LoraCase extends Shape {
  model: string;
  mode: 'full' | 'lora';
  backend: string;
}

function parseArguments(argv: string[]): { json: boolean; backend: string; models: string[]; shape: Shape } {
  const { value, positive } = readFlags(argv);
  const models = value('--models', 'random-25m,smollm2-135m-shape').split(',');
  for (const model of models)
    if (!(model in MODELS))
      throw new Error(`--models: unknown model '${model}'; known: ${Object.keys(MODELS).join(', ')}`);
  const shape = {
    prompts: positive('--prompts', '4'),
    groupSize: positive('--group-size', '4'),
    promptLength: positive('--prompt-length', '32'),
    newTokens: positive('--new-tokens', '64'),
    microBatch: positive('--micro-batch', '4'),
    steps: positive('--steps', '2'),
    recompute: value('--recompute', 'selective') as Shape['recompute'],
  };
  if (!['selective', 'layers', 'none'].includes(shape.recompute))
    throw new Error(`--recompute: '${shape.recompute}' is not one of selective, layers, none`);
  if ((shape.prompts * shape.groupSize) % shape.microBatch !== 0)
    throw new Error(
      `--micro-batch: ${shape.microBatch} does not divide the ${shape.prompts * shape.groupSize} completions`,
    );
  return {
    json: argv.includes('--json'),
    backend: value('--backend', process.env.GRPO_BACKEND ?? 'native'),
    models,
    shape,
  };
}

/** One rollout of the fixed batch the timed steps reuse; returns it with the rollout seconds. */
function rollout(model: Transformer, benchCase: LoraCase, seed: number) {
  const random = new Random(seed);
  const prompts = Array.from({ length: benchCase.prompts }, () =>
    Array.from(
      { length: benchCase.promptLength },
      () => 1 + Math.floor(random.uniform() * (model.config.vocabSize - 1)),
    ),
  );
  const start = performance.now();
  const completions = generate(model, {
    prompts,
    numSamples: benchCase.groupSize,
    maxNewTokens: benchCase.newTokens,
    stopTokenIds: [],
    seed,
    temperature: 1,
  });
  const seconds = (performance.now() - start) / 1000;
  const rewards = completions.map((c) => c.ids.filter((id) => id % 2 === 0).length / Math.max(1, c.ids.length));
  const { advantages } = advantageEstimators.get('grpo')({ rewards, groupSizes: benchCase.groupSize });
  const samples = trainingBatch(
    completions.map((c, i) => ({
      promptIds: prompts[c.promptIndex],
      completionIds: c.ids,
      oldLogprobs: c.logprobs,
      advantage: advantages[i],
      group: c.promptIndex,
    })),
  );
  return { samples, seconds };
}

const mebibytes = (bytes: number) => bytes / 2 ** 20;

/** Runs one (model, mode) case in this process and prints its result as one JSON line. */
function runCase(benchCase: LoraCase): void {
  setBackend(benchCase.backend);
  const config = trainerConfigSchema.parse({
    sampling: { groupSize: benchCase.groupSize, maxNewTokens: benchCase.newTokens, temperature: 1 },
    grpo: { promptsPerStep: benchCase.prompts, microBatchSize: benchCase.microBatch },
    algorithm: { loss: 'ppo-clip', aggregation: 'token-mean' },
    model: { recomputeActivations: benchCase.recompute },
    ...(benchCase.mode === 'lora' ? { lora: LORA } : {}),
  });
  const model = Transformer.random(createSmallConfig(MODELS[benchCase.model]), 7);
  if (config.lora) attachLora(model, config.lora, 7, []);
  model.recompute = config.model.recomputeActivations; // as createRunContext sets it
  const trained = optimizedParameters(model);
  const optimizer = new AdamW(trained, {
    learningRate: 1e-5,
    beta1: 0.9,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  const setupRssMiB = mebibytes(process.memoryUsage().rss);
  const size = (tensors: { size: number }[]) => tensors.reduce((total, t) => total + t.size, 0);
  const float32Parameters = size([...model.parameters.values()]);
  const halfParameters = size([...model.halfWeights.values()]);
  const baseParameters = float32Parameters + halfParameters;
  const adapterParameters = model.adapters ? size(model.adapters.namedParameters().map(([, t]) => t)) : 0;
  const trainable = size(trained.map(({ tensor }) => tensor));
  // Weights at their width (bfloat16 base linears 2 bytes, the rest 4), an fp32 gradient per trainable
  // weight, AdamW's fp32 first and second moments.
  const stateBytes = 4 * (float32Parameters + adapterParameters) + 2 * halfParameters + 4 * trainable + 8 * trainable;

  generate(model, { prompts: [[1, 2, 3]], numSamples: 2, maxNewTokens: 4, stopTokenIds: [], seed: 1 }); // JIT warm-up
  const { samples, seconds: rolloutSeconds } = rollout(model, benchCase, 2);
  const bound = bindAlgorithm(config, { sampleRows: [], rolloutProvides: [], rewardNames: [] });
  const settings = stepSettingsOf(config);
  policyStep(bound, settings, model, optimizer, samples); // warm-up: first AdamW step, JIT
  const stepSeconds: number[] = [];
  let loss = 0;
  const cpuStart = process.cpuUsage();
  for (let step = 0; step < benchCase.steps; step++) {
    const start = performance.now();
    loss = policyStep(bound, settings, model, optimizer, samples).metrics['loss/total'];
    stepSeconds.push((performance.now() - start) / 1000);
  }
  const cpu = process.cpuUsage(cpuStart);
  console.log(
    JSON.stringify({
      ...benchCase,
      threads: getBackend().threads,
      parameters: baseParameters + adapterParameters,
      trainableParameters: trainable,
      stateMiB: mebibytes(stateBytes),
      trainTokens: samples.rows.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0),
      rolloutSeconds,
      stepSeconds: stepSeconds.reduce((a, b) => a + b, 0) / stepSeconds.length,
      stepSecondsEach: stepSeconds,
      // CPU seconds of every thread per step: steadier than wall time on a machine shared with other work.
      stepCpuSeconds: (cpu.user + cpu.system) / 1e6 / benchCase.steps,
      setupRssMiB,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      loss,
    }),
  );
  getBackend().dispose();
}

type Line = Record<string, number | string | number[]>;

function reportCase(line: Line): void {
  const fixed = (key: string, digits: number, width: number) => Number(line[key]).toFixed(digits).padStart(width);
  console.log(
    `${String(line.model).padEnd(20)}${String(line.mode).padEnd(6)}${fixed('parameters', 0, 11)}${fixed('trainableParameters', 0, 11)}` +
      `${fixed('stateMiB', 1, 11)}${fixed('setupRssMiB', 0, 11)}${fixed('peakRssMiB', 0, 10)}${fixed('rolloutSeconds', 2, 11)}${fixed('stepSeconds', 2, 9)}${fixed('stepCpuSeconds', 2, 9)}`,
  );
}

/** Runs the scenario; see the file header for flags. */
export async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--child') return runCase(JSON.parse(argv[1]) as LoraCase);
  const settings = parseArguments(argv);
  const runner = join(dirname(fileURLToPath(import.meta.url)), 'run.ts');
  const { prompts, groupSize, promptLength, newTokens, microBatch, steps } = settings.shape;
  if (!settings.json) {
    console.log(
      `batch: ${prompts} prompts × ${groupSize} completions, ${promptLength} prompt + ${newTokens} new tokens each, ` +
        `micro-batch ${microBatch}; mean of ${steps} timed optimiser step(s) after 1 warm-up; backend ${settings.backend}; ` +
        `LoRA rank ${LORA.rank}, alpha ${LORA.alpha}, ${LORA.targetModules}, base ${LORA.baseDtype}, ` +
        `recomputed activations ${settings.shape.recompute}`,
    );
    console.log(
      `${'model'.padEnd(20)}${'mode'.padEnd(6)}${'params'.padStart(11)}${'trainable'.padStart(11)}${'p+g+adam'.padStart(11)}` +
        `${'setup RSS'.padStart(11)}${'peak RSS'.padStart(10)}${'rollout s'.padStart(11)}${'step s'.padStart(9)}${'cpu s'.padStart(9)}   (MiB)`,
    );
  }
  for (const model of settings.models) {
    const results: Partial<Record<'full' | 'lora', Line>> = {};
    for (const mode of ['full', 'lora'] as const) {
      const benchCase: LoraCase = { model, mode, backend: settings.backend, ...settings.shape };
      // A child per case: its RSS high-water mark is then this case's peak memory alone.
      const child = spawnSync(
        process.execPath,
        [...process.execArgv, runner, 'lora', '--child', JSON.stringify(benchCase)],
        {
          encoding: 'utf8',
          env: { ...process.env, GRPO_QUIET: '1' },
          maxBuffer: 1 << 24,
        },
      );
      const lastLine = child.stdout.trim().split('\n').pop() ?? '';
      if (child.status !== 0 || !lastLine.startsWith('{')) {
        console.error(`lora bench: ${model} ${mode} failed (exit ${child.status}):\n${child.stderr}`);
        continue;
      }
      const line = JSON.parse(lastLine) as Line;
      results[mode] = line;
      if (settings.json) console.log(JSON.stringify(line));
      else reportCase(line);
    }
    const { full, lora } = results;
    if (!full || !lora) continue;
    const ratio = (key: string) => Number(lora[key]) / Number(full[key]);
    const comparison = {
      model,
      peakRssRatio: ratio('peakRssMiB'),
      stateRatio: ratio('stateMiB'),
      stepSecondsRatio: ratio('stepSeconds'),
      stepCpuSecondsRatio: ratio('stepCpuSeconds'),
      trainableRatio: ratio('trainableParameters'),
    };
    if (settings.json) console.log(JSON.stringify({ ...comparison, comparison: 'lora/full' }));
    else
      console.log(
        `${model}: LoRA/full peak RSS ${comparison.peakRssRatio.toFixed(3)} (target ≤ 0.40), p+g+adam ${comparison.stateRatio.toFixed(3)}, ` +
          `step s ${comparison.stepSecondsRatio.toFixed(3)} (target ≤ 1), step CPU s ${comparison.stepCpuSecondsRatio.toFixed(3)}, trainable ${(100 * comparison.trainableRatio).toFixed(2)}%`,
      );
  }
}
