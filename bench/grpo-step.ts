/**
 * Bench scenario `grpo-step`: one full GRPO step — rollout of G completions for each of P prompts
 * (KV-cached `generate`, temperature 1, no stop ids so every completion has `new-tokens` ids), a
 * trivial reward (the share of even ids in the completion), GRPO group advantages, and one
 * `policyStep` (PPO-clip ε 0.2, token-mean, grad clip 1, forward + backward + AdamW) — for the
 * tinystories-656k fixture, the ~25M random model of bench/generate.ts and a random model with
 * SmolLM2-135M's shape, per backend, next to the same step in PyTorch (bench/reference/grpo_step.py)
 * run in the same window with the same options.
 *
 * Is: `npm run bench -- grpo-step [--json] [--backends native,wasm,js]
 * [--models fixture,random-25m,smollm2-135m-shape,qwen2.5-0.5b-shape] [--shapes 32x32,64x128] [--prompts 8]
 * [--group-size 8] [--micro-batch 64] [--recompute selective|layers|none] [--threads 2] [--pytorch-threads 1,2|none]`; --threads lists our
 * thread counts (GRPO_THREADS of each case), --pytorch-threads PyTorch's. A shape is
 * `<prompt length>x<new tokens>`. Each case (ours per backend, PyTorch per thread count) runs in its
 * own child process so its peak memory (the kernel's RSS high-water mark) is its own. Prints rollout
 * tokens/s (completion tokens / rollout seconds), training tokens/s (prompt + completion tokens
 * through forward and backward / policyStep seconds) and whole-step tokens/s (completion tokens /
 * step seconds), after an untimed warm-up step of the same shape (PyTorch's too), and every figure
 * as a ratio to something measured in this run (bench/peak: an FMA loop and a streaming read, both threads, before and after
 * the cases; the larger reading counts):
 * - train %fma: training model FLOPs (3 × forward: 2 per weight per token, 4·Hq·D per visible key
 *   per layer, the lm_head on the completion rows) per second / FMA peak;
 * - rollout %roof: the rollout's roofline seconds / its measured seconds, where the roofline of the
 *   prefill is its FLOPs at the FMA peak and of each decode step the larger of its FLOPs at the FMA
 *   peak and its memory traffic (every weight once, the shared prompt's K/V once per group, each row's
 *   own K/V) at the read bandwidth;
 * - ×torch: our whole-step tokens/s / PyTorch's best (fastest thread count) on the same model and
 *   shape; mem ×torch: our peak RSS / that PyTorch run's; and below the table, per model and shape,
 *   the ceiling: PyTorch's best step seconds / (training FLOPs at the FMA peak + the rollout's
 *   roofline seconds), the ×torch no implementation could exceed on this machine;
 * - cpu s: the process CPU time (all threads, user + system) of the timed step (rolloutCpuSeconds: of
 *   its rollout, in --json), beside the wall seconds: on a loaded machine the CPU seconds move less
 *   than the wall ones; cpu×torch: that PyTorch run's CPU seconds / ours (a waiting thread that spins
 *   counts, so it is a cost, not a speed).
 * PyTorch runs under $GRPO_TORCH_PYTHON (default /usr/bin/python3, Debian's, which has torch; the
 * python3 on PATH may not), checked before any case runs; the reference itself refuses to run torch
 * on the reference BLAS (see its header) and reports the BLAS it used and its 1024³ GFLOP/s.
 * The 25M and 135M models are skipped on `js` (plain loops: many minutes per step).
 * Is not: a test, or the trainer loop (no run folder, logging or checkpoints).
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { advantageEstimators } from '../src/algorithms/index.js';
import { loadCheckpoint } from '../src/model/checkpoint.js';
import { createSmallConfig, type ModelConfig } from '../src/model/config.js';
import { Transformer } from '../src/model/transformer.js';
import { AdamW } from '../src/nn/index.js';
import { generate } from '../src/sampling/sampler.js';
import { getBackend, Random, setBackend } from '../src/tensor/index.js';
import { trainerConfigSchema } from '../src/config/config.js';
import { optimizedParameters, policyStep, stepSettingsOf, trainingBatch } from '../src/trainer/optimize.js';
import { bindAlgorithm } from '../src/config/algorithm.js';
import { QWEN25_05B_SHAPE, RANDOM_25M_SHAPE, SMOLLM2_135M_SHAPE } from './generate.js';
import { measurePeak, type MachinePeak } from './peak/peak.js';
import { readFlags } from './_flags.js';
import { rolloutRooflineSeconds, trainFlops } from './step-roofline.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;
const REFERENCE = new URL('./reference/grpo_step.py', import.meta.url).pathname;
const TORCH_PYTHON = process.env.GRPO_TORCH_PYTHON ?? '/usr/bin/python3';
const MODELS = ['fixture', 'random-25m', 'smollm2-135m-shape', 'qwen2.5-0.5b-shape'];
const SHAPES: Record<string, Parameters<typeof createSmallConfig>[0]> = {
  'random-25m': RANDOM_25M_SHAPE,
  'smollm2-135m-shape': SMOLLM2_135M_SHAPE,
  'qwen2.5-0.5b-shape': QWEN25_05B_SHAPE,
};

export interface StepCase {
  model: string;
  backend: string;
  prompts: number;
  groupSize: number;
  promptLength: number;
  newTokens: number;
  microBatch: number;
  /** model.recomputeActivations: what the training forward keeps for backward (default 'selective', as `grpo train`). */
  recompute: 'selective' | 'layers' | 'none';
}

type Result = Record<string, number | string>;

function parseArguments(argv: string[]) {
  const { value, positive } = readFlags(argv);
  const models = value('--models', 'fixture,random-25m').split(',');
  for (const model of models)
    if (!MODELS.includes(model)) throw new Error(`--models: unknown model '${model}'; known: ${MODELS.join(', ')}`);
  const shapes = value('--shapes', '32x32,64x128')
    .split(',')
    .map((text) => {
      const [promptLength, newTokens] = text.split('x').map(Number);
      if (!(Number.isInteger(promptLength) && promptLength > 0 && Number.isInteger(newTokens) && newTokens > 0))
        throw new Error(`--shapes: '${text}' is not <prompt length>x<new tokens> with positive integers`);
      return { promptLength, newTokens };
    });
  const batch = {
    prompts: positive('--prompts', '8'),
    groupSize: positive('--group-size', '8'),
    microBatch: positive('--micro-batch', '64'),
    recompute: value('--recompute', 'selective') as StepCase['recompute'],
  };
  if (!['selective', 'layers', 'none'].includes(batch.recompute))
    throw new Error(`--recompute: '${batch.recompute}' is not one of selective, layers, none`);
  if ((batch.prompts * batch.groupSize) % batch.microBatch !== 0)
    throw new Error(
      `--micro-batch: ${batch.microBatch} does not divide the ${batch.prompts * batch.groupSize} completions`,
    );
  const torchThreads = value('--pytorch-threads', '1,2');
  const threads = readFlags(argv).positiveList('--threads', '2');
  return {
    json: argv.includes('--json'),
    backends: value('--backends', process.env.GRPO_BACKEND ?? 'native,wasm,js').split(','),
    threads,
    models,
    shapes,
    batch,
    pytorchThreads: torchThreads === 'none' ? [] : torchThreads.split(',').map(Number),
  };
}

function loadModel(name: string): Transformer {
  if (name === 'fixture') {
    // bench/gpu/check.ts, bundled elsewhere, names where the fixture was carried.
    const checkpoint = loadCheckpoint(process.env.GRPO_BENCH_FIXTURE ?? FIXTURE);
    return Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  }
  return Transformer.random(createSmallConfig(SHAPES[name]), 7);
}

/** Rollout → reward → advantages → policyStep; returns the two phases' seconds and token counts. */
function grpoStep(model: Transformer, optimizer: AdamW, stepCase: StepCase, seed: number) {
  const config = trainerConfigSchema.parse({
    sampling: { groupSize: stepCase.groupSize, maxNewTokens: stepCase.newTokens, temperature: 1 },
    grpo: { promptsPerStep: stepCase.prompts, microBatchSize: stepCase.microBatch },
    algorithm: { loss: 'ppo-clip', aggregation: 'token-mean' },
    model: { recomputeActivations: stepCase.recompute },
  });
  model.recompute = config.model.recomputeActivations; // as createRunContext sets it
  const random = new Random(seed);
  const prompts = Array.from({ length: stepCase.prompts }, () =>
    Array.from(
      { length: stepCase.promptLength },
      () => 1 + Math.floor(random.uniform() * (model.config.vocabSize - 1)),
    ),
  );
  const cpuStart = process.cpuUsage();
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
  const rolloutCpu = process.cpuUsage(cpuStart);
  start = performance.now();
  const rewards = completions.map((c) => c.ids.filter((id) => id % 2 === 0).length / Math.max(1, c.ids.length));
  const { advantages } = advantageEstimators.get('grpo')({ rewards, groupSizes: stepCase.groupSize });
  const samples = trainingBatch(
    completions.map((c, i) => ({
      promptIds: prompts[c.promptIndex],
      completionIds: c.ids,
      oldLogprobs: c.logprobs,
      advantage: advantages[i],
      group: c.promptIndex,
    })),
  );
  const rewardSeconds = (performance.now() - start) / 1000;
  start = performance.now();
  const bound = bindAlgorithm(config, { sampleRows: [], rolloutProvides: [], rewardNames: [] });
  const outcome = policyStep(bound, stepSettingsOf(config), model, optimizer, samples);
  const trainSeconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const rolloutTokens = completions.reduce((total, c) => total + c.ids.length, 0);
  const trainTokens = samples.rows.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
  return {
    rolloutSeconds,
    rewardSeconds,
    trainSeconds,
    rolloutTokens,
    trainTokens,
    loss: outcome.metrics['loss/total'],
    stepCpuSeconds: (cpu.user + cpu.system) / 1e6,
    rolloutCpuSeconds: (rolloutCpu.user + rolloutCpu.system) / 1e6,
  };
}

/** Runs one (model, backend) case in this process and prints its result as one JSON line. */
export function runCase(stepCase: StepCase): void {
  setBackend(stepCase.backend);
  const model = loadModel(stepCase.model);
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: 1e-5,
    beta1: 0.9,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  // Warm-up of the same shape: the timed step is then a run's steady state (JIT-compiled batch-64 paths, warm heap).
  grpoStep(model, optimizer, stepCase, 1);
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
      stepCpuSeconds: step.stepCpuSeconds,
      rolloutCpuSeconds: step.rolloutCpuSeconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
      loss: step.loss,
    }),
  );
  getBackend().dispose();
}

function modelConfig(name: string): ModelConfig {
  if (name === 'fixture') return loadCheckpoint(FIXTURE).config;
  return createSmallConfig(SHAPES[name]);
}

/** Runs `args` as a child whose last stdout line is one JSON result, or reports why it failed. */
function runChild(label: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): Result | undefined {
  const child = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, GRPO_QUIET: '1', ...env },
    maxBuffer: 1 << 24,
  });
  const lastLine = child.stdout?.trim().split('\n').pop() ?? '';
  if (child.status !== 0 || !lastLine.startsWith('{')) {
    console.error(`grpo-step bench: ${label} failed (exit ${child.status}):\n${child.stderr}`);
    return undefined;
  }
  const line = JSON.parse(lastLine) as Result;
  // Progress on stderr: the table needs every case (and the second peak reading) first.
  console.error(`# ${label}: ${line.promptLength}x${line.newTokens}, step ${Number(line.stepSeconds).toFixed(1)} s`);
  return line;
}

/** Adds the ratios of the file header to a result line. */
function withRatios(line: Result, config: ModelConfig, peak: MachinePeak, torchBest: Result | undefined): Result {
  const step = line as unknown as StepCase & Record<string, number>;
  const wholeStepTokensPerSecond = Number(line.rolloutTokens) / Number(line.stepSeconds);
  const trainGflops = trainFlops(config, step) / Number(line.trainSeconds) / 1e9;
  const ratios: Result = {
    wholeStepTokensPerSecond,
    trainGflops,
    trainFmaFraction: trainGflops / peak.fmaGflops,
    rolloutRooflineFraction: rolloutRooflineSeconds(config, step, peak) / Number(line.rolloutSeconds),
    fmaGflops: peak.fmaGflops,
    readGBs: peak.readGBs,
  };
  if (torchBest) {
    ratios.stepRatioToTorch = Number(torchBest.stepSeconds) / Number(line.stepSeconds);
    ratios.peakRssRatioToTorch = Number(line.peakRssMiB) / Number(torchBest.peakRssMiB);
    ratios.stepCpuRatioToTorch = Number(torchBest.stepCpuSeconds) / Number(line.stepCpuSeconds);
  }
  return { ...line, ...ratios };
}

const HEADER =
  `${'model'.padEnd(19)}${'shape'.padEnd(8)}${'backend'.padEnd(16)}thr rollout/s  train/s   step/s  step s` +
  `   cpu s  train%fma rollout%roof  ×torch cpu×torch  peak MiB  mem×torch`;

function report(line: Result, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(line));
    return;
  }
  const number = (key: string, digits = 0, width = 9) =>
    (line[key] === undefined ? '-' : Number(line[key]).toFixed(digits)).padStart(width);
  const percent = (key: string, width: number) => (Number(line[key]) * 100).toFixed(1).padStart(width - 1) + '%';
  console.log(
    `${String(line.model).padEnd(19)}${`${line.promptLength}x${line.newTokens}`.padEnd(8)}` +
      `${String(line.backend).padEnd(16)}${String(line.threads).padStart(3)}` +
      `${number('rolloutTokensPerSecond', 0, 10)}${number('trainTokensPerSecond')}${number('wholeStepTokensPerSecond')}` +
      `${number('stepSeconds', 2, 8)}${number('stepCpuSeconds', 2, 8)}${percent('trainFmaFraction', 11)}${percent('rolloutRooflineFraction', 13)}` +
      `${number('stepRatioToTorch', 2, 8)}${number('stepCpuRatioToTorch', 2, 10)}${number('peakRssMiB', 0, 10)}${number('peakRssRatioToTorch', 2, 11)}`,
  );
}

/** Refuses before any case runs when the PyTorch reference cannot import torch. */
function checkTorchPython(): void {
  const probe = spawnSync(TORCH_PYTHON, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' });
  if (probe.status !== 0)
    throw new Error(
      `grpo-step bench: ${TORCH_PYTHON} cannot import torch (${(probe.stderr || String(probe.error)).trim().split('\n').pop()}); ` +
        'set GRPO_TORCH_PYTHON to a python with torch, or pass --pytorch-threads none',
    );
}

function peakOrExit(threads: number): MachinePeak {
  const peak = measurePeak(threads);
  if ('error' in peak) throw new Error(`grpo-step bench: no machine peak to compare with: ${peak.error}`);
  return peak;
}

/** Runs the scenario; see the file header for flags. */
export async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--child') return runCase(JSON.parse(argv[1]) as StepCase);
  const settings = parseArguments(argv);
  if (settings.pytorchThreads.length > 0) checkTorchPython();
  const runner = join(dirname(fileURLToPath(import.meta.url)), 'run.ts');
  const threads = 2;
  const before = peakOrExit(threads);
  const results: { config: ModelConfig; ours: Result[]; torch: Result[] }[] = [];
  for (const model of settings.models) {
    const config = modelConfig(model);
    for (const shape of settings.shapes) {
      const base = { model, ...settings.batch, ...shape };
      const ours: Result[] = [];
      for (const backend of settings.backends) {
        if (backend === 'js' && model !== 'fixture') {
          console.error(`grpo-step bench: ${model} skipped on js (plain loops take many minutes per step)`);
          continue;
        }
        const stepCase: StepCase = { ...base, backend };
        // A child per case: its RSS high-water mark is then this case's peak memory alone.
        const args = [...process.execArgv, runner, 'grpo-step', '--child', JSON.stringify(stepCase)];
        for (const threads of backend === 'js' ? [1] : settings.threads) {
          const label = `${model} on ${backend} (${threads} threads)`;
          const line = runChild(label, process.execPath, args, { GRPO_THREADS: String(threads) });
          if (line) ours.push(line);
        }
      }
      const torch: Result[] = [];
      for (const torchThreads of settings.pytorchThreads) {
        const flags = ['--models', model, '--threads', String(torchThreads), '--prompts', String(base.prompts)];
        flags.push('--group-size', String(base.groupSize), '--prompt-length', String(base.promptLength));
        flags.push('--new-tokens', String(base.newTokens), '--micro-batch', String(base.microBatch));
        const line = runChild(`PyTorch ${model} (${torchThreads} threads)`, TORCH_PYTHON, [REFERENCE, ...flags]);
        if (line) torch.push(line);
      }
      results.push({ config, ours, torch });
    }
  }
  const after = peakOrExit(threads);
  // Contention from other processes only lowers a reading, so the larger one is the closer to the peak.
  const peak: MachinePeak = {
    ...before,
    fmaGflops: Math.max(before.fmaGflops, after.fmaGflops),
    readGBs: Math.max(before.readGBs, after.readGBs),
  };
  if (settings.json) console.log(JSON.stringify({ peak, before, after }));
  else {
    const readings = [before, after].map((p) => `${p.fmaGflops.toFixed(0)}/${p.readGBs.toFixed(1)}`).join(', ');
    console.log(
      `# peak (${threads} threads, bench/peak): FMA ${peak.fmaGflops.toFixed(1)} GFLOP/s (${peak.fmaWidth}-bit), ` +
        `read ${peak.readGBs.toFixed(1)} GB/s; before, after: ${readings}`,
    );
    const torchLines = results.flatMap((result) => result.torch);
    for (const line of torchLines)
      console.log(
        `# PyTorch (${line.threads} threads, ${line.promptLength}x${line.newTokens}) ran on ${line.blas}: ` +
          `${Number(line.blasGflops).toFixed(1)} GFLOP/s at 1024³`,
      );
    console.log(HEADER);
  }
  for (const { config, ours, torch } of results) {
    const torchBest = torch.reduce<Result | undefined>(
      (best, line) => (!best || Number(line.stepSeconds) < Number(best.stepSeconds) ? line : best),
      undefined,
    );
    for (const line of [...ours, ...torch]) report(withRatios(line, config, peak, torchBest), settings.json);
    if (torchBest) reportCeiling(torchBest, config, peak, settings.json);
  }
}

/**
 * The most any implementation could reach against PyTorch's best in this run: a step whose training
 * runs at the FMA peak and whose rollout runs at its roofline, against PyTorch's measured step.
 */
function reportCeiling(torchBest: Result, config: ModelConfig, peak: MachinePeak, json: boolean): void {
  const step = torchBest as unknown as StepCase;
  const trainSeconds = trainFlops(config, step) / (peak.fmaGflops * 1e9);
  const rolloutSeconds = rolloutRooflineSeconds(config, step, peak);
  const ceiling = Number(torchBest.stepSeconds) / (trainSeconds + rolloutSeconds);
  if (json) {
    console.log(JSON.stringify({ model: step.model, shape: `${step.promptLength}x${step.newTokens}`, ceiling }));
    return;
  }
  console.log(
    `# ${step.model} ${step.promptLength}x${step.newTokens}: at the peak and roofline a step takes ` +
      `${trainSeconds.toFixed(2)} s training + ${rolloutSeconds.toFixed(2)} s rollout; PyTorch's best ` +
      `${Number(torchBest.stepSeconds).toFixed(2)} s, so no implementation exceeds ${ceiling.toFixed(2)}× it here`,
  );
}
