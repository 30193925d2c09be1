/**
 * The defaults of a run on a pretrained checkpoint (`model.checkpoint`, `--model DIR`,
 * `GRPOTrainer({ model })`): TRL's `GRPOConfig` / `TrainingArguments` defaults for the settings we
 * share, as one partial config that `resolveConfig` lays over the schema and the task's recommended
 * settings and under presets and the user's config; and the micro-batch that fits a step by itself.
 *
 * Is not: validation (config.ts) or a change to the schema's defaults — those stay tuned for the
 * from-scratch model of the built-in addition task, so `npm start` and every run without a checkpoint
 * resolve as before.
 */

/**
 * TRL v1.9.0 (`trl/trainer/grpo_config.py`, the latest release when this was written; TRL's main
 * branch has since raised `max_completion_length` to 512) and the `TrainingArguments` fields it
 * inherits. Only fields that mean the same thing here are listed; the ones whose right value
 * depends on another choice (a loss's clip widths, an aggregation) are left to the schema, whose
 * defaults already match TRL's (ppo-clip ε 0.2 both sides, token-mean = `loss_type='dapo'`,
 * `scale_rewards='group'` = the grpo advantage). docs/coming-from-trl.md shows them side by side.
 */
export const checkpointDefaults: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  sampling: {
    groupSize: 8, // num_generations
    maxNewTokens: 256, // max_completion_length
    temperature: 1, // temperature
  },
  grpo: {
    learningRate: 1e-6, // learning_rate (GRPOConfig's own default; TrainingArguments has 5e-5)
    schedule: 'linear', // lr_scheduler_type
    warmupSteps: 0, // warmup_steps (warmup_ratio 0)
    microBatchSize: 8, // per_device_train_batch_size; fitted to the step below when larger
  },
  optimizer: {
    beta1: 0.9, // adam_beta1
    beta2: 0.999, // adam_beta2
    epsilon: 1e-8, // adam_epsilon
    weightDecay: 0, // weight_decay
    maxGradNorm: 1, // max_grad_norm
  },
  algorithm: {
    klCoefficient: 0, // beta
  },
};

/** Whether a config as written (before defaults) trains a pretrained checkpoint. */
export function namesCheckpoint(config: Record<string, unknown>): boolean {
  const model = config.model;
  return (
    typeof model === 'object' && model !== null && typeof (model as { checkpoint?: unknown }).checkpoint === 'string'
  );
}

/**
 * The micro-batch used when the user set none: the largest divisor of the step's `completions`
 * that is at most `preferred` (the default), so a small step (4 prompts × 8 = 32 completions under a
 * default of 64) runs whole instead of being refused, and a step the default does not divide still
 * splits evenly. A default that already divides the step is kept as it is.
 */
export function fittedMicroBatchSize(completions: number, preferred: number): number {
  for (let size = Math.min(preferred, completions); size > 1; size--) if (completions % size === 0) return size;
  return 1;
}
