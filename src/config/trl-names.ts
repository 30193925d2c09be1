/**
 * TRL's GRPOConfig / GRPOTrainer argument names and where the same setting lives here, so a config
 * written with TRL's spelling is refused with our name in the message (docs/coming-from-trl.md
 * prints the same table), our own fields that moved (the old path refused with the new one), and the
 * lines config validation prints for unrecognized keys.
 *
 * Is not: an alias mechanism. Each project keeps one spelling; this only turns a likely mistake
 * into a one-line fix.
 */
import { closestName } from '../registry/closest-name.js';

/** TRL name → our config field (with a note where the meaning differs). */
export const trlNames: Record<string, string> = {
  model_name_or_path: 'model.checkpoint',
  num_generations: 'sampling.groupSize',
  max_completion_length: 'sampling.maxNewTokens',
  temperature: 'sampling.temperature',
  top_p: 'sampling.topP',
  top_k: 'sampling.topK',
  min_p: 'sampling.minP',
  learning_rate: 'grpo.learningRate (sft.learningRate for SFT)',
  max_steps: 'grpo.steps',
  warmup_steps: 'grpo.warmupSteps',
  lr_scheduler_type: 'grpo.schedule',
  num_iterations: 'grpo.iterations',
  per_device_train_batch_size: 'grpo.microBatchSize (completions per micro-batch)',
  generation_batch_size: 'grpo.promptsPerStep × sampling.groupSize (prompts per step, not completions)',
  beta: 'algorithm.klCoefficient',
  epsilon: 'algorithm.lossOptions.epsilonLow',
  epsilon_high: 'algorithm.lossOptions.epsilonHigh',
  loss_type:
    'algorithm.aggregation (grpo → seq-mean-token-mean, bnpo/dapo → token-mean, dr_grpo → seq-mean-token-sum-norm)',
  scale_rewards: 'algorithm.advantage (group or true → grpo, batch → batch-std, none or false → dr-grpo)',
  multi_objective_aggregation:
    "algorithm.advantage ('normalize_then_sum' is TRL's GDPO: algorithm.advantage gdpo; 'sum_then_normalize', TRL's default, is grpo)",
  importance_sampling_level: 'algorithm.loss (token → ppo-clip, sequence → gspo)',
  mask_truncated_completions: 'algorithm.maskTruncated',
  top_entropy_quantile: 'algorithm.lossOptions.topEntropyQuantile',
  vllm_importance_sampling_correction: 'algorithm.mismatchCorrection',
  sync_ref_model: 'algorithm.referenceSync (an object: { every, mixupAlpha }; null = off)',
  ref_model_mixup_alpha: 'algorithm.referenceSync.mixupAlpha',
  ref_model_sync_steps: 'algorithm.referenceSync.every (in GRPO steps)',
  reward_weights: 'rewards[].weight',
  weight_decay: 'optimizer.weightDecay',
  max_grad_norm: 'optimizer.maxGradNorm',
  adam_beta1: 'optimizer.beta1',
  adam_beta2: 'optimizer.beta2',
  adam_epsilon: 'optimizer.epsilon',
  save_steps: 'checkpoint.every',
  save_total_limit: 'checkpoint.keepLast',
  output_dir: 'logging.runsDirectory (and logging.runName)',
  report_to:
    "logging.reportTo (['tensorboard'] writes TensorBoard event files to runs/<run>/tensorboard/; every run writes metrics.jsonl anyway, which `grpo dashboard` reads; wandb is refused, upload the TensorBoard files with `wandb sync` instead)",
  logging_steps: 'logging.printEvery',
  log_completions: 'logging.samplesEvery',
  eval_steps: 'evaluation.every',
  gradient_checkpointing:
    "model.recomputeActivations ('layers' is TRL's per-layer checkpointing; 'selective' is the default)",
  num_train_epochs:
    'grpo.steps (steps, not epochs: one epoch of N rows is N / grpo.promptsPerStep steps; prompts are drawn, cycling, from grpo.examples rows)',
  gradient_accumulation_steps:
    'grpo.microBatchSize (a step is always one optimiser update over all promptsPerStep × groupSize completions; it is accumulated over micro-batches of this many, so accumulation = completions / microBatchSize)',
};

/**
 * TRL names with no field here, and why: the sentence the refusal prints instead of "here it is …".
 * Each is also in docs/coming-from-trl.md.
 */
export const trlExplained: Record<string, string> = {
  push_to_hub:
    'there is no push_to_hub (runs need no network): checkpoints are Hugging Face folders, upload one with `huggingface-cli upload USER/NAME runs/<run>/checkpoints/step-N`',
  use_vllm:
    "there is no use_vllm: generation runs in-process by default; for an external engine (vLLM's server mode, `grpo serve`) set rollout.engine 'openai' and rollout.baseUrl (docs/scaling-engines.md)",
  vllm_mode:
    "there is no vllm_mode: the external engine is always a separate server (TRL's 'server' mode), set with rollout.engine 'openai' and rollout.baseUrl; TRL's 'colocate' is the default local sampler",
  repetition_penalty:
    'there is no repetition_penalty in sampling (it would change the sampled distribution the loss assumes); the repetition-penalty reward discourages repeated n-grams instead (rewards: [{ name: "repetition-penalty", weight: … }])',
};

/** "`num_generations` is TRL's name; here it is sampling.groupSize", or null for other keys. */
function trlHint(key: string): string | null {
  const explained = trlExplained[key];
  if (explained !== undefined) return `"${key}" is TRL's name; ${explained}`;
  const ours = trlNames[key];
  return ours === undefined ? null : `"${key}" is TRL's name; here it is ${ours}`;
}

/** Fields of ours that moved, old path → new path: the old spelling is refused with the new one. */
const movedFields: Record<string, string> = {
  'lora.recomputeActivations': 'model.recomputeActivations (it applies to full fine-tuning too)',
};

/** "`lora.recomputeActivations` moved to model.recomputeActivations …", or null for other paths. */
function movedHint(fieldPath: string): string | null {
  const now = movedFields[fieldPath];
  return now === undefined ? null : `"${fieldPath}" moved to ${now}`;
}

/** A config problem's place, as the messages name it: "lora.rank", or "(root)" for the top level. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map(String).join('.') || '(root)';
}

/**
 * The lines of an unrecognized-keys problem: each key with its hint (a moved field, TRL's name, or
 * the nearest of `knownKeys`, the keys valid at that place, else of `deeperKeys`, those one level
 * down as `section.key`), or null for other problems and when no
 * key has a hint (the validator's own message serves).
 */
export function hintedKeyLines(
  issue: { code: string; path: PropertyKey[]; keys?: string[] },
  knownKeys: readonly string[] = [],
  deeperKeys: readonly string[] = [],
): string[] | null {
  if (issue.code !== 'unrecognized_keys' || !issue.keys) return null;
  const where = fieldPath(issue.path);
  // A near miss at this level, else one a level down ("stpes" at the top → grpo.steps).
  const near = (key: string) => {
    const last = (path: string) => path.slice(path.lastIndexOf('.') + 1);
    const here = closestName(key, knownKeys);
    const deeper = closestName(key, deeperKeys.map(last));
    const names = here !== null ? [here] : deeperKeys.filter((path) => last(path) === deeper);
    if (names.length === 0) return null;
    return `Unrecognized key: "${key}" (did you mean ${names.map((name) => `"${name}"`).join(' or ')}?)`;
  };
  const hint = (key: string) =>
    movedHint(issue.path.length === 0 ? key : `${where}.${key}`) ?? trlHint(key) ?? near(key);
  if (!issue.keys.some((key) => hint(key) !== null)) return null;
  return issue.keys.map((key) => `- ${where}: ${hint(key) ?? `Unrecognized key: "${key}"`}`);
}
