/**
 * Group-relative advantage estimators for scalar outcome rewards: GRPO z-score, Dr. GRPO,
 * RLOO, batch-std scaling, MC-GRPO (median/MAD) and NGRPO (virtual max-reward samples).
 *
 * Is: plain functions on number arrays with the shared `AdvantageFn` signature; every one is
 * NaN/null-aware (unscored samples get advantage 0 and keep = 0, and are left out of the statistics).
 * Is not: estimators needing extra structure (GDPO, stratified, SEED, S-GRPO, tree, single-stream
 * live in advantages-structured.ts) nor anything about tokens or tensors.
 */
import { z } from 'zod';
import { epsilonOption, singletonGroupOption, stdOption } from './option-schemas.js';
import { defineAdvantageEstimator } from './advantages-groups.js';
import type { RunSettings } from './registry.js';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  type GroupLayout,
  batchStats,
  finishAdvantages,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
  zeroStdThreshold,
} from './advantages-groups.js';

/** Default ε added to the std (verl's 1e-6; reproduces ALGORITHMS.md §1.1 r=[1,0,1,0] to 4 dp). */
export const defaultStdEpsilon = 1e-6;

interface Prepared {
  rewards: Float64Array;
  layout: GroupLayout;
}

function prepare(input: AdvantageInput): Prepared {
  const rewards = toRewardArray(input.rewards);
  return { rewards, layout: resolveGroups(rewards.length, input.groupSizes) };
}

/** A = (r − mean_g) / scale, with the singleton-group and zero-std conventions applied. */
function centerAndDivide(
  prepared: Prepared,
  options: AdvantageOptions,
  scaleOf: (group: number, std: number) => number,
): AdvantageResult {
  const { rewards, layout } = prepared;
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount, options.std ?? 'sample');
  const stdIsZero = zeroStdFlags(stats);
  const singletonRaw = (options.singletonGroup ?? 'raw') === 'raw';
  const out = new Float64Array(rewards.length);
  for (let i = 0; i < rewards.length; i++) {
    const g = layout.groupOf[i];
    if (Number.isNaN(rewards[i])) out[i] = NaN;
    else if (stats.count[g] === 1) out[i] = singletonRaw ? rewards[i] : 0;
    else if (stdIsZero[g]) out[i] = 0;
    else out[i] = (rewards[i] - stats.mean[g]) / scaleOf(g, stats.std[g]);
  }
  return { advantages: finishAdvantages(out), keep: scoredMask(rewards), stdIsZero };
}

/**
 * GRPO group z-score: A_i = (r_i − mean_g r) / (std_g r + ε), the same A_i for every token.
 * Choices: std 'sample' (N−1) by default, ε = 1e-6 (verl; TRL uses 1e-4), a one-sample group gets
 * mean 0 and std 1 so A = r (verl; `singletonGroup: 'zero'` gives 0), an all-equal group gives exactly 0.
 * Shao et al. 2024, DeepSeekMath (arXiv 2402.03300).
 */
export function grpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const epsilon = options.epsilon ?? defaultStdEpsilon;
  return centerAndDivide(prepare(input), options, (_g, std) => std + epsilon);
}

/** Refuses groups of one: `name` compares completions within a group, and one has nothing to compare. */
function comparesWithinGroups(name: string) {
  return (_options: unknown, settings: RunSettings) =>
    settings.groupSize < 2
      ? [
          `sampling.groupSize: ${name} compares completions within a group, so it needs at least 2 (got ${settings.groupSize})`,
        ]
      : [];
}

/** `algorithm.advantage: grpo`: the entry `grpo list` prints and configs name. */
export const grpoAdvantagePart = defineAdvantageEstimator({
  name: 'grpo',
  fn: grpoAdvantage,
  description: '(r − mean_g)/(std_g + ε); sample std, ε = 1e-6, one-sample group → A = r',
  citation: 'DeepSeekMath, arXiv 2402.03300',
  options: z
    .object({ epsilon: epsilonOption, std: stdOption, singletonGroup: singletonGroupOption })
    .partial()
    .strict(),
  refuses: comparesWithinGroups('grpo'),
});

/**
 * Dr. GRPO: A_i = r_i − mean_g r, no std division (pair it with the constant normaliser
 * `seq-mean-token-sum-norm`). A one-sample group follows `singletonGroup` ('raw': A = r).
 * Liu et al. 2025, "Understanding R1-Zero-Like Training" (arXiv 2503.20783).
 */
export function drGrpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  return centerAndDivide(prepare(input), options, () => 1);
}

/** `algorithm.advantage: dr-grpo`: the entry `grpo list` prints and configs name. */
export const drGrpoAdvantagePart = defineAdvantageEstimator({
  name: 'dr-grpo',
  fn: drGrpoAdvantage,
  description: 'r − mean_g, no std division (pair with seq-mean-token-sum-norm)',
  citation: 'Dr. GRPO, arXiv 2503.20783',
  options: z.object({ singletonGroup: singletonGroupOption, std: stdOption }).partial().strict(),
  refuses: comparesWithinGroups('dr-grpo'),
});

/**
 * RLOO leave-one-out baseline: A_i = r_i − mean_{j≠i} r_j = G/(G−1)·(r_i − mean), G counting scored
 * samples only. A one-sample group follows `singletonGroup` ('raw': A = r, as verl).
 * Ahmadian et al. 2024, "Back to Basics" (arXiv 2402.14740); Kool et al. 2019.
 */
export function rlooAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const prepared = prepare(input);
  const counts = segmentStats(prepared.rewards, prepared.layout.groupOf, prepared.layout.groupCount).count;
  return centerAndDivide(prepared, options, (g) => (counts[g] - 1) / counts[g]);
}

/** `algorithm.advantage: rloo`: the entry `grpo list` prints and configs name. */
export const rlooAdvantagePart = defineAdvantageEstimator({
  name: 'rloo',
  fn: rlooAdvantage,
  description: 'leave-one-out baseline: r_i − mean_{j≠i} r_j',
  citation: 'RLOO, Ahmadian et al. 2024, arXiv 2402.14740',
  options: z.object({ singletonGroup: singletonGroupOption, std: stdOption }).partial().strict(),
  refuses: comparesWithinGroups('rloo'),
});

/**
 * Batch-std scaling ("Lite PPO", TRL `scale_rewards="batch"`): A_i = (r_i − mean_g) / (std_batch + ε),
 * the group mean kept and the std taken over every scored reward in the batch. ε defaults to 1e-6.
 * "Tricks or Traps? A Deep Dive into RL for LLM Reasoning" (Lite PPO); TRL paper_index.
 */
export function batchStdAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const prepared = prepare(input);
  const epsilon = options.epsilon ?? defaultStdEpsilon;
  const batch = batchStats(prepared.rewards, options.std ?? 'sample');
  const denominator = Number.isNaN(batch.std) || batch.std < zeroStdThreshold ? 1 : batch.std + epsilon;
  return centerAndDivide(prepared, options, () => denominator);
}

/** `algorithm.advantage: batch-std`: the entry `grpo list` prints and configs name. */
export const batchStdAdvantagePart = defineAdvantageEstimator({
  name: 'batch-std',
  fn: batchStdAdvantage,
  description: '(r − mean_g)/(std_batch + ε): group mean, batch std',
  citation: 'Lite PPO ("Tricks or Traps?"); TRL scale_rewards="batch"',
  options: z
    .object({ epsilon: epsilonOption, std: stdOption, singletonGroup: singletonGroupOption })
    .partial()
    .strict(),
});

/** torch.median convention: the lower middle element of the sorted values. */
function lowerMedian(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1];
}

/**
 * MC-GRPO median-centred advantage: m = median_g r (lower median, as torch), MAD = median |r − m|,
 * A_i = (r_i − m) / (max(MAD, madFloor) + ε) with ε = 1e-3 and madFloor = 0 by default. The first
 * sample equal to the median (the pivot) is dropped (keep = 0, A = 0), so draw G+1 rollouts.
 * `rescaleNonzero` multiplies non-zero advantages by (G+1)/#non-zero (the GSM trainer variant).
 * MC-GRPO: Median-Centered GRPO for Small-Rollout RL (#29; code lotusroot-kim/MC-GRPO).
 */
export function mcGrpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const { rewards, layout } = prepare(input);
  const epsilon = options.epsilon ?? 1e-3;
  const madFloor = options.madFloor ?? 0;
  const advantages = new Float64Array(rewards.length);
  const keep = scoredMask(rewards);
  const stdIsZero = new Uint8Array(layout.groupCount);
  for (let g = 0; g < layout.groupCount; g++) {
    const indices: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++) if (keep[i]) indices.push(i);
    if (indices.length === 0) {
      stdIsZero[g] = 1;
      continue;
    }
    const median = lowerMedian(indices.map((i) => rewards[i]));
    const mad = lowerMedian(indices.map((i) => Math.abs(rewards[i] - median)));
    stdIsZero[g] = indices.every((i) => rewards[i] === rewards[indices[0]]) ? 1 : 0;
    const pivot = indices.find((i) => rewards[i] === median) as number;
    keep[pivot] = 0;
    let nonzero = 0;
    for (const i of indices) {
      advantages[i] = i === pivot ? 0 : (rewards[i] - median) / (Math.max(mad, madFloor) + epsilon);
      if (advantages[i] !== 0) nonzero++;
    }
    if (options.rescaleNonzero && nonzero > 0) for (const i of indices) advantages[i] *= layout.sizes[g] / nonzero;
  }
  return { advantages: finishAdvantages(advantages), keep, stdIsZero };
}

/** `algorithm.advantage: mc-grpo`: the entry `grpo list` prints and configs name. */
export const mcGrpoAdvantagePart = defineAdvantageEstimator({
  name: 'mc-grpo',
  fn: mcGrpoAdvantage,
  description: '(r − median_g)/(MAD_g + 1e-3), the median (pivot) rollout dropped; draw G+1',
  citation: 'MC-GRPO (#29), lotusroot-kim/MC-GRPO',
  options: z
    .object({ epsilon: epsilonOption, madFloor: z.number().nonnegative(), rescaleNonzero: z.boolean() })
    .partial()
    .strict(),
});

/**
 * NGRPO advantage calibration: mean and sample std over the group plus K virtual samples of value
 * r_max (defaults K = 1, r_max = 1), A_i = (r_i − μ') / (σ' + ε), ε = 1e-6; an all-wrong group gets a
 * non-zero (negative) advantage. Pair with ε_low = 0.16, ε_high = 0.24 and the `drop-all-correct` filter.
 * NGRPO: Negative-enhanced GRPO (#238; code nangongrui-ngr/NGRPO, compute_ngrpo_outcome_advantage).
 */
export function ngrpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const { rewards, layout } = prepare(input);
  const virtualReward = options.virtualReward ?? 1;
  const virtualCount = options.virtualCount ?? 1;
  const epsilon = options.epsilon ?? defaultStdEpsilon;
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount, 'sample');
  const out = new Float64Array(rewards.length);
  const mean = new Float64Array(layout.groupCount);
  const std = new Float64Array(layout.groupCount);
  for (let g = 0; g < layout.groupCount; g++) {
    const n = stats.count[g] + virtualCount;
    mean[g] = ((stats.count[g] > 0 ? stats.mean[g] * stats.count[g] : 0) + virtualReward * virtualCount) / n;
    // Sum of squares about the combined mean, from the real samples' scatter plus the virtual ones.
    const realScatter = stats.count[g] > 1 ? stats.std[g] ** 2 * (stats.count[g] - 1) : 0;
    const realShift = stats.count[g] > 0 ? stats.count[g] * (stats.mean[g] - mean[g]) ** 2 : 0;
    const squares = realScatter + realShift + virtualCount * (virtualReward - mean[g]) ** 2;
    std[g] = n > 1 ? Math.sqrt(squares / (n - 1)) : 0;
  }
  for (let i = 0; i < rewards.length; i++) {
    const g = layout.groupOf[i];
    out[i] = Number.isNaN(rewards[i]) ? NaN : (rewards[i] - mean[g]) / (std[g] + epsilon);
  }
  return { advantages: finishAdvantages(out), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: ngrpo`: the entry `grpo list` prints and configs name. */
export const ngrpoAdvantagePart = defineAdvantageEstimator({
  name: 'ngrpo',
  fn: ngrpoAdvantage,
  description: 'z-score over the group plus one virtual max-reward sample (all-wrong groups learn)',
  citation: 'NGRPO (#238), nangongrui-ngr/NGRPO',
  options: z
    .object({
      epsilon: epsilonOption,
      std: stdOption,
      virtualReward: z.number(),
      virtualCount: z.number().int().nonnegative(),
    })
    .partial()
    .strict(),
});
