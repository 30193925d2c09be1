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
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import { AdamW, learningRateAt, Random } from '../nn/index.js';
import { evaluate, type EvaluationResult } from './evaluate.js';
import { renderDemonstration } from './prompt-format.js';
import { createStepEnvironment, prepareGrpoStep, recordStepState, rolloutSettingsOf, type PreparedStep } from './grpo-step.js';
import { optimizedParameters, policyStep, sftStep } from './optimize.js';
import { createProgressReporter, type ProgressReporter } from './progress.js';
import type { RolloutFn } from './rollout.js';
import { RunFolder, type TrainerState } from './run-folder.js';
import { groupStarts, type StepBatch } from './step-batch.js';
import { completionMetrics, rewardLogMetrics } from './step-metrics.js';
import { bindAlgorithm } from './algorithm.js';
import { markFailed, markRunning } from './run-status.js';
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
export async function train(runContext: RunContext, options: TrainOptions): Promise<TrainResult> {
  // A rollout passed here replaces the recipe's: its `provides` are checked again before any compute.
  const context = options.rollout && options.rollout !== runContext.rollout
    ? { ...runContext, rollout: options.rollout, algorithm: bindAlgorithm(runContext.config, { sampleRows: runContext.task.trainExamples(Math.min(16, runContext.config.grpo.examples), runContext.config.seed + 2), rolloutProvides: options.rollout.provides ?? [] }) }
    : runContext;
  const folder = new RunFolder(options.runDirectory);
  try {
    return await trainInFolder(context, options, folder);
  } catch (error) {
    markFailed(folder, error);
    throw error;
  }
}

async function trainInFolder(context: RunContext, options: TrainOptions, folder: RunFolder): Promise<TrainResult> {
  const { config, model, task } = context;
  const progress = createProgressReporter(config.logging.printEvery, process.stderr, options.quiet);
  const optimizer = new AdamW(optimizedParameters(model), {
    learningRate: config.sft.learningRate, beta1: config.optimizer.beta1, beta2: config.optimizer.beta2,
    epsilon: config.optimizer.epsilon, weightDecay: config.optimizer.weightDecay,
  });
  for (const note of folder.recover()) progress.message(`run folder: ${note} (left by a killed run)`);
  const summary = folder.readSummary();
  // A finished run is done unless it is resumed with more GRPO steps than it ran (`--set grpo.steps=N`).
  if (options.resume && summary.status === 'finished' && (summary.steps as number) >= config.sft.steps + config.grpo.steps) {
    progress.message(`${folder.directory} finished already (step ${summary.steps}); nothing to resume`);
    return { runDirectory: folder.directory, evalBefore: summary.evalBefore as EvaluationResult | null, evalAfter: summary.evalAfter as EvaluationResult | null, steps: summary.steps as number };
  }
  let state: TrainerState = { step: 0, phase: config.sft.steps > 0 ? 'sft' : 'grpo', phaseStep: 0, consecutiveSkips: 0, evalBefore: null, extra: {} };
  if (options.resume) state = resumeFrom(folder, model, optimizer, progress) ?? state;
  if (state.phase === 'done' && state.phaseStep < config.grpo.steps) {
    progress.message(`continuing GRPO from step ${state.phaseStep} to ${config.grpo.steps}`);
    state.phase = 'grpo';
  }
  const started = Date.now();
  markRunning(folder, task.name);
  const evalExamples = task.evalExamples(config.evaluation.examples, config.seed + 1);
  const runEval = () => evaluate(model, context.promptFormat, task, evalExamples, context.rewards, {
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
    await runGrpo(context, folder, optimizer, state, progress, save, runEval, context.rollout);
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
  const { config, model, task } = context;
  const examples = task.trainExamples(config.sft.examples, config.seed);
  const eos = context.stopTokenIds[0];
  const schedule = { kind: config.sft.schedule, learningRate: config.sft.learningRate, warmupSteps: config.sft.warmupSteps, totalSteps: config.sft.steps, minRatio: 0.1 };
  while (state.phaseStep < config.sft.steps) {
    const stepStart = Date.now();
    const random = new Random(stepSeed(config.seed, state.step));
    const batch = Array.from({ length: config.sft.batchSize }, () => examples[random.integer(examples.length)]);
    const sequences = batch.map((example) => renderDemonstration(context.promptFormat, example, task.demonstration(example, () => random.uniform()), eos));
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

/**
 * Reward failures are loud: each distinct message is printed once (and every failed cell is kept in
 * samples.jsonl), a step whose samples all lack a valid reward warns, and `limit` such steps in a row
 * stop the run — a broken reward must not train on nothing while the run reports success.
 */
function reportRewardFailures(batch: StepBatch, state: TrainerState, progress: ProgressReporter, reported: Set<string>, limit: number): void {
  for (const errors of batch.errors) {
    for (const [reward, message] of Object.entries(errors ?? {})) {
      const key = `${reward}\u0000${message}`;
      if (reported.has(key)) continue;
      reported.add(key);
      progress.warn(`grpo: reward "${reward}" failed at step ${state.step + 1}: ${message} (its samples leave the loss; counted in reward/${reward}/invalid)`);
    }
  }
  const noneValid = batch.samples.length > 0 && batch.valid.every((valid) => !valid);
  state.invalidSteps = noneValid ? (state.invalidSteps ?? 0) + 1 : 0;
  if (!noneValid) return;
  const firstError = Object.entries(batch.errors.find((errors) => errors !== null) ?? {})[0];
  const cause = firstError ? `reward "${firstError[0]}": ${firstError[1]}` : 'no reward applied';
  if (state.invalidSteps >= limit) throw new Error(`stopping: ${state.invalidSteps} consecutive steps had no sample with a valid reward (${cause}); fix the reward`);
  progress.warn(`grpo: warning: step ${state.step + 1} had no sample with a valid reward (${cause}); nothing was learned`);
}

function guardSkips(state: TrainerState, applied: boolean, limit: number): void {
  state.consecutiveSkips = applied ? 0 : state.consecutiveSkips + 1;
  if (state.consecutiveSkips >= limit) {
    throw new Error(`stopping: ${state.consecutiveSkips} consecutive steps had a non-finite loss or gradient (step ${state.step}); lower the learning rate or check the rewards`);
  }
}

async function runGrpo(
  context: RunContext, folder: RunFolder, optimizer: AdamW, state: TrainerState, progress: ProgressReporter,
  save: () => void, runEval: () => Promise<EvaluationResult>, rollout: RolloutFn,
): Promise<void> {
  const { config, model, algorithm: bound } = context;
  const schedule = { kind: config.grpo.schedule, learningRate: config.grpo.learningRate, warmupSteps: config.grpo.warmupSteps, totalSteps: config.grpo.steps };
  // β = 0 needs no reference model, and none is built. Otherwise the reference is the policy at
  // GRPO start, saved once beside the checkpoints so a resumed run uses the same one.
  const referenceModel = bound.klCoefficient > 0 ? referenceFor(context, folder, state) : null;
  const environment = createStepEnvironment({ ...context, rollout }, referenceModel);
  const settings = environment.settings;
  const reportedFailures = new Set<string>();
  while (state.phaseStep < config.grpo.steps) {
    const stepStart = Date.now();
    const seed = stepSeed(config.seed, state.step);
    // 1-3. Prompts, rollout, score, refill, advantages, loss mask, training rows (grpo-step.ts).
    const prepared = await prepareGrpoStep(environment, state, new Random(seed), rolloutSettingsOf(context, seed), state.phaseStep);
    // 4. Optimisation: μ passes over the kept samples with the stored old logprobs.
    optimizer.learningRate = learningRateAt(schedule, state.phaseStep);
    const trainStart = Date.now();
    let stepMetrics: Record<string, number> = {};
    let applied = true;
    for (let iteration = 0; iteration < config.grpo.iterations && prepared.samples.length > 0; iteration++) {
      const outcome = policyStep(bound, settings, model, optimizer, prepared.samples);
      stepMetrics = outcome.metrics;
      applied &&= outcome.applied;
    }
    guardSkips(state, applied, config.optimizer.maxSkippedSteps);
    reportRewardFailures(prepared.firstRound, state, progress, reportedFailures, config.optimizer.maxSkippedSteps);
    recordStepState(bound, state, prepared);
    const trainSeconds = (Date.now() - trainStart) / 1000;
    state.step++;
    state.phaseStep++;
    // 5. Log, evaluate, checkpoint.
    const tokens = prepared.samples.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
    const first = prepared.firstRound;
    const record: Record<string, number> = {
      ...rewardLogMetrics(first), ...completionMetrics(first),
      ...prepared.metrics, ...stepMetrics, lr: optimizer.learningRate, skippedSteps: applied ? 0 : 1,
      'train/samples': prepared.samples.length, 'train/groups': prepared.batch.prompts.length,
      'time/train': trainSeconds, 'time/step': (Date.now() - stepStart) / 1000,
      tokensPerSecond: tokens * config.grpo.iterations / Math.max(1e-9, trainSeconds),
    };
    if (config.evaluation.every > 0 && state.phaseStep % config.evaluation.every === 0 && state.phaseStep < config.grpo.steps) Object.assign(record, await runEval());
    folder.logMetrics({ step: state.step, phase: 'grpo', ...record });
    if (config.logging.samplesEvery > 0 && state.phaseStep % config.logging.samplesEvery === 0) logSamples(folder, state.step, prepared, config.logging.samplesPerStep);
    progress.update('grpo', state.phaseStep, config.grpo.steps, record);
    if (config.checkpoint.every > 0 && state.step % config.checkpoint.every === 0) save();
  }
}

function logSamples(folder: RunFolder, step: number, prepared: PreparedStep, groupCount: number): void {
  const { batch, signal } = prepared;
  const starts = groupStarts(batch.groupSizes);
  const K = batch.rewardNames.length;
  batch.prompts.slice(0, groupCount).forEach((prompt, g) => {
    const members = Array.from({ length: batch.groupSizes[g] }, (_, k) => starts[g] + k);
    folder.logSamples({
      step, phase: 'grpo', prompt: prompt.text ?? prompt.example.prompt, answer: prompt.example.answer,
      completions: members.map((i) => ({
        text: batch.samples[i].text, reward: Number.isFinite(signal.rewards[i]) ? signal.rewards[i] : null,
        rewards: Object.fromEntries(batch.rewardNames.map((name, k) => [name, Number.isFinite(batch.scores[i * K + k]) ? batch.scores[i * K + k] : null])),
        advantage: signal.advantages[i], length: batch.samples[i].completionIds.length, finishReason: batch.samples[i].truncated ? 'length' : 'stop', inLoss: signal.keep[i] === 1,
        ...(batch.errors[i] ? { errors: batch.errors[i] } : {}),
      })),
    });
  });
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
