/**
 * The trainer's typed, nested config: defaults and a doc line per field, validated with zod before
 * any compute, plus cross-field checks that explain each failure in one sentence naming the field.
 *
 * Is not: where algorithm variants are implemented — fields name registered functions
 * (algorithms/*), and presets.ts fills them in for the named recipes.
 */
import { z } from 'zod';

const positiveInteger = z.number().int().positive();
const nonNegativeInteger = z.number().int().nonnegative();

const modelSchema = z.object({
  /** A Hugging Face checkpoint folder; when absent a small model is created from scratch. */
  checkpoint: z.string().optional(),
  /** Sizes of a from-scratch model (ignored with `checkpoint`). */
  hiddenSize: positiveInteger.default(64),
  numLayers: positiveInteger.default(2),
  numHeads: positiveInteger.default(4),
  numKeyValueHeads: positiveInteger.optional(),
  intermediateSize: positiveInteger.optional(),
  /** Seed of the from-scratch initialisation. */
  initSeed: z.number().int().default(0),
}).strict();

const sftSchema = z.object({
  /** SFT optimiser steps before GRPO (0 = no SFT phase). */
  steps: nonNegativeInteger.default(0),
  /** Demonstrations per SFT step. */
  batchSize: positiveInteger.default(32),
  learningRate: z.number().positive().default(3e-3),
  /** Linear warmup steps of the SFT learning rate. */
  warmupSteps: nonNegativeInteger.default(20),
  /** Cosine-decay the SFT learning rate to 10% by the last step. */
  schedule: z.enum(['constant', 'linear', 'cosine']).default('cosine'),
  /** Training demonstrations drawn from the task (cycled). */
  examples: positiveInteger.default(4096),
}).strict();

const samplingSchema = z.object({
  /** Completions per prompt: the group size G. */
  groupSize: positiveInteger.default(8),
  maxNewTokens: positiveInteger.default(8),
  temperature: z.number().positive().default(1),
  topK: nonNegativeInteger.default(0),
  topP: z.number().gt(0).lte(1).default(1),
  minP: z.number().gte(0).lt(1).default(0),
}).strict();

const grpoSchema = z.object({
  /** GRPO optimiser steps (each on a fresh batch of prompts, times `iterations`). */
  steps: nonNegativeInteger.default(100),
  /** Prompts per step; each gets `sampling.groupSize` completions. */
  promptsPerStep: positiveInteger.default(16),
  /** μ: optimisation passes over each generated batch, using the stored old logprobs. */
  iterations: positiveInteger.default(1),
  /** Completions per forward/backward micro-batch (gradients accumulate across them). */
  microBatchSize: positiveInteger.default(64),
  learningRate: z.number().positive().default(1e-3),
  warmupSteps: nonNegativeInteger.default(0),
  schedule: z.enum(['constant', 'linear', 'cosine']).default('constant'),
  /** Training prompts drawn from the task (cycled). */
  examples: positiveInteger.default(4096),
}).strict();

const algorithmSchema = z.object({
  /** Registered advantage estimator (see `grpo list`). */
  advantage: z.string().default('grpo'),
  advantageOptions: z.record(z.string(), z.unknown()).default({}),
  /** Registered policy loss. */
  loss: z.string().default('ppo-clip'),
  /** Loss tunables: epsilonLow, epsilonHigh, dualClip, capMode, temperature, ... */
  lossOptions: z.record(z.string(), z.unknown()).default({}),
  /** Registered loss aggregation. */
  aggregation: z.string().default('token-mean'),
  /** β of the KL penalty against the initial model; 0 loads no reference model. */
  klCoefficient: z.number().nonnegative().default(0),
  /** Registered KL estimator used when klCoefficient > 0. */
  klEstimator: z.string().default('k3'),
  /** Registered group filter applied after scoring (e.g. drop-zero-variance), or null. */
  groupFilter: z.string().nullable().default(null),
  /** With a group filter: extra generation rounds allowed to refill dropped groups per step. */
  maxRefills: nonNegativeInteger.default(2),
  /** Drop completions cut off by maxNewTokens from the loss (TRL mask_truncated_completions). */
  maskTruncated: z.boolean().default(false),
}).strict();

const optimizerSchema = z.object({
  beta1: z.number().gte(0).lt(1).default(0.9),
  beta2: z.number().gte(0).lt(1).default(0.99),
  epsilon: z.number().positive().default(1e-8),
  weightDecay: z.number().nonnegative().default(0),
  /** Global gradient-norm clip (0 = off). */
  maxGradNorm: z.number().nonnegative().default(1),
  /** Consecutive non-finite steps tolerated before the run stops. */
  maxSkippedSteps: positiveInteger.default(5),
}).strict();

const rewardSchema = z.object({
  /** A built-in reward factory name (see `grpo list`) or a task reward name. */
  name: z.string(),
  weight: z.number().default(1),
  options: z.record(z.string(), z.unknown()).default({}),
}).strict();

const evaluationSchema = z.object({
  /** Held-out examples scored at each evaluation. */
  examples: positiveInteger.default(200),
  /** Evaluate every N GRPO steps (0 = only before and after). */
  every: nonNegativeInteger.default(0),
  /** k of pass@k (sampled at the GRPO temperature); 0 = skip. */
  passAtK: nonNegativeInteger.default(0),
}).strict();

const loggingSchema = z.object({
  runsDirectory: z.string().default('runs'),
  /** Run folder name; default: a timestamp plus the task name. */
  runName: z.string().optional(),
  /** Write samples.jsonl every N GRPO steps (0 = never). */
  samplesEvery: nonNegativeInteger.default(1),
  /** Prompt groups written per sample step. */
  samplesPerStep: positiveInteger.default(2),
  /** Print a line (or redraw the bar) every N steps. */
  printEvery: positiveInteger.default(10),
}).strict();

const checkpointSchema = z.object({
  /** Save every N optimiser steps (0 = only at phase ends). */
  every: nonNegativeInteger.default(50),
  /** Keep the N most recent step checkpoints (older ones are deleted). */
  keepLast: positiveInteger.default(2),
}).strict();

export const trainerConfigSchema = z.object({
  /** Built-in task providing prompts, demonstrations, rewards and evaluation. */
  task: z.string().default('addition'),
  taskOptions: z.record(z.string(), z.unknown()).default({}),
  /** Named recipe whose algorithm settings fill in anything the config leaves out. */
  preset: z.string().optional(),
  seed: z.number().int().default(0),
  model: modelSchema.default(() => modelSchema.parse({})),
  sft: sftSchema.default(() => sftSchema.parse({})),
  sampling: samplingSchema.default(() => samplingSchema.parse({})),
  grpo: grpoSchema.default(() => grpoSchema.parse({})),
  algorithm: algorithmSchema.default(() => algorithmSchema.parse({})),
  optimizer: optimizerSchema.default(() => optimizerSchema.parse({})),
  /** Rewards replacing the task's own; empty = the task's rewards. */
  rewards: z.array(rewardSchema).default([]),
  evaluation: evaluationSchema.default(() => evaluationSchema.parse({})),
  logging: loggingSchema.default(() => loggingSchema.parse({})),
  checkpoint: checkpointSchema.default(() => checkpointSchema.parse({})),
}).strict();

export type TrainerConfig = z.infer<typeof trainerConfigSchema>;
export type TrainerConfigInput = z.input<typeof trainerConfigSchema>;

/** Names the registries know, for the cross-field checks (filled by the caller to avoid an import cycle). */
export interface KnownNames {
  advantage: string[];
  loss: string[];
  aggregation: string[];
  klEstimator: string[];
  groupFilter: string[];
  task: string[];
}

function path(issue: { path: PropertyKey[] }): string {
  return issue.path.map(String).join('.') || '(root)';
}

/** Parses and checks a config; every problem is one sentence naming the field. Throws listing all. */
export function validateConfig(input: unknown, known: KnownNames): TrainerConfig {
  const parsed = trainerConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `- ${path(issue)}: ${issue.message}`);
    throw new Error(`invalid config:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  const problems: string[] = [];
  const checkName = (field: string, value: string | null, names: string[], kind: string): void => {
    if (value !== null && !names.includes(value)) problems.push(`- ${field}: unknown ${kind} "${value}"; known: ${names.join(', ')}`);
  };
  checkName('algorithm.advantage', config.algorithm.advantage, known.advantage, 'advantage estimator');
  checkName('algorithm.loss', config.algorithm.loss, known.loss, 'policy loss');
  checkName('algorithm.aggregation', config.algorithm.aggregation, known.aggregation, 'loss aggregation');
  checkName('algorithm.klEstimator', config.algorithm.klEstimator, known.klEstimator, 'KL estimator');
  checkName('algorithm.groupFilter', config.algorithm.groupFilter, known.groupFilter, 'group filter');
  checkName('task', config.task, known.task, 'task');
  const completions = config.grpo.promptsPerStep * config.sampling.groupSize;
  if (config.grpo.microBatchSize > completions) {
    problems.push(`- grpo.microBatchSize: ${config.grpo.microBatchSize} is larger than the ${completions} completions of a step (promptsPerStep × sampling.groupSize)`);
  } else if (completions % config.grpo.microBatchSize !== 0) {
    problems.push(`- grpo.microBatchSize: ${config.grpo.microBatchSize} does not divide the ${completions} completions of a step (promptsPerStep ${config.grpo.promptsPerStep} × groupSize ${config.sampling.groupSize})`);
  }
  if (config.model.numKeyValueHeads && config.model.numHeads % config.model.numKeyValueHeads !== 0) {
    problems.push(`- model.numKeyValueHeads: ${config.model.numKeyValueHeads} does not divide model.numHeads ${config.model.numHeads}`);
  }
  if (config.model.hiddenSize % config.model.numHeads !== 0) {
    problems.push(`- model.hiddenSize: ${config.model.hiddenSize} is not a multiple of model.numHeads ${config.model.numHeads}`);
  }
  if (config.sampling.groupSize < 2 && ['grpo', 'rloo', 'dr-grpo'].includes(config.algorithm.advantage)) {
    problems.push(`- sampling.groupSize: ${config.algorithm.advantage} compares completions within a group, so it needs at least 2 (got ${config.sampling.groupSize})`);
  }
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
  return config;
}
