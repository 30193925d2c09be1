/**
 * Public API of the sampling layer: batched KV-cached group generation over token ids and the logit
 * transforms it composes. Is not: tokenizer-aware.
 */
export { generate, startGeneration, type Completion, type GenerateRequest, type GenerationRun } from './sampler.js';
export {
  applyMinP,
  applyTemperature,
  applyTopK,
  applyTopP,
  argmax,
  chooseToken,
  logSoftmaxRow,
  type SamplingSettings,
  type TokenLogprob,
} from './logits.js';
export { EpisodeDecoder, type EpisodeTurn } from './episode-decoder.js';
