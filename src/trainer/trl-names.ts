/**
 * TRL's GRPOConfig / GRPOTrainer argument names and where the same setting lives here, so a config
 * written with TRL's spelling is refused with our name in the message (docs/coming-from-trl.md
 * prints the same table), our own fields that moved (the old path refused with the new one), and the
 * lines config validation prints for unrecognized keys.
 *
 * Is not: an alias mechanism. Each project keeps one spelling; this only turns a likely mistake
 * into a one-line fix.
 */

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
  scale_rewards: 'algorithm.advantage (group → grpo, batch → batch-std, none → dr-grpo)',
  importance_sampling_level: 'algorithm.loss (token → ppo-clip, sequence → gspo)',
  mask_truncated_completions: 'algorithm.maskTruncated',
  top_entropy_quantile: 'algorithm.lossOptions.topEntropyQuantile',
  vllm_importance_sampling_correction: 'algorithm.mismatchCorrection',
  reward_weights: 'rewards[].weight',
  weight_decay: 'optimizer.weightDecay',
  max_grad_norm: 'optimizer.maxGradNorm',
  adam_beta1: 'optimizer.beta1',
  adam_beta2: 'optimizer.beta2',
  adam_epsilon: 'optimizer.epsilon',
  save_steps: 'checkpoint.every',
  save_total_limit: 'checkpoint.keepLast',
  output_dir: 'logging.runsDirectory (and logging.runName)',
  logging_steps: 'logging.printEvery',
  log_completions: 'logging.samplesEvery',
  eval_steps: 'evaluation.every',
  gradient_checkpointing:
    "model.recomputeActivations ('layers' is TRL's per-layer checkpointing; 'selective' is the default)",
};

/** "`num_generations` is TRL's name; here it is sampling.groupSize", or null for other keys. */
function trlHint(key: string): string | null {
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
 * The lines of an unrecognized-keys problem: each key with its hint (a moved field or TRL's name), or null for
 * other problems and when no key has a hint (the validator's own message serves).
 */
export function hintedKeyLines(issue: { code: string; path: PropertyKey[]; keys?: string[] }): string[] | null {
  if (issue.code !== 'unrecognized_keys' || !issue.keys) return null;
  const where = fieldPath(issue.path);
  const hint = (key: string) => movedHint(issue.path.length === 0 ? key : `${where}.${key}`) ?? trlHint(key);
  if (!issue.keys.some((key) => hint(key) !== null)) return null;
  return issue.keys.map((key) => `- ${where}: ${hint(key) ?? `Unrecognized key: "${key}"`}`);
}
