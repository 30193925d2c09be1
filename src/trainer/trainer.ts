/**
 * A run, and its GRPO loop, top to bottom. GRPO: sample prompts → generate G completions each →
 * score → combine → advantages → filters (refilling dropped groups) → μ optimisation passes with
 * micro-batches → clip → AdamW → log → checkpoint. SFT (sft.ts) runs first when configured.
 * Both resume from the run folder's last complete checkpoint. The caller may
 * watch through three optional callbacks (each step, each evaluation, each checkpoint) and stop the
 * run from the step one; they observe, they never change what is trained.
 *
 * Also the guards that stop a run rather than let it train on nothing (rewards that all fail), at
 * the end of this file; non-finite steps in a row are counted in optimize.ts.
 *
 * Is not: config parsing (config/, setup.ts) or maths (algorithms/, rewards/). Every random choice
 * is derived from (seed, step), so a resumed run replays exactly what an uninterrupted one does.
 */
import { join } from 'node:path';
import { AdamW, learningRateAt, Random, type ScheduleConfig } from '../nn/index.js';
import { combineSeeds, stepSeed } from '../tensor/index.js';
import { evaluateRun, type EvaluationResult } from './evaluate.js';
import { checkRunImages, withConnector } from './vision-run.js';
import { writeVisionModelFiles } from './vision-setup.js';
import { createStepEnvironment, prepareGrpoStep, rolloutSettingsOf } from './grpo-step.js';
import { recordStepState } from './step-signal.js';
import { publishAdapter } from '../rollout/openai-rollout.js';
import { countSkippedStep, optimizedParameters, policyStep } from './optimize.js';
import { runSft, type LoopHooks, type SftPlan, type StepRecord } from './sft.js';
import type { Transformer } from '../model/transformer.js';
import type { BoundAlgorithm } from '../config/algorithm.js';
import { createProgressReporter, type ProgressReporter } from '../run/progress.js';
import type { RolloutFn, RolloutSettings } from '../rollout/rollout.js';
import { RunFolder, type TrainerState } from '../run/run-folder.js';
import { agentMetrics, completionMetrics, domainMetrics, rewardLogMetrics, sampleRecords } from './step-metrics.js';
import { adapterBaseFor, moveReference, referenceFor, resumeFrom, visionReferenceFor } from './restore.js';
import { markFailed, markInterrupted, markRunning, RunInterrupted, stopIfAborted } from '../run/run-status.js';
import { bindRunAlgorithm, withRewardWorkers, type RunContext } from './setup.js';
import type { StepBatch } from './step-batch.js';

export type { StepRecord };

export interface TrainOptions {
  runDirectory: string;
  /** Continue from the last complete checkpoint in runDirectory. */
  resume?: boolean;
  rollout?: RolloutFn;
  quiet?: boolean;
  /** With `resume`: when every checkpoint is damaged, start over from step 0 (emptying the logs) instead of stopping. */
  restartDamaged?: boolean;
  /**
   * Stops the run at the next step boundary when aborted (the CLI aborts it on SIGINT/SIGTERM):
   * summary.json says `interrupted`, nothing more is saved, and train() throws RunInterrupted.
   */
  signal?: AbortSignal;
  /**
   * Called after every logged step (SFT and GRPO) with its metrics record. Returning `false` or
   * `'stop'` ends training after that step: the model is saved, evaluated, and the run `finished`.
   */
  onStep?: (metrics: StepRecord) => StepVerdict | Promise<StepVerdict>;
  /** Called after every held-out evaluation (before GRPO, every `evaluation.every` steps, at the end). */
  onEvaluate?: (metrics: EvaluationResult & { step: number }) => void | Promise<void>;
  /** Called after every checkpoint is saved, with its folder. */
  onCheckpoint?: (path: string) => void | Promise<void>;
}

/** What `onStep` may return: `false` or `'stop'` stops after this step; anything else goes on. */
export type StepVerdict = boolean | 'stop' | void;

const stopsRun = (verdict: StepVerdict): boolean => verdict === false || verdict === 'stop';

export interface TrainResult {
  runDirectory: string;
  evalBefore: EvaluationResult | null;
  evalAfter: EvaluationResult | null;
  steps: number;
}

/**
 * What the two loops read, resolved once from the config before either starts: the loops never
 * read the raw config (a setting they need is a field here, named for what the loop does with it).
 */
interface LoopPlan {
  seed: number;
  sft: SftPlan;
  /** `rollout`: the sampling settings of every step, whose seed each step replaces with its own. */
  grpo: { steps: number; iterations: number; schedule: ScheduleConfig; rollout: RolloutSettings };
  /** Consecutive skipped (non-finite) updates before the run stops. */
  maxSkippedSteps: number;
  /** Evaluate every this many GRPO steps (0: only before and after). */
  evaluateEvery: number;
  /** Save a checkpoint every this many steps (0: only at the end of each phase). */
  checkpointEvery: number;
  /** Log sample groups every this many GRPO steps (0: never), this many per step. */
  samplesEvery: number;
  samplesPerStep: number;
  /** algorithm.referenceSync: move the reference toward the policy every `every` GRPO steps, or null. */
  referenceSync: { every: number; mixupAlpha: number } | null;
}

/** The loops' hooks, and the reference a GRPO loop moves (its checkpoints keep it; null = none moves). */
interface GrpoLoopHooks extends LoopHooks {
  movedReference: { model: Transformer | null };
}

/** The loops' plan of a run: every setting either loop reads, taken from the config once. */
function planLoops(context: RunContext): LoopPlan {
  const { config } = context;
  const learningRate = (phase: 'sft' | 'grpo') => config.lora?.learningRate ?? config[phase].learningRate;
  return {
    seed: config.seed,
    sft: {
      seed: config.seed,
      steps: config.sft.steps,
      examples: config.sft.examples,
      batchSize: config.sft.batchSize,
      schedule: {
        kind: config.sft.schedule,
        learningRate: learningRate('sft'),
        warmupSteps: config.sft.warmupSteps,
        totalSteps: config.sft.steps,
        minRatio: 0.1,
      },
      update: { packLength: config.sft.packLength, maxGradNorm: config.optimizer.maxGradNorm },
      maxSkippedSteps: config.optimizer.maxSkippedSteps,
      checkpointEvery: config.checkpoint.every,
      thoughtDropout: config.sft.thoughtDropout,
    },
    grpo: {
      steps: config.grpo.steps,
      iterations: config.grpo.iterations,
      schedule: {
        kind: config.grpo.schedule,
        learningRate: learningRate('grpo'),
        warmupSteps: config.grpo.warmupSteps,
        totalSteps: config.grpo.steps,
      },
      rollout: rolloutSettingsOf(context, config.seed),
    },
    maxSkippedSteps: config.optimizer.maxSkippedSteps,
    evaluateEvery: config.evaluation.every,
    checkpointEvery: config.checkpoint.every,
    samplesEvery: config.logging.samplesEvery,
    samplesPerStep: config.logging.samplesPerStep,
    referenceSync: config.algorithm.referenceSync,
  };
}

/**
 * Runs (or with `resume`, continues) a training run in `runDirectory`. summary.json says `running`
 * while it works, `finished` at the end, `failed` with the error as `reason` when it throws, and
 * `interrupted` when `options.signal` stopped it (then it throws RunInterrupted).
 */
export async function train(runContext: RunContext, options: TrainOptions): Promise<TrainResult> {
  // A rollout passed here replaces the recipe's: its `provides` are checked again before any compute.
  const context =
    options.rollout && options.rollout !== runContext.rollout
      ? {
          ...runContext,
          rollout: options.rollout,
          algorithm: bindRunAlgorithm(runContext.config, runContext.task, options.rollout, runContext.rewards),
        }
      : runContext;
  const folder = new RunFolder(options.runDirectory, {
    tensorboard: context.config.logging.reportTo.includes('tensorboard'),
  });
  // Reward workers, when the config asks for them, start before the first step and stop with the run.
  const workers = await withRewardWorkers(context);
  try {
    return await trainInFolder(workers.context, options, folder);
  } catch (error) {
    if (error instanceof RunInterrupted) markInterrupted(folder, error);
    else markFailed(folder, error);
    throw error;
  } finally {
    await workers.close();
  }
}

async function trainInFolder(context: RunContext, options: TrainOptions, folder: RunFolder): Promise<TrainResult> {
  const { config, model, task } = context;
  const plan = planLoops(context);
  const progress = createProgressReporter(config.logging.printEvery, process.stderr, options.quiet);
  const optimizer = new AdamW(optimizedParameters(model, context.vision?.model.parameters), {
    learningRate: config.lora?.learningRate ?? config.sft.learningRate,
    beta1: config.optimizer.beta1,
    beta2: config.optimizer.beta2,
    epsilon: config.optimizer.epsilon,
    weightDecay: config.optimizer.weightDecay,
  });
  for (const note of folder.recover()) progress.message(`run folder: ${note} (left by a killed run)`);
  const summary = folder.readSummary();
  // A finished run is done unless it is resumed with more GRPO steps than it ran (`--set grpo.steps=N`).
  if (
    options.resume &&
    summary.status === 'finished' &&
    (summary.steps as number) >= config.sft.steps + config.grpo.steps
  ) {
    progress.message(`${folder.directory} finished already (step ${summary.steps}); nothing to resume`);
    return {
      runDirectory: folder.directory,
      evalBefore: summary.evalBefore as EvaluationResult | null,
      evalAfter: summary.evalAfter as EvaluationResult | null,
      steps: summary.steps as number,
    };
  }
  let state: TrainerState = {
    step: 0,
    phase: config.sft.steps > 0 ? 'sft' : 'grpo',
    phaseStep: 0,
    consecutiveSkips: 0,
    evalBefore: null,
    extra: {},
  };
  if (options.resume)
    state =
      resumeFrom(folder, model, optimizer, progress, context.vision, { restartDamaged: options.restartDamaged }) ??
      state;
  if (state.phase === 'done' && state.phaseStep < config.grpo.steps) {
    progress.message(`continuing GRPO from step ${state.phaseStep} to ${config.grpo.steps}`);
    state.phase = 'grpo';
  }
  const evalExamples = task.evalExamples(config.evaluation.examples, config.seed + 1);
  if (context.vision)
    await checkRunImages([
      ['SFT', config.sft.steps > 0 ? task.trainExamples(config.sft.examples, config.seed) : []],
      ['GRPO', config.grpo.steps > 0 ? task.trainExamples(config.grpo.examples, config.seed + 2) : []],
      ['evaluation', evalExamples],
    ]);
  const started = Date.now();
  markRunning(folder, task.name);
  // Between steps only: a stop never lands inside save(), so the last checkpoint stays whole.
  const checkStop = () => stopIfAborted(options.signal, state.step);
  const evaluateNow = () =>
    evaluateRun(context, (message) =>
      progress.warn(
        `evaluation: the correctness check failed: ${message} (that answer counts as not correct; counted in eval/checkErrors)`,
      ),
    );
  const runEval = async () => {
    const result = await evaluateNow();
    await options.onEvaluate?.({ step: state.step, ...result });
    return result;
  };
  // Set when onStep asks to stop: the remaining steps of every phase are skipped.
  const stop = { requested: false };
  const onStep = async (record: StepRecord) => {
    if (stopsRun(await options.onStep?.(record))) stop.requested = true;
  };
  const adapterBase = model.adapters ? adapterBaseFor(context, folder) : null;
  // Saving step N twice (a periodic checkpoint, then the end of a phase) replaces it atomically.
  // A LoRA run saves its adapter (PEFT format) instead of the frozen base weights; a vision-language
  // run its whole model in the Idefics3 layout.
  const { vision } = context;
  const writeModel = vision
    ? (directory: string) => writeVisionModelFiles(directory, vision, context.tokenizerFiles, context.sourceDirectory)
    : undefined;
  const save = async () => {
    const path = folder.saveCheckpoint({
      writeModel,
      config: model.config,
      tensors: model.toStoredTensors(),
      adapter: model.adapters
        ? { adapters: model.adapters, baseModel: adapterBase!, dropout: model.adapterDropout }
        : undefined,
      optimizer,
      state,
      extraFiles: context.tokenizerFiles,
      sourceDirectory: context.sourceDirectory,
      keepLast: config.checkpoint.keepLast,
      movedReference: movedReference.model?.toStoredTensors(),
    });
    await options.onCheckpoint?.(path);
  };
  const movedReference: GrpoLoopHooks['movedReference'] = { model: null };
  const loop = { save, checkStop, onStep, stop, movedReference };
  if (state.phase === 'sft') {
    await runSft(context, folder, optimizer, state, progress, loop, plan.sft);
    // A stop asked for during SFT skips GRPO: the run ends as 'done' after SFT.
    state.phase = stop.requested ? 'done' : 'grpo';
    state.phaseStep = 0;
    await save();
  }
  if (state.phase === 'grpo') {
    if (!state.evalBefore) {
      await checkStop();
      state.evalBefore = { ...(await runEval()) };
      progress.message(`held-out accuracy before GRPO: ${(state.evalBefore['eval/accuracy'] * 100).toFixed(1)}%`);
      folder.logMetrics({ step: state.step, phase: 'grpo', ...state.evalBefore });
      folder.writeSummary({ ...folder.readSummary(), evalBefore: state.evalBefore });
    }
    // The 'openai' engine samples from the adapter last published to it: publish before each step's rollout.
    const publish =
      config.rollout.engine === 'openai'
        ? () => publishAdapter(config.rollout, model, folder.directory, adapterBase)
        : null;
    await runGrpo(context, folder, optimizer, state, progress, runEval, context.rollout, publish, loop, plan);
    refuseAllInvalid(state);
    state.phase = 'done';
    await save();
  }
  await checkStop();
  const evalAfter = await evaluateNow();
  folder.logMetrics({ step: state.step, phase: 'grpo', ...evalAfter });
  await options.onEvaluate?.({ step: state.step, ...evalAfter });
  progress.message(`held-out accuracy after GRPO: ${(evalAfter['eval/accuracy'] * 100).toFixed(1)}%`);
  progress.finish();
  const previous = folder.readSummary();
  folder.writeSummary({
    ...previous,
    status: 'finished',
    steps: state.step,
    evalBefore: state.evalBefore,
    evalAfter,
    wallSeconds: ((previous.wallSeconds as number | undefined) ?? 0) + (Date.now() - started) / 1000,
    finalCheckpoint: join(folder.checkpointsDirectory, `step-${state.step}`),
  });
  return {
    runDirectory: folder.directory,
    evalBefore: state.evalBefore as EvaluationResult | null,
    evalAfter,
    steps: state.step,
  };
}

async function runGrpo(
  context: RunContext,
  folder: RunFolder,
  optimizer: AdamW,
  state: TrainerState,
  progress: ProgressReporter,
  runEval: () => Promise<EvaluationResult>,
  rollout: RolloutFn,
  publish: (() => Promise<void>) | null,
  loop: GrpoLoopHooks,
  plan: LoopPlan,
): Promise<void> {
  const { model, algorithm: bound } = context;
  const { save, checkStop } = loop;
  // β = 0 needs no reference model, and none is built. Otherwise the reference is the policy at
  // GRPO start, saved once beside the checkpoints so a resumed run uses the same one. With LoRA it
  // is the base model, i.e. the policy with its adapters off: the same weights, no second copy.
  const reference = () => (model.adapters ? model.withoutAdapters() : referenceFor(context, folder, state));
  // A vision-language reference is the whole model (its connector too), its language model the reference.
  // A part that reads the reference's log-probs itself (`referenceLogprobs`, TRPA; `referenceTokenLogprobs`,
  // GRPO-CARE) needs one at β = 0 too.
  const needsReference =
    bound.klCoefficient > 0 || bound.needs.has('referenceLogprobs') || bound.needs.has('referenceTokenLogprobs');
  const visionReference = needsReference && context.vision ? visionReferenceFor(context, folder, state) : null;
  const referenceModel = needsReference ? (visionReference?.language ?? reference()) : null;
  if (plan.referenceSync) loop.movedReference.model = referenceModel; // checkpoints keep it as it moves
  const environment = createStepEnvironment({ ...context, rollout }, referenceModel);
  if (visionReference) environment.referenceRows = (rows) => withConnector(rows, visionReference);
  const settings = environment.settings;
  const reportedFailures = new Set<string>();
  while (state.phaseStep < plan.grpo.steps && !loop.stop.requested) {
    await checkStop();
    const stepStart = Date.now();
    const seed = stepSeed(plan.seed, state.step);
    const publishStart = Date.now();
    await publish?.();
    const publishSeconds = (Date.now() - publishStart) / 1000;
    // 1-3. Prompts, rollout, score, refill, advantages, loss mask, training rows (grpo-step.ts).
    const prepared = await prepareGrpoStep(
      environment,
      state,
      new Random(seed),
      { ...plan.grpo.rollout, seed },
      state.phaseStep,
    );
    // The rollout is most of a step: a stop asked for during it lands here, before any weight changes.
    await checkStop();
    // 4. Optimisation: μ passes over the kept samples with the stored old logprobs.
    optimizer.learningRate = learningRateAt(plan.grpo.schedule, state.phaseStep);
    const trainStart = Date.now();
    let stepMetrics: Record<string, number> = {};
    let applied = true;
    const passes: Record<string, number>[] = [];
    for (let iteration = 0; iteration < plan.grpo.iterations && prepared.training.rows.length > 0; iteration++) {
      // LoRA dropout masks from the step's seed and the pass, so each of the μ passes drops anew.
      const outcome = policyStep(bound, settings, model, optimizer, prepared.training, combineSeeds(seed, iteration));
      stepMetrics = outcome.metrics;
      passes.push(outcome.metrics);
      applied &&= outcome.applied;
    }
    countSkippedStep(state, applied, plan.maxSkippedSteps);
    reportRewardFailures(prepared.firstRound, state, progress, reportedFailures, plan.maxSkippedSteps);
    warnEntropyFilteredAll(bound, stepMetrics, state.step + 1, progress, reportedFailures);
    recordStepState(bound, state, prepared, passes);
    const trainSeconds = (Date.now() - trainStart) / 1000;
    state.step++;
    state.phaseStep++;
    if (plan.referenceSync && referenceModel && state.phaseStep % plan.referenceSync.every === 0)
      moveReference(referenceModel, model, plan.referenceSync.mixupAlpha);
    // 5. Log, evaluate, checkpoint.
    const tokens = prepared.training.rows.reduce((total, s) => total + s.promptIds.length + s.completionIds.length, 0);
    const first = prepared.firstRound;
    const record: Record<string, number> = {
      ...rewardLogMetrics(first),
      ...domainMetrics(first),
      ...completionMetrics(first),
      ...agentMetrics(first),
      ...prepared.metrics,
      ...stepMetrics,
      lr: optimizer.learningRate,
      skippedSteps: applied ? 0 : 1,
      'train/samples': prepared.training.rows.length,
      'train/groups': prepared.batch.prompts.length,
      'time/train': trainSeconds,
      ...(publish ? { 'time/publish_adapter': publishSeconds } : {}),
      'time/step': (Date.now() - stepStart) / 1000,
      tokensPerSecond: (tokens * plan.grpo.iterations) / Math.max(1e-9, trainSeconds),
    };
    if (plan.evaluateEvery > 0 && state.phaseStep % plan.evaluateEvery === 0 && state.phaseStep < plan.grpo.steps)
      Object.assign(record, await runEval());
    folder.logMetrics({ step: state.step, phase: 'grpo', ...record });
    if (plan.samplesEvery > 0 && state.phaseStep % plan.samplesEvery === 0)
      for (const record of sampleRecords(state.step, prepared, plan.samplesPerStep, context.tokenizer, folder))
        folder.logSamples(record);
    progress.update('grpo', state.phaseStep, plan.grpo.steps, record);
    if (plan.checkpointEvery > 0 && state.step % plan.checkpointEvery === 0) await save();
    await loop.onStep({ step: state.step, phase: 'grpo', ...record });
  }
}

// The checks that stop a run rather than let it train on nothing: non-finite steps in a row, and
// reward failures (printed once per distinct message, warned when a step had no valid sample,
// fatal after `limit` such steps in a row). They count in `TrainerState`, so they survive a resume.
//
// Is not: the reward runner (rewards/run.ts), which records the failures this reads.

/**
 * Reward failures are loud: each distinct message is printed once (and every failed cell is kept in
 * samples.jsonl), a step whose samples all lack a valid reward warns, and `limit` such steps in a row
 * stop the run — a broken reward must not train on nothing while the run reports success.
 */
export function reportRewardFailures(
  batch: StepBatch,
  state: TrainerState,
  progress: ProgressReporter,
  reported: Set<string>,
  limit: number,
): void {
  for (const errors of batch.errors) {
    for (const [reward, message] of Object.entries(errors ?? {})) {
      const key = `${reward}\u0000${message}`;
      if (reported.has(key)) continue;
      reported.add(key);
      progress.warn(
        `grpo: reward "${reward}" failed at step ${state.step + 1}: ${message} (its samples leave the loss; counted in reward/${reward}/invalid)`,
      );
    }
  }
  const noneValid = batch.samples.length > 0 && batch.valid.every((valid) => !valid);
  state.invalidSteps = noneValid ? (state.invalidSteps ?? 0) + 1 : 0;
  if (!noneValid) return;
  const firstError = Object.entries(batch.errors.find((errors) => errors !== null) ?? {})[0];
  const cause = firstError ? `reward "${firstError[0]}": ${firstError[1]}` : 'no reward applied';
  if (state.invalidSteps >= limit)
    throw new Error(
      `stopping: ${state.invalidSteps} consecutive steps had no sample with a valid reward (${cause}); fix the reward`,
    );
  progress.warn(
    `grpo: warning: step ${state.step + 1} had no sample with a valid reward (${cause}); nothing was learned`,
  );
}

/**
 * GTPO's entropy filter is absolute, as in the authors' code (`ENT_THRESHOLD = 0.7` in
 * winstonsmith1897/GTPO gtpo_training.py; they have no relative form): on a model whose completions
 * all have a higher mean token entropy it zeroes every advantage and the step learns nothing. Warned
 * once per run, with the model's entropy, so the user raises `algorithm.lossOptions.entropyThreshold`.
 */
export function warnEntropyFilteredAll(
  bound: BoundAlgorithm,
  metrics: Record<string, number>,
  step: number,
  progress: ProgressReporter,
  reported: Set<string>,
): void {
  if (metrics['loss/entropyFilteredFraction'] !== 1 || reported.has('gtpo-entropy-filter')) return;
  reported.add('gtpo-entropy-filter');
  const threshold = bound.loss.options.entropyThreshold ?? 0.7;
  const entropy =
    metrics.entropy === undefined ? '' : ` (the model's mean token entropy is ${metrics.entropy.toFixed(3)})`;
  progress.warn(
    `grpo: warning: at step ${step} gtpo's entropy filter zeroed every completion's advantage: each one's mean token entropy is above algorithm.lossOptions.entropyThreshold ${threshold}${entropy}, so nothing was learned; raise entropyThreshold above the model's entropy`,
  );
}

/**
 * At the end of GRPO: a run none of whose steps had a sample with a valid reward learned nothing,
 * however few steps it had (too few to reach the consecutive-step limit), so it fails instead of
 * finishing (summary.json `failed`, exit code 1 from the CLI).
 */
export function refuseAllInvalid(state: TrainerState): void {
  if (state.phaseStep === 0 || (state.invalidSteps ?? 0) < state.phaseStep) return;
  throw new Error(
    `failed: none of the ${state.phaseStep} GRPO steps had a sample with a valid reward, so nothing was learned; fix the reward (its errors are printed above and kept in samples.jsonl)`,
  );
}
