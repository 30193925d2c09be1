/**
 * The public API of `grpo`: everything a user needs to train with GRPO-family algorithms from
 * TypeScript — the trainer and its config, rewards, algorithms, models, sampling, data tasks.
 * The tensor engine is also at `grpo/tensor`, test helpers at `grpo/testing`. No default exports.
 */
export * from './algorithms/index.js';
export * from './rewards/index.js';
// Both layers have a soft overlong punishment: the reward factory keeps the name, the array form
// from the algorithms layer is re-exported under a distinct one.
export { softOverlongPunishment } from './rewards/index.js';
export { softOverlongPunishment as softOverlongPenalties } from './algorithms/index.js';
export * from './data/index.js';
export * from './trainer/index.js';
export * from './agents/builtins.js';
export type {
  Environment,
  EnvironmentFactory,
  EnvironmentFeedback,
  Episode,
  EpisodeStopReason,
  JsonSchema,
  Tool,
  ToolCall,
  ToolCallRecord,
  ToolContext,
  ToolDefinition,
} from './agents/types.js';
export { parseToolCalls, toolDefinitions, type ParsedToolCalls, type ToolCallFormat } from './agents/tool-calls.js';
export {
  EpisodeDecoder,
  generate,
  type Completion,
  type EpisodeTurn,
  type GenerateRequest,
  type SamplingSettings,
} from './sampling/index.js';
export { Transformer, type KvCache, type ForwardOptions } from './model/transformer.js';
export { loadCheckpoint, saveCheckpoint, resolveStopTokenIds, type Checkpoint } from './model/checkpoint.js';
export { parseModelConfig, createSmallConfig, type ModelConfig } from './model/config.js';
export { loadModelConfig } from './model/checkpoint.js';
export { toHfConfig } from './model/config-hf.js';
export { VisionLanguageModel } from './model/vision/vision-language.js';
export {
  loadVisionLanguageCheckpoint,
  loadVisionLanguageModel,
  saveVisionLanguageCheckpoint,
  type VisionLanguageCheckpoint,
} from './model/vision/vision-language-checkpoint.js';
export {
  parseIdefics3Config,
  loadIdefics3Config,
  toHfIdefics3Config,
  isIdefics3Checkpoint,
  createSmallVisionLanguageConfig,
  type VisionConfig,
  type VisionLanguageConfig,
} from './model/vision/idefics3-config.js';
export { promptImagePositions, type ImageFeaturesInput } from './model/vision/image-merge.js';
export { loadTokenizer, checkTokenizerFitsModel, type TextTokenizer } from './model/tokenizer.js';
export { CharTokenizer } from './model/char-tokenizer.js';
export { applyChatTemplate, encodeChat } from './model/chat-template.js';
export { AdamW, learningRateAt, clipGradNorm, globalGradNorm, type ScheduleConfig } from './nn/index.js';
export { getBackend, setBackend, createBackend, noGrad, Tensor, tensor, Random } from './tensor/index.js';
export type { FlowRecipeConfig } from './flow/recipe.js';
export { defineImageReward, type ImageBatch, type ImageReward } from './flow/image-reward.js';
export { pairwiseWinRates, type PairVerdict } from './flow/image-rewards/win-rate.js';
