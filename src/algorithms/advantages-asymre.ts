/**
 * AsymRE's advantage (asymmetric REINFORCE, Arnal et al., arXiv 2506.20520, read as a regularised
 * REINFORCE in #205): the reward minus a group mean shifted by a constant, so with the default shift
 * −0.1 positive samples are pushed up a little more than negative ones are pushed down.
 *
 * Is: the estimator and its entry, exact to the authors' code (Trinity-RFT, yaochaorui/Trinity-RFT
 * `trinity/algorithm/advantage_fn/asymre_advantage.py`, `ASYMREGroupAdvantage.calculate_group_advantage`).
 * Is not: the loss — the authors pair it with the OPMD loss at τ = 0 (`--set algorithm.loss=opmd
 * --set algorithm.lossOptions.tau=0`, their examples/asymre_gsm8k), i.e. plain −A·logπ.
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

/** AsymRE's one option: the shift added to the group mean. */
export interface AsymreAdvantageOptions {
  /** δ in b = mean + δ (default −0.1, the authors' default_args and examples). */
  baselineShift?: number;
}

/**
 * AsymRE advantage: A_i = r_i − (mean_g r + δ) over the group's scored samples, δ = −0.1 by default;
 * no std division. A group with one scored sample has baseline 0, not δ, so A = r (the authors'
 * code: `len(exps) == 1 → group_baseline = 0`). An all-equal group therefore gets A = −δ on every
 * sample (0.1 by default), not 0: the shift is the method. Unscored samples get A = 0, keep = 0.
 * AsymRE, arXiv 2506.20520; #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT asymre_advantage.py.
 */
export function asymreAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & AsymreAdvantageOptions = {},
): AdvantageResult {
  const shift = options.baselineShift ?? -0.1;
  if (!Number.isFinite(shift)) throw new RangeError(`options.baselineShift must be finite, got ${shift}.`);
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  const baselines = Float64Array.from(stats.mean, (mean, g) => (stats.count[g] > 1 ? mean + shift : 0));
  const advantages = rewards.map((r, i) => r - baselines[layout.groupOf[i]]); // NaN stays NaN → 0
  return { advantages: finishAdvantages(advantages), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: asymre`: the entry `grpo list` prints and configs name. */
export const asymreAdvantagePart = defineAdvantageEstimator({
  name: 'asymre',
  fn: asymreAdvantage,
  description: 'r − (mean_g r + δ), δ = −0.1; one-sample group: baseline 0; pair with loss opmd, tau 0',
  citation: 'AsymRE, arXiv 2506.20520; #205; yaochaorui/Trinity-RFT asymre_advantage.py ASYMREGroupAdvantage',
  options: z
    .object({ baselineShift: z.number().describe('δ added to the group mean (default −0.1)') })
    .partial()
    .strict(),
});
