/**
 * Flow recipes: what `grpo train recipes/flow-*.ts` runs when the recipe's config has a `flow` field
 * (docs/image-models.md). A flow recipe is one of two jobs:
 * - `pretrain`: flow matching on the digits → `<run>/model/` (with samples.png), and the digit
 *   classifier the `confidence` reward needs → `<run>/classifier/`; metrics.jsonl logs the loss;
 * - `rl`: Flow-GRPO / MixGRPO / DiffusionNFT (`flow.rl.algorithm`) from `flow.model`, or from a small
 *   model pre-trained first into `<run>/pretrained/` when none is given (and a classifier trained into
 *   `<run>/classifier/` when the rewards need one and `flow.classifier` is absent).
 * Every field is checked (types by a strict schema, values by the jobs' own validators) before any
 * compute, and an error names the field (`flow.rl.steps: …`).
 *
 * Is: the schema, the checks and the sequence of jobs with the run's summary.json. Is not: the jobs
 * themselves (pretrain-run.ts, flow-run.ts) or the CLI (cli/train-command.ts dispatches here).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileDurably } from '../model/durable-files.js';
import { loadClassifier } from './digit-classifier.js';
import {
  type FlowRunOptions,
  defaultFlowRunOptions,
  loadImageFlowModel,
  runFlowGrpo,
  validateFlowRunOptions,
} from './flow-run.js';
import { checkRewardWeights } from './image-rewards.js';
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
    algorithm: z.enum(['flow-grpo', 'nft']),
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
}

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
  const needsClassifier = flow.job === 'pretrain' || 'confidence' in rl.rewards;
  const trainsClassifier = needsClassifier && !flow.classifier;
  if (flow.classifierTraining && !trainsClassifier)
    throw new Error(
      `flow.classifierTraining: unused, ${flow.classifier ? 'flow.classifier is given' : 'no reward needs a classifier'}`,
    );
  if (flow.job === 'pretrain' || !flow.model) withField('flow.pretrain', () => validateFlowPretrainOptions(pretrain));
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
  };
}

/** What a finished flow recipe reports. */
export interface FlowRecipeResult {
  /** pretrain: the final flow-matching loss; rl: the evaluation reward before and after. */
  summary: string;
}

/** Runs a resolved flow recipe into `runDirectory` (which must exist), with summary.json as `grpo train` writes it. */
export function runFlowRecipe(
  recipe: ResolvedFlowRecipe,
  runDirectory: string,
  log: (line: string) => void = () => {},
): FlowRecipeResult {
  const started = new Date();
  writeFileDurably(join(runDirectory, 'recipe.json'), JSON.stringify(recipe, null, 2) + '\n');
  const writeSummary = (fields: Record<string, unknown>) =>
    writeFileDurably(
      join(runDirectory, 'summary.json'),
      JSON.stringify({ task: `flow-${recipe.job}`, ...fields }, null, 2) + '\n',
    );
  writeSummary({ status: 'running', pid: process.pid, hostname: hostname(), startedAt: started.toISOString() });
  const wallSeconds = () => (Date.now() - started.getTime()) / 1000;
  try {
    const classifierFolder = recipe.trainsClassifier ? join(runDirectory, 'classifier') : recipe.classifier;
    const trainClassifierIfNeeded = (imageSize: number) => {
      if (!recipe.trainsClassifier) return;
      const { accuracy } = runClassifierTraining(join(runDirectory, 'classifier'), {
        imageSize,
        ...recipe.classifierTraining,
      });
      log(`classifier: held-out accuracy ${accuracy.toFixed(4)}`);
    };
    if (recipe.job === 'pretrain') {
      const metricsFile = join(runDirectory, 'metrics.jsonl');
      writeFileDurably(metricsFile, '');
      const { loss } = runFlowPretrain(join(runDirectory, 'model'), recipe.pretrain, log, metricsFile);
      trainClassifierIfNeeded(recipe.pretrain.imageSize);
      writeSummary({ status: 'finished', wallSeconds: wallSeconds(), finalLoss: loss });
      return { summary: `final flow-matching loss ${loss.toFixed(4)}; model in ${join(runDirectory, 'model')}` };
    }
    let model = recipe.model;
    if (model === null) {
      model = join(runDirectory, 'pretrained');
      log(`no flow.model given: pre-training one into ${model}`);
      runFlowPretrain(model, recipe.pretrain, log);
    }
    trainClassifierIfNeeded(loadImageFlowModel(model).config.imageSize);
    const { before, after } = runFlowGrpo({ model, classifier: classifierFolder, run: runDirectory }, recipe.rl, log);
    const evalBefore = { 'eval/reward/mean': before };
    const evalAfter = { 'eval/reward/mean': after };
    writeSummary({ status: 'finished', steps: recipe.rl.steps, evalBefore, evalAfter, wallSeconds: wallSeconds() });
    return { summary: `eval reward ${before.toFixed(4)} → ${after.toFixed(4)}` };
  } catch (error) {
    writeSummary({ status: 'failed', reason: (error as Error).message, endedAt: new Date().toISOString() });
    throw error;
  }
}
