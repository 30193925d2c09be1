/**
 * OPMD's advantage (online policy mirror descent, as Yao, Chen et al. read it in "Group-Relative
 * REINFORCE Is Secretly an Off-Policy Algorithm", #205): the reward minus a group baseline, either
 * the mean or the soft maximum τ·log mean exp(r/τ) — the baseline of the KL-regularised optimum.
 *
 * Is: the estimator and its entry, exact to the authors' code (Trinity-RFT, yaochaorui/Trinity-RFT
 * `trinity/algorithm/advantage_fn/opmd_advantage.py`, `OPMDGroupAdvantage.calculate_group_advantage`).
 * Is not: the OPMD loss (`policy-losses-opmd.ts`, the −A·logπ/(1+τ) that goes with it) nor any
 * std division — the authors' estimator never divides.
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  finishAdvantages,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';

/** OPMD's options: which baseline and the regularisation temperature τ of the soft maximum. */
export interface OpmdAdvantageOptions {
  /** 'mean' (default, the authors' default_args) or 'logavgexp' (τ·log mean exp(r/τ)). */
  baseline?: 'mean' | 'logavgexp';
  /** τ of the 'logavgexp' baseline (default 1.0, the authors' default); unused by 'mean'. */
  tau?: number;
}

/** τ·log((1/n)·Σ exp(r_j/τ)) over the scored rewards, shifted by the maximum so it never overflows. */
function logAverageExp(values: number[], tau: number): number {
  const scaled = values.map((r) => r / tau);
  const top = Math.max(...scaled);
  const sum = scaled.reduce((total, s) => total + Math.exp(s - top), 0);
  return tau * (top + Math.log(sum) - Math.log(values.length));
}

/**
 * OPMD advantage: A_i = r_i − b_g with b_g = mean_g r ('mean', default) or
 * b_g = τ·(logsumexp_j(r_j/τ) − log n_g) ('logavgexp', τ = 1 by default), over the group's scored
 * samples; no std division. A group with one scored sample has b = 0, so A = r (the authors' code:
 * `len(exps) == 1 → group_baseline = 0`). Unscored samples get A = 0 and keep = 0. With 'mean' it
 * equals `dr-grpo`; 'logavgexp' lies between the mean and the maximum (→ mean as τ → ∞, → max as
 * τ → 0), so all-equal groups get exactly 0 either way.
 * #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT opmd_advantage.py, OPMDGroupAdvantage.
 */
export function opmdAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & OpmdAdvantageOptions = {},
): AdvantageResult {
  const baseline = options.baseline ?? 'mean';
  const tau = options.tau ?? 1;
  if (!(tau > 0)) throw new RangeError(`options.tau must be > 0, got ${tau}.`);
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  const baselines = new Float64Array(layout.groupCount);
  for (let g = 0; g < layout.groupCount; g++) {
    if (stats.count[g] <= 1) continue; // one scored sample: baseline 0 (none scored: nothing to centre)
    if (baseline === 'mean') {
      baselines[g] = stats.mean[g];
      continue;
    }
    const scored: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++)
      if (!Number.isNaN(rewards[i])) scored.push(rewards[i]);
    baselines[g] = logAverageExp(scored, tau);
  }
  const advantages = rewards.map((r, i) => r - baselines[layout.groupOf[i]]); // NaN stays NaN → 0
  return { advantages: finishAdvantages(advantages), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: opmd`: the entry `grpo list` prints and configs name. */
export const opmdAdvantagePart = defineAdvantageEstimator({
  name: 'opmd',
  fn: opmdAdvantage,
  description: "r − b_g, b = mean_g r or τ·log mean_g exp(r/τ) ('logavgexp'); one-sample group: b = 0",
  citation: 'OPMD in #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT opmd_advantage.py OPMDGroupAdvantage',
  options: z
    .object({
      baseline: z.enum(['mean', 'logavgexp']).describe("'mean' (default) or 'logavgexp' (τ·log mean exp(r/τ))"),
      tau: z.number().positive().describe("τ of the 'logavgexp' baseline (default 1)"),
    })
    .partial()
    .strict(),
});
