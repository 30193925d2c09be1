/**
 * The SFT and GRPO loops, top to bottom. GRPO: sample prompts → generate G completions each →
 * score → combine → advantages → filters (refilling dropped groups) → μ optimisation passes with
 * micro-batches → clip → AdamW → log → checkpoint. SFT: demonstrations → completion-only
 * cross-entropy → AdamW. Both resume from the run folder's last complete checkpoint.
 *
 * Is not: config parsing (config.ts, setup.ts) or maths (algorithms/, rewards/). Every random choice
 * is derived from (seed, step), so a resumed run replays exactly what an uninterrupted one does.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Example } from '../data/task.js';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import { AdamW, learningRateAt, Random } from '../nn/index.js';
import { encodePrompt, evaluate, type EvaluationResult } from './evaluate.js';
import { optimizedParameters, policyStep, sftStep, withReferenceLogprobs, type TrainingSample } from './optimize.js';
import { createProgressReporter, type ProgressReporter } from './progress.js';
import { singleTurnRollout, type RolloutFn, type RolloutPrompt } from './rollout.js';
import { RunFolder, type TrainerState } from './run-folder.js';
import { markFailed, markRunning } from './run-status.js';
import { keptGroups, rewardLogMetrics, scoreSamples, type ScoredGroup } from './score.js';
import type { RunContext } from './setup.js';

export interface TrainOptions {
  runDirectory: string;
  /** Continue from the last complete checkpoint in runDirectory. */
  resume?: boolean;
  rollout?: RolloutFn;
  quiet?: boolean;
}

export interface TrainResult {
  runDirectory: string;
  evalBefore: EvaluationResult | null;
  evalAfter: EvaluationResult | null;
  steps: number;
}

const stepSeed = (seed: number, step: number): number => seed * 100_003 + step * 7 + 1;

/**
 * Runs (or with `resume`, continues) a training run in `runDirectory`. summary.json says `running`
 * while it works, `finished` at the end, and `failed` with the error as `reason` when it throws.
 */
export async function train(context: RunContext, options: TrainOptions): Promise<TrainResult> {
  const folder = new RunFolder(options.runDirectory);
  try {
    return await trainInFolder(context, options, folder);
  } catch (error) {
    markFailed(folder, error);
    throw error;
  }
}

async function trainInFolder(context: RunContext, options: TrainOptions, folder: RunFolder): Promise<TrainResult> {
  const { config, model, tokenizer, task } = context;
  const progress = createProgressReporter(config.logging.printEvery, process.stderr, options.quiet);
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: config.sft.learningRate, beta1: config.optimizer.beta1, beta2: config.optimizer.beta2,
    epsilon: config.optimizer.epsilon, weightDecay: config.optimizer.weightDecay,
  });
  for (const note of folder.recover()) progress.message(`run folder: ${note} (left by a killed run)`);
  const summary = folder.readSummary();
  if (options.resume && summary.status === 'finished') {
    progress.message(`${folder.directory} finished already (step ${summary.steps}); nothing to resume`);
    return { runDirectory: folder.directory, evalBefore: summary.evalBefore as EvaluationResult | null, evalAfter: summary.evalAfter as EvaluationResult | null, steps: summary.steps as number };
  }
  let state: TrainerState = { step: 0, phase: config.sft.steps > 0 ? 'sft' : 'grpo', phaseStep: 0, consecutiveSkips: 0, evalBefore: null, extra: {} };
  if (options.resume) state = resumeFrom(folder, model, optimizer, progress) ?? state;
  const started = Date.now();
  markRunning(folder, task.name);
  const evalExamples = task.evalExamples(config.evaluation.examples, config.seed + 1);
  const runEval = () => evaluate(model, tokenizer, task, evalExamples, context.rewards, {
    maxNewTokens: config.sampling.maxNewTokens, stopTokenIds: context.stopTokenIds, passAtK: config.evaluation.passAtK,
    temperature: config.sampling.temperature, seed: config.seed,
  });
  // Saving step N twice (a periodic checkpoint, then the end of a phase) replaces it atomically.
  const save = () => folder.saveCheckpoint({
    config: model.config, tensors: model.toStoredTensors(), optimizer, state, extraFiles: context.tokenizerFiles,
    sourceDirectory: context.sourceDirectory, keepLast: config.checkpoint.keepLast,
  });
  if (state.phase === 'sft') {
    await runSft(context, folder, optimizer, state, progress, save);
    state.phase = 'grpo';
    state.phaseStep = 0;
    save();
  }
  if (state.phase === 'grpo') {
    if (!state.evalBefore) {
      state.evalBefore = { ...(await runEval()) };
      progress.message(`held-out accuracy before GRPO: ${(state.evalBefore['eval/accuracy'] * 100).toFixed(1)}%`);
      folder.logMetrics({ step: state.step, phase: 'grpo', ...state.evalBefore });
      folder.writeSummary({ ...folder.readSummary(), evalBefore: state.evalBefore });
    }
    await runGrpo(context, folder, optimizer, state, progress, save, runEval, options.rollout ?? singleTurnRollout);
    state.phase = 'done';
    save();
  }
  const evalAfter = await runEval();
  folder.logMetrics({ step: state.step, phase: 'grpo', ...evalAfter });
  progress.message(`held-out accuracy after GRPO: ${(evalAfter['eval/accuracy'] * 100).toFixed(1)}%`);
  progress.finish();
  const previous = folder.readSummary();
  folder.writeSummary({
    ...previous, status: 'finished', steps: state.step, evalBefore: state.evalBefore, evalAfter,
    wallSeconds: ((previous.wallSeconds as number | undefined) ?? 0) + (Date.now() - started) / 1000,
    finalCheckpoint: join(folder.checkpointsDirectory, `step-${state.step}`),
  });
  return { runDirectory: folder.directory, evalBefore: state.evalBefore as EvaluationResult | null, evalAfter, steps: state.step };
}

function resumeFrom(folder: RunFolder, model: Transformer, optimizer: AdamW, progress: ProgressReporter): TrainerState | null {
  const steps = folder.checkpointSteps();
  if (steps.length === 0) {
    folder.truncateLogsTo({ metrics: 0, samples: 0 }); // killed before its first checkpoint: start over with clean logs
    progress.message(`no complete checkpoint in ${folder.directory}; starting the run from the beginning`);
    return null;
  }
  const step = steps[steps.length - 1];
  const { state, optimizer: optimizerState, directory, logBytes } = folder.loadTrainingState(step);
  const restored = Transformer.fromTensors(model.config, loadCheckpoint(directory).tensors);
  for (const [name, parameter] of model.parameters) parameter.data.set(restored.parameters.get(name)!.data);
  optimizer.setState(optimizerState);
  // Lines logged after the checkpoint (even at its own step) are replayed, so they are cut first.
  if (logBytes) folder.truncateLogsTo(logBytes);
  else folder.truncateLogsAfter(step); // a checkpoint from a version that did not record log lengths
  progress.message(`resuming from ${directory} (step ${step}, phase ${state.phase})`);
  return state;
}

async function runSft(context: RunContext, folder: RunFolder, optimizer: AdamW, state: TrainerState, progress: ProgressReporter, save: () => void): Promise<void> {
  const { config, model, tokenizer, task } = context;
  const examples = task.trainExamples(config.sft.examples, config.seed);
  const eos = context.stopTokenIds[0];
  const schedule = { kind: config.sft.schedule, learningRate: config.sft.learningRate, warmupSteps: config.sft.warmupSteps, totalSteps: config.sft.steps, minRatio: 0.1 };
  while (state.phaseStep < config.sft.steps) {
    const stepStart = Date.now();
    const random = new Random(stepSeed(config.seed, state.step));
    const batch = Array.from({ length: config.sft.batchSize }, () => examples[random.integer(examples.length)]);
    const sequences = batch.map((example) => ({
      promptIds: encodePrompt(tokenizer, example),
      completionIds: [...tokenizer.encode(task.demonstration(example, () => random.uniform()), { addSpecialTokens: false }), eos],
    }));
    optimizer.learningRate = learningRateAt(schedule, state.phaseStep);
    const { metrics, applied } = sftStep(config, model, optimizer, sequences);
    guardSkips(state, applied, config.optimizer.maxSkippedSteps);
    state.step++;
    state.phaseStep++;
    const record = { ...metrics, lr: optimizer.learningRate, skippedSteps: applied ? 0 : 1, 'time/step': (Date.now() - stepStart) / 1000 };
    folder.logMetrics({ step: state.step, phase: 'sft', ...record });
    progress.update('sft', state.phaseStep, config.sft.steps, record);
    if (config.checkpoint.every > 0 && state.step % config.checkpoint.every === 0) save();
  }
}

function guardSkips(state: TrainerState, applied: boolean, limit: number): void {
  state.consecutiveSkips = applied ? 0 : state.consecutiveSkips + 1;
  if (state.consecutiveSkips >= limit) {
    throw new Error(`stopping: ${state.consecutiveSkips} consecutive steps had a non-finite loss or gradient (step ${state.step}); lower the learning rate or check the rewards`);
  }
}

/** Prompts for a GRPO step: a seeded draw from the training examples (refill rounds draw more). */
function drawPrompts(examples: Example[], count: number, random: Random, encode: (example: Example) => number[]): RolloutPrompt[] {
  return Array.from({ length: count }, () => {
    const example = examples[random.integer(examples.length)];
    return { example, promptIds: encode(example) };
  });
}

async function runGrpo(
  context: RunContext, folder: RunFolder, optimizer: AdamW, state: TrainerState, progress: ProgressReporter,
  save: () => void, runEval: () => Promise<EvaluationResult>, rollout: RolloutFn,
): Promise<void> {
  const { config, model, tokenizer, task } = context;
  const G = config.sampling.groupSize;
  const examples = task.trainExamples(config.grpo.examples, config.seed + 2);
  const schedule = { kind: config.grpo.schedule, learningRate: config.grpo.learningRate, warmupSteps: config.grpo.warmupSteps, totalSteps: config.grpo.steps };
  // β = 0 needs no reference model, and none is built. Otherwise the reference is the policy at
  // GRPO start, saved once beside the checkpoints so a resumed run uses the same one.
  const referenceModel = config.algorithm.klCoefficient > 0 ? referenceFor(context, folder, state) : null;
  while (state.phaseStep < config.grpo.steps) {
    const stepStart = Date.now();
    const random = new Random(stepSeed(config.seed, state.step));
    const settings = { ...config.sampling, stopTokenIds: context.stopTokenIds, seed: stepSeed(config.seed, state.step) };
    // 1-3. Rollout, score, advantages, filters; refill dropped groups up to maxRefills rounds.
    let groups: ScoredGroup[] = [];
    let rolloutSeconds = 0;
    let rewardSeconds = 0;
    const firstRound: Record<string, number>[] = [];
    for (let round = 0; round <= (config.algorithm.groupFilter ? config.algorithm.maxRefills : 0); round++) {
      const wanted = config.grpo.promptsPerStep - groups.length;
      if (wanted <= 0) break;
      const prompts = drawPrompts(examples, round === 0 ? wanted : config.grpo.promptsPerStep, random, (example) => encodePrompt(tokenizer, example));
      const rolloutStart = Date.now();
      const samples = await rollout({ model, tokenizer }, prompts, { ...settings, seed: settings.seed + round * 31 });
      rolloutSeconds += (Date.now() - rolloutStart) / 1000;
      const rewardStart = Date.now();
      const scored = await scoreSamples(config, context.rewards, prompts, samples, state.phaseStep);
      rewardSeconds += (Date.now() - rewardStart) / 1000;
      if (round === 0) firstRound.push(rewardLogMetrics(scored, prompts.length), completionMetrics(samples.map((s) => s.completionIds.length), samples.map((s) => s.truncated)));
      groups = [...groups, ...keptGroups(scored, G)].slice(0, config.grpo.promptsPerStep);
    }
    // 4. Optimisation: μ passes over the kept samples with the stored old logprobs.
    const keptSamples: TrainingSample[] = groups.flatMap((group) => group.samples.flatMap((sample, i) => (group.keep[i] ? [{
      promptIds: group.prompt.promptIds, completionIds: sample.completionIds, lossMask: sample.lossMask, oldLogprobs: sample.oldLogprobs,
      advantage: group.advantages[i], tokenAdvantages: group.tokenAdvantages?.[i],
    }] : [])));
    const trainingSamples = referenceModel && keptSamples.length > 0 ? withReferenceLogprobs(config, referenceModel, keptSamples) : keptSamples;
    optimizer.learningRate = learningRateAt(schedule, state.phaseStep);
    const trainStart = Date.now();
    let stepMetrics: Record<string, number> = {};
    let applied = true;
    for (let iteration = 0; iteration < config.grpo.iterations && trainingSamples.length > 0; iteration++) {
      const outcome = policyStep(config, model, optimizer, trainingSamples);
      stepMetrics = outcome.metrics;
      applied &&= outcome.applied;
    }
    guardSkips(state, applied, config.optimizer.maxSkippedSteps);
    const trainSeconds = (Date.now() - trainStart) / 1000;
    state.step++;
    state.phaseStep++;
    // 5. Log, evaluate, checkpoint.
    const tokens = trainingSamples.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
    const record: Record<string, number> = {
      ...Object.assign({}, ...firstRound), ...stepMetrics, lr: optimizer.learningRate, skippedSteps: applied ? 0 : 1,
      'train/samples': trainingSamples.length, 'train/groups': groups.length,
      'time/rollout': rolloutSeconds, 'time/reward': rewardSeconds, 'time/train': trainSeconds, 'time/step': (Date.now() - stepStart) / 1000,
      tokensPerSecond: tokens * config.grpo.iterations / Math.max(1e-9, trainSeconds),
    };
    if (config.evaluation.every > 0 && state.phaseStep % config.evaluation.every === 0 && state.phaseStep < config.grpo.steps) Object.assign(record, await runEval());
    folder.logMetrics({ step: state.step, phase: 'grpo', ...record });
    if (config.logging.samplesEvery > 0 && state.phaseStep % config.logging.samplesEvery === 0) logSamples(folder, state.step, groups.slice(0, config.logging.samplesPerStep));
    progress.update('grpo', state.phaseStep, config.grpo.steps, record);
    if (config.checkpoint.every > 0 && state.step % config.checkpoint.every === 0) save();
  }
}

function completionMetrics(lengths: number[], truncated: boolean[]): Record<string, number> {
  return {
    'completions/meanLength': lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length),
    'completions/minLength': Math.min(...lengths),
    'completions/maxLength': Math.max(...lengths),
    'completions/clippedRatio': truncated.filter(Boolean).length / Math.max(1, truncated.length),
  };
}

function logSamples(folder: RunFolder, step: number, groups: ScoredGroup[]): void {
  for (const group of groups) {
    folder.logSamples({
      step, phase: 'grpo', prompt: group.prompt.example.prompt, answer: group.prompt.example.answer,
      completions: group.samples.map((sample, i) => ({
        text: sample.text, reward: Number.isFinite(group.rewards[i]) ? group.rewards[i] : null, rewards: group.scores[i],
        advantage: group.advantages[i], length: sample.completionIds.length, finishReason: sample.truncated ? 'length' : 'stop', inLoss: group.keep[i] === 1,
      })),
    });
  }
}

/**
 * The KL reference: the policy at GRPO start, saved once as checkpoints/reference (atomically, like
 * every checkpoint) so a resumed run reloads the same one instead of taking its current weights.
 */
function referenceFor(context: RunContext, folder: RunFolder, state: TrainerState): Transformer {
  const directory = join(folder.checkpointsDirectory, 'reference');
  let tensors;
  if (state.phaseStep > 0) {
    // The reference is published before the first GRPO checkpoint exists, so it cannot be missing here.
    if (!existsSync(directory)) throw new Error(`${directory}: missing, but the run is resuming at GRPO step ${state.phaseStep}; the KL reference cannot be rebuilt`);
    tensors = loadCheckpoint(directory).tensors;
  } else {
    tensors = new Map([...context.model.parameters].map(([name, p]) => [name, { shape: [...p.shape], data: p.data.slice() }]));
    saveCheckpoint(directory, { config: context.model.config, tensors, extraFiles: context.tokenizerFiles, sourceDir: context.sourceDirectory });
  }
  const reference = Transformer.fromTensors(context.model.config, tensors);
  for (const parameter of reference.parameters.values()) parameter.requiresGrad = false;
  return reference;
}
