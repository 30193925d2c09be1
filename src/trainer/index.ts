/**
 * Public API of the trainer: config (schema, validation, presets), run setup, the SFT + GRPO loop,
 * the replaceable rollout, evaluation and the run folder. Is not: the CLI.
 */
export { trainerConfigSchema, validateConfig, type TrainerConfig, type TrainerConfigInput } from '../config/config.js';
export { applyPreset, mergeConfig, presetConfig, presetList, presetNames } from '../config/presets.js';
export {
  buildRewards,
  createRunContext,
  runRewards,
  knownNames,
  loadRunTask,
  resolveConfig,
  type Recipe,
  type RunContext,
} from './setup.js';
export { train, type StepRecord, type StepVerdict, type TrainOptions, type TrainResult } from './trainer.js';
export {
  GRPOTrainer,
  SFTTrainer,
  type DatasetInput,
  type GRPOTrainerOptions,
  type RewardFunction,
  type SFTTrainerOptions,
  type TrainerCallbacks,
  type TrainerDataOptions,
  type TrainerOptions,
} from './grpo-trainer.js';
export { RunInterrupted } from '../run/run-status.js';
export {
  singleTurnRollout,
  type RolloutFn,
  type RolloutPrompt,
  type RolloutRow,
  type RolloutSample,
  type RolloutSettings,
} from '../rollout/rollout.js';
export { evaluate, evaluateRun, type EvaluationResult } from './evaluate.js';
export {
  environmentReward,
  multiTurnRollout,
  type AgentSettings,
  type TurnDecoder,
  type TurnDecoderFactory,
} from '../rollout/multi-turn-rollout.js';
export { RunFolder, type TrainerState } from '../run/run-folder.js';
export {
  accumulatePolicyGradients,
  lossOptionsFor,
  policyStep,
  stepSettingsOf,
  trainingBatch,
  type StepSettings,
  type TrainingBatch,
  type TrainingRow,
} from './optimize.js';
export { sftStep } from './sft.js';
export { bindAlgorithm, type BoundAlgorithm } from '../config/algorithm.js';
export type { RolloutProvision } from '../rollout/rollout.js';
