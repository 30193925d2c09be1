/**
 * Flow recipes: what `grpo train recipes/flow-*.ts` runs when the recipe's config has a `flow` field
 * (docs/image-models.md). A flow recipe is one of two jobs:
 * - `pretrain`: flow matching on the digits → `<run>/model/` (with samples.png), and the digit
 *   classifier the `confidence` reward needs → `<run>/classifier/`; metrics.jsonl logs the loss;
 * - `rl`: Flow-GRPO / MixGRPO / GRPO-Guard / TempFlow-GRPO / BranchGRPO / DiffusionNFT (`flow.rl.algorithm`) from `flow.model`, or from a small
 *   model pre-trained first into `<run>/pretrained/` when none is given (and a classifier trained into
 *   `<run>/classifier/` when the rewards need one and `flow.classifier` is absent).
 * Every field is checked (types by a strict schema, values by the jobs' own validators) before any
 * compute, and an error names the field (`flow.rl.steps: …`). The run folder is a text run's
 * (run/run-folder.ts): config.json is the resolved recipe in this schema (flowRunConfig), so
 * `--set` and `--resume` work as for text runs; the job's loop checkpoints every `checkpoint.every`
 * steps and resumes from the newest sound checkpoint; summary.json's status is running, then
 * finished, failed or interrupted (run/run-status.ts).
 *
 * Is: the schema, the checks, config.json's form and the sequence of jobs with the run's status.
 * Is not: the jobs themselves (pretrain-run.ts, flow-run.ts) or the CLI (cli/train-flow.ts, which
 * cli/train-command.ts hands a flow config to). The text config (config/config.ts) is a separate
 * schema: the two share `checkpoint` and `logging` only.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { RunFolder } from '../run/run-folder.js';
import { markFailed, markInterrupted, markRunning, RunInterrupted } from '../run/run-status.js';
import { branchTreeDefaults } from './branch-grpo.js';
import { loadClassifier } from './digit-classifier.js';
import type { FlowCheckpointing } from './flow-checkpoint.js';
import {
  type FlowRunOptions,
  defaultFlowRunOptions,
  loadImageFlowModel,
  runFlowGrpo,
  validateFlowRunOptions,
} from './flow-run.js';
import { checkRewardWeights, rewardsNeedClassifier } from './image-rewards.js';
import {
  type FlowPretrainOptions,
  defaultFlowPretrainOptions,
  runClassifierTraining,
  runFlowPretrain,
  validateFlowPretrainOptions,
} from './pretrain-run.js';

const number = z.number();
const pretrainSchema = z
  .object({
    steps: number,
    batchSize: number,
    learningRate: number,
    hiddenSize: number,
    numBlocks: number,
    imageSize: number,
    seed: number,
  })
  .partial()
  .strict();
const classifierSchema = z.object({ epochs: number, seed: number }).partial().strict();
const windowSchema = z
  .object({ size: number, shiftEvery: number.optional(), stride: number.optional(), rollBack: z.boolean().optional() })
  .strict();
const rlSchema = z
  .object({
    algorithm: z.enum(['flow-grpo', 'grpo-guard', 'tempflow-grpo', 'branch-grpo', 'nft']),
    nftBeta: number,
    steps: number,
    promptsPerStep: number,
    groupSize: number,
    sampler: z.string(),
    noiseLevel: number,
    samplingSteps: number,
    shift: number,
    trainFraction: number,
    timestepSelection: z.enum(['first', 'dance']),
    clipRange: number,
    advantageClip: number,
    klCoefficient: number,
    advantageEstimator: z.string(),
    innerSteps: number,
    maxGradNorm: number,
    learningRate: number,
    rewards: z.record(z.string(), number),
    seed: number,
    evalEvery: number,
    evalPerClass: number,
    window: windowSchema.nullable(),
    branch: z
      .object({
        splitPoints: z.array(number),
        noiseScale: number.optional(),
        prunedDepths: z.array(number).optional(),
        fusion: z.enum(['mean', 'probability']).optional(),
        slideEvery: number.optional(),
        slideStopDepth: number.nullable().optional(),
        widthPruning: z.enum(['none', 'per-branch', 'best-worst']).optional(),
        widthRatio: number.optional(),
        pruningStepFraction: number.optional(),
      })
      .strict()
      .nullable(),
  })
  .partial()
  .strict();
/** The fields of `flow.rl` (what `grpo list` may name as options). */
export const flowRlFields: readonly string[] = Object.keys(rlSchema.shape);

const flowRecipeSchema = z
  .object({
    flow: z
      .object({
        job: z.enum(['pretrain', 'rl']),
        /** rl: the pre-trained flow model folder; absent or null = pre-train one first with `pretrain`. */
        model: z.string().nullable().optional(),
        /** rl: the digit classifier folder; absent or null = train one first when a reward needs it. */
        classifier: z.string().nullable().optional(),
        pretrain: pretrainSchema.optional(),
        classifierTraining: classifierSchema.optional(),
        rl: rlSchema.optional(),
      })
      .strict(),
    /** The same section as a text run's config: save every N steps (0: only at the end), keep the newest keepLast. */
    checkpoint: z.object({ every: number, keepLast: number }).partial().strict().optional(),
    logging: z.object({ runName: z.string().optional(), runsDirectory: z.string().optional() }).strict().optional(),
  })
  .strict();

/** A flow recipe as written (every field but `flow.job` optional); the default export of recipes/flow-*.ts. */
export type FlowRecipeConfig = z.input<typeof flowRecipeSchema>;

/** A checked flow recipe with every default filled in. */
export interface ResolvedFlowRecipe {
  job: 'pretrain' | 'rl';
  model: string | null;
  classifier: string | null;
  pretrain: FlowPretrainOptions;
  classifierTraining: { epochs: number; seed: number };
  rl: FlowRunOptions;
  /** Whether the run trains its own classifier (the rewards need one and none is given). */
  trainsClassifier: boolean;
  /** Checkpoints of the job's loop (pretrain steps, or RL steps): every N steps (0: only at the end), keepLast. */
  checkpoint: { every: number; keepLast: number };
}

/** A text run's defaults (config/config.ts `checkpoint`). */
const defaultCheckpoint = { every: 50, keepLast: 2 };

/** True when a recipe's config is a flow recipe (it has a `flow` field). */
export const isFlowRecipe = (config: Record<string, unknown>): boolean => config.flow !== undefined;

/** Runs `check`, prefixing any error with the field path it concerns ("steps must …" → "flow.rl.steps must …"). */
function withField(field: string, check: () => void): void {
  try {
    check();
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(/^[a-z][A-Za-z.]*[ :]/.test(message) ? `${field}.${message}` : `${field}: ${message}`);
  }
}

/** Parses and checks a flow recipe's config; throws one sentence naming the field, before any compute. */
export function resolveFlowRecipe(config: Record<string, unknown>): ResolvedFlowRecipe {
  const parsed = flowRecipeSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.map(String).join('.') || '(root)';
    const message =
      issue.code === 'unrecognized_keys'
        ? `not a setting of a flow recipe: ${issue.keys.join(', ')} (flow recipes take flow.* and logging.runName/runsDirectory)`
        : issue.message;
    throw new Error(`${where}: ${message}`);
  }
  const { flow } = parsed.data;
  const window = flow.rl?.window;
  const rl: FlowRunOptions = {
    ...defaultFlowRunOptions,
    ...flow.rl,
    window: window ? { shiftEvery: 25, stride: 1, rollBack: false, ...window } : null,
    branch: flow.rl?.branch ? { ...branchTreeDefaults, prunedDepths: [], ...flow.rl.branch } : null,
  };
  const pretrain = { ...defaultFlowPretrainOptions, ...flow.pretrain };
  const classifierTraining = { epochs: 5, seed: 1, ...flow.classifierTraining };
  if (flow.job === 'pretrain') {
    for (const field of ['model', 'classifier', 'rl'] as const)
      if (flow[field] !== undefined) throw new Error(`flow.${field}: only a job "rl" takes it, this job is "pretrain"`);
  } else {
    if (flow.model && flow.pretrain) throw new Error('flow.pretrain: unused, flow.model is given (drop one of them)');
    withField('flow.rl', () => validateFlowRunOptions(rl));
    withField('flow.rl', () => checkRewardWeights(rl.rewards, true));
  }
  const needsClassifier = flow.job === 'pretrain' || rewardsNeedClassifier(rl.rewards);
  const trainsClassifier = needsClassifier && !flow.classifier;
  if (flow.classifierTraining && !trainsClassifier)
    throw new Error(
      `flow.classifierTraining: unused, ${flow.classifier ? 'flow.classifier is given' : 'no reward needs a classifier'}`,
    );
  if (flow.job === 'pretrain' || !flow.model) withField('flow.pretrain', () => validateFlowPretrainOptions(pretrain));
  const checkpoint = { ...defaultCheckpoint, ...parsed.data.checkpoint };
  if (!Number.isInteger(checkpoint.every) || checkpoint.every < 0)
    throw new Error(`checkpoint.every: must be a whole number ≥ 0, got ${checkpoint.every}`);
  if (!Number.isInteger(checkpoint.keepLast) || checkpoint.keepLast < 1)
    throw new Error(`checkpoint.keepLast: must be a positive integer, got ${checkpoint.keepLast}`);
  if (!Number.isInteger(classifierTraining.epochs) || classifierTraining.epochs < 1)
    throw new Error(`flow.classifierTraining.epochs: must be a positive integer, got ${classifierTraining.epochs}`);
  // Cheap checks of the given folders (config and tensor shapes), so a wrong path fails before any compute.
  const imageSize = flow.model ? loadImageFlowModel(flow.model).config.imageSize : pretrain.imageSize;
  if (flow.classifier) {
    const classifierSize = loadClassifier(flow.classifier).config.imageSize;
    if (classifierSize !== imageSize)
      throw new Error(
        `flow.classifier: its images are ${classifierSize}×${classifierSize}, the model's ${imageSize}×${imageSize}`,
      );
  }
  return {
    job: flow.job,
    model: flow.model ?? null,
    classifier: flow.classifier ?? null,
    pretrain,
    classifierTraining,
    rl,
    trainsClassifier,
    checkpoint,
  };
}

/**
 * The config.json of a flow run: the resolved recipe (every default filled in) in the recipe's own
 * schema, with only the sections its job uses, so `grpo train --resume` reads it back through
 * resolveFlowRecipe as it reads a text run's config.
 */
export function flowRunConfig(
  recipe: ResolvedFlowRecipe,
  logging: { runName?: string; runsDirectory?: string } = {},
): FlowRecipeConfig {
  const rl = recipe.job === 'rl';
  return {
    flow: {
      job: recipe.job,
      ...(rl ? { model: recipe.model, classifier: recipe.classifier } : {}),
      ...(!rl || recipe.model === null ? { pretrain: recipe.pretrain } : {}),
      ...(recipe.trainsClassifier ? { classifierTraining: recipe.classifierTraining } : {}),
      ...(rl ? { rl: recipe.rl } : {}),
    },
    checkpoint: recipe.checkpoint,
    logging,
  };
}

/** What a finished flow recipe reports. */
export interface FlowRecipeResult {
  /** pretrain: the final flow-matching loss; rl: the evaluation reward before and after. */
  summary: string;
}

/** How runFlowRecipe runs: resume or not, the stop signal, and where lines go. */
export interface FlowRecipeRunOptions {
  resume?: boolean;
  restartDamaged?: boolean;
  /** Aborted (SIGINT/SIGTERM): the run stops at the next step boundary, summary.json says interrupted. */
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** Printed even in quiet runs (a damaged checkpoint skipped). */
  warn?: (line: string) => void;
}

/**
 * Runs a resolved flow recipe into `folder` (whose config.json the caller wrote), with summary.json's
 * status as for text runs: running, then finished, failed or interrupted (RunInterrupted is rethrown).
 * With `resume`: tidies what a kill left, keeps a finished pretrained/ or classifier/, and continues
 * the job's loop from its newest sound checkpoint.
 */
export async function runFlowRecipe(
  recipe: ResolvedFlowRecipe,
  folder: RunFolder,
  options: FlowRecipeRunOptions = {},
): Promise<FlowRecipeResult> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const runDirectory = folder.directory;
  const steps = recipe.job === 'pretrain' ? recipe.pretrain.steps : recipe.rl.steps;
  // As for text runs: a finished run is done unless resumed with more steps than it ran (`--set flow.rl.steps=N`).
  const previous = options.resume ? folder.readSummary() : {};
  if (previous.status === 'finished' && (previous.steps as number) >= steps) {
    log(`${runDirectory} finished already (step ${String(previous.steps)}); nothing to resume`);
    return { summary: `finished already: ${JSON.stringify(previous.evalAfter ?? { finalLoss: previous.finalLoss })}` };
  }
  if (options.resume) for (const note of folder.recover()) log(`recovered: ${note}`);
  markRunning(folder, `flow-${recipe.job}`);
  const checkpointing: FlowCheckpointing = {
    folder,
    ...recipe.checkpoint,
    resume: options.resume === true,
    restartDamaged: options.restartDamaged,
    signal: options.signal,
    warn: options.warn ?? ((line) => process.stderr.write(`${line}\n`)),
  };
  const finish = (fields: Record<string, unknown>) =>
    folder.writeSummary({
      ...folder.readSummary(),
      status: 'finished',
      ...fields,
      wallSeconds: (Date.now() - started) / 1000,
      endedAt: new Date().toISOString(),
    });
  try {
    const classifierFolder = recipe.trainsClassifier ? join(runDirectory, 'classifier') : recipe.classifier;
    const trainClassifierIfNeeded = (imageSize: number) => {
      // A classifier/ under its name is complete (written whole): a resume keeps it.
      if (!recipe.trainsClassifier || existsSync(join(runDirectory, 'classifier'))) return;
      const { accuracy } = runClassifierTraining(join(runDirectory, 'classifier'), {
        imageSize,
        ...recipe.classifierTraining,
      });
      log(`classifier: held-out accuracy ${accuracy.toFixed(4)}`);
    };
    if (recipe.job === 'pretrain') {
      const model = join(runDirectory, 'model');
      const { loss } = await runFlowPretrain(model, recipe.pretrain, log, checkpointing);
      trainClassifierIfNeeded(recipe.pretrain.imageSize);
      finish({ steps, finalLoss: loss });
      return { summary: `final flow-matching loss ${loss.toFixed(4)}; model in ${model}` };
    }
    let model = recipe.model;
    if (model === null) {
      model = join(runDirectory, 'pretrained');
      // Pre-training before RL has no checkpoints of its own: a kill during it redoes it, step-seeded, identically.
      if (!existsSync(model)) {
        log(`no flow.model given: pre-training one into ${model}`);
        await runFlowPretrain(model, recipe.pretrain, log);
      }
    }
    trainClassifierIfNeeded(loadImageFlowModel(model).config.imageSize);
    const { before, after } = await runFlowGrpo(
      { model, classifier: classifierFolder },
      folder,
      recipe.rl,
      log,
      checkpointing,
    );
    const evalBefore = { 'eval/reward/mean': before };
    const evalAfter = { 'eval/reward/mean': after };
    finish({ steps, evalBefore, evalAfter });
    return { summary: `eval reward ${before.toFixed(4)} → ${after.toFixed(4)}` };
  } catch (error) {
    if (error instanceof RunInterrupted) markInterrupted(folder, error);
    else markFailed(folder, error);
    throw error;
  }
}
