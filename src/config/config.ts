/**
 * The trainer's typed, nested config: defaults and a doc line per field, validated with zod before
 * any compute, plus cross-field checks that explain each failure in one sentence naming the field.
 *
 * Is not: where algorithm variants are implemented — fields name registered functions
 * (algorithms/*), and presets.ts fills them in for the named recipes.
 */
import { z } from 'zod';
import { agentSchema } from '../rollout/agent-config.js';
import { loraSchema } from './lora-config.js';
import { rolloutEngineProblems, rolloutEngineSchema } from '../rollout/rollout-engine-config.js';
import { fieldPath, hintedKeyLines } from './trl-names.js';
import { visionModelFields, visionProblems } from './vision-config.js';

const positiveInteger = z.number().int().positive();
const nonNegativeInteger = z.number().int().nonnegative();
/**
 * A size with an upper bound. The bounds are far above anything this CPU trainer can run, and
 * exist so that a typo (hiddenSize=4294967296, maxNewTokens=1e8) is refused here, naming the field,
 * instead of failing deep inside an allocation.
 */
const boundedInteger = (minimum: 0 | 1, maximum: number) =>
  z.number().int().min(minimum).max(maximum, `must be at most ${maximum}`);

const modelSchema = z
  .object({
    checkpoint: z
      .string()
      .optional()
      .describe('A Hugging Face checkpoint folder; when absent a small model is created from scratch.'),
    chatTemplate: z
      .string()
      .min(1)
      .default('auto')
      .describe(
        "How prompts are formatted in every phase: 'auto' (the checkpoint's chat template when it has one, else plain text), 'none' (plain text), a .jinja file, or the template text.",
      ),
    hiddenSize: boundedInteger(1, 4096)
      .default(64)
      .describe('Hidden width of a from-scratch model (ignored with `checkpoint`).'),
    numLayers: boundedInteger(1, 128).default(2).describe('Transformer blocks of a from-scratch model.'),
    numHeads: boundedInteger(1, 256).default(4).describe('Attention (query) heads of a from-scratch model.'),
    numKeyValueHeads: boundedInteger(1, 256)
      .optional()
      .describe('Key/value heads (GQA) of a from-scratch model; default numHeads.'),
    intermediateSize: boundedInteger(1, 16384)
      .optional()
      .describe('SwiGLU width of a from-scratch model; default 8/3 of hidden, rounded to 8.'),
    initSeed: z.number().int().default(0).describe('Seed of the from-scratch initialisation.'),
    recomputeActivations: z
      .enum(['selective', 'layers', 'none'])
      .default('selective')
      .describe(
        "What every training forward pass (SFT and GRPO, full fine-tuning or LoRA) keeps for backward; the gradients are the same in every mode. 'selective' (default): keep the linear layers' outputs and recompute only what needs no weight product (rope, head permutes and softmax attention between the q/k/v projections and o_proj; swiglu(gate, up) before down_proj; the RMSNorm outputs the projections read), about 40% fewer kept activations for a few percent more time. 'layers': each decoder layer keeps only its input and is rerun whole in backward (least memory, one more forward pass). 'none': keep everything.",
      ),
    ...visionModelFields,
  })
  .strict();

const sftSchema = z
  .object({
    steps: nonNegativeInteger.default(0).describe('SFT optimiser steps before GRPO (0 = no SFT phase).'),
    batchSize: boundedInteger(1, 4096).default(32).describe('Demonstrations per SFT step.'),
    learningRate: z.number().positive().default(3e-3).describe('Peak SFT learning rate (AdamW).'),
    warmupSteps: nonNegativeInteger.default(20).describe('Linear warmup steps of the SFT learning rate.'),
    schedule: z
      .enum(['constant', 'linear', 'cosine'])
      .default('cosine')
      .describe('Cosine-decay the SFT learning rate to 10% by the last step.'),
    examples: boundedInteger(1, 1_000_000)
      .default(4096)
      .describe('Training demonstrations drawn from the task (cycled).'),
    packLength: boundedInteger(0, 32768)
      .default(0)
      .describe(
        'Pack demonstrations into rows of this many tokens (document-masked attention, positions restart); 0 = one per row, padded.',
      ),
    thoughtDropout: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe(
        "TON's thought dropout: the probability that a demonstration's `<think>…</think>` becomes the empty thought `<think>\\n\\n</think>` (0 = off).",
      ),
  })
  .strict();

const samplingSchema = z
  .object({
    groupSize: boundedInteger(1, 1024).default(8).describe('Completions per prompt: the group size G.'),
    maxNewTokens: boundedInteger(1, 32768)
      .default(8)
      .describe('Completion length limit; a completion cut here counts as truncated.'),
    temperature: z
      .number()
      .positive()
      .default(1)
      .describe('Sampling temperature; training logprobs use the same logits / temperature.'),
    topK: nonNegativeInteger.default(0).describe('Keep the k most likely tokens when sampling (0 = off).'),
    topP: z.number().gt(0).lte(1).default(1).describe('Nucleus sampling mass (1 = off).'),
    minP: z.number().gte(0).lt(1).default(0).describe('Drop tokens below minP × the top probability (0 = off).'),
  })
  .strict();

const grpoSchema = z
  .object({
    steps: nonNegativeInteger
      .default(100)
      .describe('GRPO optimiser steps (each on a fresh batch of prompts, times `iterations`).'),
    promptsPerStep: boundedInteger(1, 4096)
      .default(16)
      .describe('Prompts per step; each gets `sampling.groupSize` completions.'),
    iterations: boundedInteger(1, 64)
      .default(1)
      .describe('μ: optimisation passes over each generated batch, using the stored old logprobs.'),
    microBatchSize: boundedInteger(1, 4096)
      .default(64)
      .describe(
        "Completions per forward/backward micro-batch (gradients accumulate across them). Left unset, the default (64; 8 with a checkpoint) is lowered to the largest divisor of the step's completions (promptsPerStep × groupSize); a value you set must divide them.",
      ),
    learningRate: z.number().positive().default(1e-3).describe('Peak GRPO learning rate (AdamW).'),
    warmupSteps: nonNegativeInteger.default(0).describe('Linear warmup steps of the GRPO learning rate.'),
    schedule: z
      .enum(['constant', 'linear', 'cosine'])
      .default('constant')
      .describe('GRPO learning-rate schedule after warmup.'),
    examples: boundedInteger(1, 1_000_000).default(4096).describe('Training prompts drawn from the task (cycled).'),
    drawTogether: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        'A dataset column: rows sharing its value are drawn into the same step, all of them (a question and its rephrasing, for the co-reward reward); promptsPerStep must be a multiple of the rows per value. null = each prompt drawn on its own.',
      ),
    groundTruthCompletion: z
      .string()
      .min(1)
      .max(100_000)
      .nullable()
      .default(null)
      .describe(
        "TempSamp-R1's ground-truth injection: the last completion of every group is replaced by this text, with each {column} filled from the row (e.g. '<answer> {answer} </answer>'), its old log-probs the policy's before the update; it is scored and normalised with its group. Single-turn rollouts only. null = off.",
      ),
  })
  .strict();

const mismatchCorrectionSchema = z
  .object({
    mode: z
      .enum(['truncate', 'mask'])
      .default('truncate')
      .describe("'truncate' (TIS): weight min(ratio, C); 'mask' (MIS): drop tokens or sequences past C."),
    level: z
      .enum(['token', 'sequence'])
      .default('token')
      .describe('Ratio per token, or the product over the sequence.'),
    cap: z.number().positive().default(2).describe('The cap C.'),
  })
  .strict();

const referenceSyncSchema = z
  .object({
    every: z
      .number()
      .int()
      .positive()
      .default(512)
      .describe('Mix the policy into the reference after every this many GRPO steps (TRL ref_model_sync_steps).'),
    mixupAlpha: z
      .number()
      .gt(0)
      .max(1)
      .default(0.6)
      .describe('α of π_ref ← (1 − α)·π_ref + α·π_θ (TRL ref_model_mixup_alpha; 1 copies the policy).'),
  })
  .strict();

const algorithmSchema = z
  .object({
    advantage: z.string().default('grpo').describe('Registered advantage estimator (see `grpo list`).'),
    advantageOptions: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The estimator's options, checked against its schema (an unknown key lists the known ones)."),
    loss: z.string().default('ppo-clip').describe('Registered policy loss.'),
    lossOptions: z
      .record(z.string(), z.unknown())
      .default({})
      .describe(
        "The loss's options (epsilonLow, epsilonHigh, dualClip, capMode, temperature, topEntropyQuantile, ...), checked against its schema.",
      ),
    aggregation: z.string().default('token-mean').describe('Registered loss aggregation.'),
    klCoefficient: z
      .number()
      .nonnegative()
      .default(0)
      .describe('β of the KL penalty against the initial model; 0 loads no reference model.'),
    klEstimator: z
      .string()
      .default('k3')
      .describe('Registered KL estimator (in the loss; KL in the reward always uses k1, Σ_t log π − log π_ref).'),
    klPlacement: z
      .enum(['loss', 'reward'])
      .default('loss')
      .describe(
        "'loss': β·KL per token in the loss (GRPO); 'reward': r − β·Σ_t k1 before advantages (RLOO/PPO kl_in_reward).",
      ),
    entropyCoefficient: z
      .number()
      .nonnegative()
      .default(0)
      .describe('Entropy bonus λ_H: the loss gets −λ_H·H_t per token, aggregated like the policy loss (0 = off).'),
    groupFilter: z
      .string()
      .nullable()
      .default(null)
      .describe('Registered group filter applied after scoring (e.g. dynamic-sampling), or null.'),
    groupFilterOptions: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The group filter's options, checked against its schema."),
    maxRefills: nonNegativeInteger
      .default(2)
      .describe('With a group filter: extra generation rounds allowed to refill dropped groups per step.'),
    maskTruncated: z
      .boolean()
      .default(false)
      .describe('Drop completions cut off by maxNewTokens from the loss (TRL mask_truncated_completions).'),
    promptSelector: z
      .string()
      .nullable()
      .default(null)
      .describe(
        'Registered prompt selector choosing prompts (and rollouts per prompt) from per-prompt success posteriors kept in trainer state, or null (uniform draw).',
      ),
    promptSelectorOptions: z
      .record(z.string(), z.unknown())
      .default({})
      .describe("The prompt selector's options, checked against its schema."),
    referenceSync: referenceSyncSchema
      .nullable()
      .default(null)
      .describe(
        'Move the reference model toward the policy during GRPO (TRL sync_ref_model, TR-DPO): every `every` steps π_ref ← (1 − α)·π_ref + α·π_θ; checkpoints keep the moved reference. null = the reference stays the policy at GRPO start.',
      ),
    mismatchCorrection: mismatchCorrectionSchema
      .nullable()
      .default(null)
      .describe(
        'Rollout/trainer mismatch correction: the trainer recomputes π_old with its own forward pass and weights tokens by π_old/π_rollout (null = off).',
      ),
    turnCredit: z
      .object({
        name: z.string().describe('Registered turn-credit estimator (see `grpo list`).'),
        options: z
          .record(z.string(), z.unknown())
          .default({})
          .describe("The estimator's options, checked against its schema."),
      })
      .strict()
      .nullable()
      .default(null)
      .describe(
        'Multi-turn episodes: one advantage per model turn from a registered turn-credit estimator (docs/turn-credit.md), given to every loss token of that turn; null = the episode-level advantage on every token.',
      ),
  })
  .strict();

const optimizerSchema = z
  .object({
    beta1: z.number().gte(0).lt(1).default(0.9).describe('AdamW first-moment decay.'),
    beta2: z.number().gte(0).lt(1).default(0.99).describe('AdamW second-moment decay.'),
    epsilon: z.number().positive().default(1e-8).describe('AdamW denominator epsilon.'),
    weightDecay: z
      .number()
      .nonnegative()
      .default(0)
      .describe('Decoupled weight decay on matrices (norms and biases are exempt).'),
    maxGradNorm: z.number().nonnegative().default(1).describe('Global gradient-norm clip (0 = off).'),
    maxSkippedSteps: positiveInteger
      .default(5)
      .describe('Consecutive non-finite steps tolerated before the run stops.'),
  })
  .strict();

const rewardSchema = z
  .object({
    name: z.string().describe('A built-in reward factory name (see `grpo list`) or a task reward name.'),
    weight: z.number().default(1).describe('Weight in the combined reward; 0 = logged metric only.'),
    options: z.record(z.string(), z.unknown()).default({}).describe('Options of the reward factory (validated by it).'),
  })
  .strict();

const evaluationSchema = z
  .object({
    examples: boundedInteger(1, 100_000).default(200).describe('Held-out examples scored at each evaluation.'),
    every: nonNegativeInteger.default(0).describe('Evaluate every N GRPO steps (0 = only before and after).'),
    passAtK: boundedInteger(0, 1024).default(0).describe('k of pass@k (sampled at the GRPO temperature); 0 = skip.'),
  })
  .strict();

const loggingSchema = z
  .object({
    runsDirectory: z.string().default('runs').describe('Folder that holds run folders.'),
    runName: z.string().optional().describe('Run folder name; default: a timestamp plus the task name.'),
    samplesEvery: nonNegativeInteger.default(1).describe('Write samples.jsonl every N GRPO steps (0 = never).'),
    samplesPerStep: positiveInteger.default(2).describe('Prompt groups written per sample step.'),
    printEvery: positiveInteger.default(10).describe('Print a line (or redraw the bar) every N steps.'),
    reportTo: z
      .array(z.string())
      .default([])
      .describe(
        "Where metrics go besides metrics.jsonl (TRL's report_to): 'tensorboard' writes every record's numbers as TensorBoard scalars to tensorboard/ in the run folder (`tensorboard --logdir runs`). wandb is refused: its JavaScript SDK cannot log offline; upload the TensorBoard files with `wandb sync`.",
      ),
  })
  .strict();

/** The `logging.reportTo` targets, and why a known-but-refused one is refused. */
const reportTargets = ['tensorboard'];
const refusedReportTargets: Record<string, string> = {
  wandb:
    "wandb's JavaScript SDK (@wandb/sdk) needs its server even with WANDB_MODE=offline and keeps no offline run to sync; report to 'tensorboard' instead and upload with `wandb sync runs/<run>/tensorboard`",
};

/** One problem line per `logging.reportTo` entry that is not a known target. */
function reportToProblems(reportTo: readonly string[]): string[] {
  return reportTo
    .filter((target) => !reportTargets.includes(target))
    .map(
      (target) =>
        `- logging.reportTo: ${refusedReportTargets[target] ?? `unknown target ${JSON.stringify(target)}`}; known: ${reportTargets.join(', ')}`,
    );
}

const checkpointSchema = z
  .object({
    every: nonNegativeInteger.default(50).describe('Save every N optimiser steps (0 = only at phase ends).'),
    keepLast: positiveInteger.default(2).describe('Keep the N most recent step checkpoints (older ones are deleted).'),
  })
  .strict();

const rewardWorkersSchema = z
  .object({
    threads: nonNegativeInteger
      .default(0)
      .describe(
        "Worker threads running the rewards (0 = on the training thread, where only async work can be timed out). In workers every call is stopped at timeoutMs, even a synchronous loop, and fails as `timeout` naming the reward. Each worker rebuilds the rewards, so they must come from names (built-in or task rewards) or a recipe file run by `grpo train`; rewards passed as functions from code cannot cross threads. verl's reward_model.reward_manager=prime (a process pool with a timeout) is the nearest; TRL has none.",
      ),
    timeoutMs: positiveInteger
      .default(30_000)
      .describe(
        'Per reward call (ms), on the training thread or in workers; a call past it fails as `timeout`, never 0.',
      ),
    memoryMb: positiveInteger
      .default(1024)
      .describe(
        'Heap limit of each reward worker (MB); a call that runs out fails as `error` and its worker is replaced.',
      ),
  })
  .strict();

export const trainerConfigSchema = z
  .object({
    task: z
      .string()
      .default('addition')
      .describe('Built-in task providing prompts, demonstrations, rewards and evaluation.'),
    taskOptions: z
      .record(z.string(), z.unknown())
      .default({})
      .describe('Options of the task factory (e.g. teacherCarryErrorRate for addition).'),
    preset: z
      .string()
      .optional()
      .describe('Named recipe whose algorithm settings fill in anything the config leaves out.'),
    seed: z
      .number()
      .int()
      .default(0)
      .describe('Seed of data order, sampling and evaluation; same seed + config + backend = same run.'),
    model: modelSchema.default(() => modelSchema.parse({})).describe('The policy model.'),
    sft: sftSchema.default(() => sftSchema.parse({})).describe('Supervised warm start on task demonstrations.'),
    sampling: samplingSchema.default(() => samplingSchema.parse({})).describe('Group sampling for rollouts.'),
    grpo: grpoSchema.default(() => grpoSchema.parse({})).describe('The GRPO phase.'),
    algorithm: algorithmSchema
      .default(() => algorithmSchema.parse({}))
      .describe('Advantage estimator, policy loss, aggregation, KL and filters, by registered name.'),
    optimizer: optimizerSchema
      .default(() => optimizerSchema.parse({}))
      .describe('AdamW, clipping and the non-finite guard.'),
    rewards: z
      .array(rewardSchema)
      .default([])
      .describe("Rewards replacing the task's own; empty = the task's rewards."),
    rewardWorkers: rewardWorkersSchema
      .default(() => rewardWorkersSchema.parse({}))
      .describe('Where reward calls run and their time and memory limits.'),
    evaluation: evaluationSchema.default(() => evaluationSchema.parse({})).describe('Held-out evaluation.'),
    logging: loggingSchema.default(() => loggingSchema.parse({})).describe('Run folder and console output.'),
    checkpoint: checkpointSchema.default(() => checkpointSchema.parse({})).describe('Checkpointing for resume.'),
    rollout: rolloutEngineSchema
      .default(() => rolloutEngineSchema.parse({}))
      .describe('Where rollouts are generated: the in-process sampler or an OpenAI-compatible engine.'),
    lora: loraSchema
      .nullable()
      .default(null)
      .describe(
        'LoRA adapters (PEFT format) instead of full fine-tuning; null = every weight trains. The base weights stay frozen, checkpoints hold the adapter, and the KL reference is the model with its adapters off (the base model, even after an SFT phase).',
      ),
    agent: agentSchema
      .nullable()
      .default(null)
      .describe(
        "Multi-turn tool-use episodes in the environments a TypeScript recipe's `environment` factory makes (docs/agents.md); null = single-turn completions.",
      ),
  })
  .strict();

export type TrainerConfig = z.infer<typeof trainerConfigSchema>;
export type TrainerConfigInput = z.input<typeof trainerConfigSchema>;

/** Names the registries know, for the cross-field checks (filled by the caller to avoid an import cycle). */
export interface KnownNames {
  advantage: string[];
  loss: string[];
  aggregation: string[];
  klEstimator: string[];
  groupFilter: string[];
  promptSelector: string[];
  /** Turn-credit estimators; absent = not checked here (binding still looks the name up). */
  turnCredit?: string[];
  task: string[];
}

/** A schema node as zod 4 keeps it (`_zod.def`); only what `keysAt` walks through is typed. */
interface SchemaNode {
  _zod: { def: { type: string; innerType?: SchemaNode; in?: SchemaNode; shape?: Record<string, SchemaNode> } };
}

/** The keys an object at `path` of `schema` takes (for "did you mean"), or none where there is no object. */
function keysAt(schema: unknown, path: readonly PropertyKey[]): string[] {
  let node = schema as SchemaNode | undefined;
  const unwrap = (value: SchemaNode | undefined): SchemaNode | undefined => {
    let current = value;
    while (current && current._zod.def.type !== 'object') current = current._zod.def.innerType ?? current._zod.def.in;
    return current;
  };
  for (const key of path) node = unwrap(node)?._zod.def.shape?.[String(key)];
  return Object.keys(unwrap(node)?._zod.def.shape ?? {});
}

/** Parses and checks a config; every problem is one sentence naming the field. Throws listing all. */
export function validateConfig(input: unknown, known: KnownNames): TrainerConfig {
  const parsed = trainerConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.flatMap((issue) => {
      const keys = keysAt(trainerConfigSchema, issue.path);
      const deeper = keys.flatMap((section) =>
        keysAt(trainerConfigSchema, [...issue.path, section]).map((key) => `${section}.${key}`),
      );
      return hintedKeyLines(issue, keys, deeper) ?? [`- ${fieldPath(issue.path)}: ${issue.message}`];
    });
    throw new Error(`invalid config:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  const problems: string[] = [];
  const checkName = (field: string, value: string | null, names: string[], kind: string): void => {
    if (value !== null && !names.includes(value))
      problems.push(`- ${field}: unknown ${kind} "${value}"; known: ${names.join(', ')}`);
  };
  checkName('algorithm.advantage', config.algorithm.advantage, known.advantage, 'advantage estimator');
  checkName('algorithm.loss', config.algorithm.loss, known.loss, 'policy loss');
  checkName('algorithm.aggregation', config.algorithm.aggregation, known.aggregation, 'loss aggregation');
  checkName('algorithm.klEstimator', config.algorithm.klEstimator, known.klEstimator, 'KL estimator');
  checkName('algorithm.groupFilter', config.algorithm.groupFilter, known.groupFilter, 'group filter');
  checkName('algorithm.promptSelector', config.algorithm.promptSelector, known.promptSelector, 'prompt selector');
  if (known.turnCredit)
    checkName(
      'algorithm.turnCredit',
      config.algorithm.turnCredit?.name ?? null,
      known.turnCredit,
      'turn-credit estimator',
    );
  checkName('task', config.task, known.task, 'task');
  const completions = config.grpo.promptsPerStep * config.sampling.groupSize;
  if (config.grpo.microBatchSize > completions) {
    problems.push(
      `- grpo.microBatchSize: ${config.grpo.microBatchSize} is larger than the ${completions} completions of a step (promptsPerStep × sampling.groupSize)`,
    );
  } else if (completions % config.grpo.microBatchSize !== 0) {
    problems.push(
      `- grpo.microBatchSize: ${config.grpo.microBatchSize} does not divide the ${completions} completions of a step (promptsPerStep ${config.grpo.promptsPerStep} × groupSize ${config.sampling.groupSize})`,
    );
  }
  if (config.model.numKeyValueHeads && config.model.numHeads % config.model.numKeyValueHeads !== 0) {
    problems.push(
      `- model.numKeyValueHeads: ${config.model.numKeyValueHeads} does not divide model.numHeads ${config.model.numHeads}`,
    );
  }
  if (config.model.hiddenSize % config.model.numHeads !== 0) {
    problems.push(
      `- model.hiddenSize: ${config.model.hiddenSize} is not a multiple of model.numHeads ${config.model.numHeads}`,
    );
  }
  problems.push(
    ...rolloutEngineProblems(config),
    ...visionProblems(config.model.vision, config.model.checkpoint),
    ...reportToProblems(config.logging.reportTo),
  );
  if (problems.length > 0) throw new Error(`invalid config:\n${problems.join('\n')}`);
  return config;
}
