/**
 * The ideal times the grpo-step bench divides by: the step's training FLOPs (for training's share of the FMA
 * peak) and the rollout's roofline seconds (for its share of what compute and memory traffic allow).
 * Is not: a timer; the peaks come from peak/peak.ts, measured in the same run.
 */
import type { ModelConfig } from '../src/model/config.js';
import { causalKeys, forwardFlops } from './generate.js';
import type { MachinePeak } from './peak/peak.js';

/** What the roofline depends on: P prompts × G samples, L prompt tokens, N new tokens. */
export interface StepShape {
  prompts: number;
  groupSize: number;
  promptLength: number;
  newTokens: number;
}

/** Training FLOPs of the step: 3 × the forward of every prompt + completion (lm_head on completion rows). */
export function trainFlops(config: ModelConfig, step: StepShape): number {
  const length = step.promptLength + step.newTokens;
  const rows = step.prompts * step.groupSize;
  return 3 * rows * forwardFlops(config, length, causalKeys(0, length), step.newTokens);
}

/** Roofline seconds of the rollout at `peak`: prefill compute-bound, each decode step max(compute, traffic). */
export function rolloutRooflineSeconds(config: ModelConfig, step: StepShape, peak: MachinePeak): number {
  const { prompts: P, groupSize: G, promptLength: L, newTokens: N } = step;
  const flopsPerSecond = peak.fmaGflops * 1e9;
  const bytesPerSecond = peak.readGBs * 1e9;
  const { hiddenSize: H, intermediateSize: I, numHeads, numKeyValueHeads, headDim: D, numLayers } = config;
  const weightBytes =
    4 * (numLayers * (2 * H * numHeads * D + 2 * H * numKeyValueHeads * D + 3 * H * I) + H * config.vocabSize);
  const kvBytesPerKey = 4 * 2 * numLayers * numKeyValueHeads * D;
  let seconds = (P * forwardFlops(config, L, causalKeys(0, L), 1)) / flopsPerSecond;
  for (let t = 1; t < N; t++) {
    const flops = P * G * forwardFlops(config, 1, L + t, 1);
    const bytes = weightBytes + kvBytesPerKey * (P * L + P * G * t);
    seconds += Math.max(flops / flopsPerSecond, bytes / bytesPerSecond);
  }
  return seconds;
}
