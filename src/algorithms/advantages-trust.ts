/**
 * Trust-GRPO's advantage (SophiaVL-R1, #228, arXiv 2505.17018): a thinking reward — a reward model's
 * score of the reasoning — added to the outcome reward with a per-group trust weight and an annealed
 * scale, then the GRPO z-score. Per group: μ_c, μ_i are the mean thinking scores of the correct
 * (r_o ≥ 0.5) and incorrect responses; the weight is α·exp(−step/T), times exp(μ_c − μ_i) when the
 * thinking reward prefers the incorrect responses (μ_c < μ_i) and some response is correct; a group
 * whose outcomes are all ≥ 0.9 or all ≤ 0.1 gets none; R = r_o + weight·r_t.
 *
 * Is: the estimator and its entry, exact to the authors' code (kxfan2002/SophiaVL-R1
 * `verl/workers/reward/custom.py`, `CustomRewardManager.__call__` with n > 0: α = 0.3, T = 500, the
 * thinking reward counted only where r_o ≥ 0.2), then `grpo`'s z-score (their EasyR1 trainer's GRPO).
 * Is not: the thinking reward model — that is any reward of the run, named by `thinkingReward`
 * (the paper's is a judge; `judge` in `grpo list` calls one), and r_o is the run's combined reward
 * without it.
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  resolveGroups,
  toRewardArray,
} from './advantages-groups.js';
import { grpoAdvantage } from './advantages.js';
import { epsilonOption, singletonGroupOption, stdOption } from './option-schemas.js';

/** Trust-GRPO's options (and `grpo`'s, for the z-score). */
export interface TrustAdvantageOptions {
  /** The run reward whose column is the thinking score r_t ∈ [0, 1] (required). */
  thinkingReward?: string;
  /** α, the thinking reward's scale at step 0 (default 0.3, the authors' code). */
  scale?: number;
  /** T of exp(−step/T) (default 500, the authors' `T`). */
  annealSteps?: number;
  /** r_t counts only where r_o ≥ this (default 0.2: the authors query the reward model only there). */
  queryThreshold?: number;
}

/** One group's thinking-reward weight γ·α·exp(−step/T), from its outcomes and thinking scores. */
function groupWeight(outcomes: readonly number[], thinking: readonly number[], scale: number): number {
  if (outcomes.every((r) => r >= 0.9) || outcomes.every((r) => r <= 0.1)) return 0;
  const mean = (values: number[]) => (values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  const correct = mean(thinking.filter((_, k) => outcomes[k] >= 0.5));
  const incorrect = mean(thinking.filter((_, k) => outcomes[k] < 0.5));
  const anyCorrect = outcomes.some((r) => r >= 0.5);
  return correct < incorrect && anyCorrect ? scale * Math.exp(correct - incorrect) : scale;
}

/**
 * The Trust-GRPO rewards R = r_o + γ·α·exp(−step/T)·r_t of every sample (NaN where unscored), with
 * r_o = the combined reward minus the thinking reward's weighted share. Unscored samples (null
 * combined reward) take no part in their group's means, as they take none in the z-score.
 */
export function trustRewards(input: AdvantageInput, options: TrustAdvantageOptions = {}): Float64Array {
  const { thinkingReward: name, scale = 0.3, annealSteps = 500, queryThreshold = 0.2 } = options;
  if (name === undefined) throw new Error('trust-grpo needs options.thinkingReward, the name of the thinking reward');
  const column = input.rewardNames?.indexOf(name) ?? -1;
  if (column < 0 || !input.rewardComponents)
    throw new Error(
      `trust-grpo: thinkingReward "${name}" is not among the rewards (${(input.rewardNames ?? []).join(', ')})`,
    );
  if (input.step === undefined) throw new Error('trust-grpo needs input.step (its thinking reward anneals)');
  if (!(scale >= 0) || !(annealSteps > 0)) throw new RangeError('trust-grpo: scale must be ≥ 0 and annealSteps > 0');
  const rewards = toRewardArray(input.rewards);
  const thinkingColumn = toRewardArray(input.rewardComponents[column], `rewardComponents[${column}]`);
  const thinkingWeight = input.rewardWeights?.[column] ?? 1;
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const annealed = scale * Math.exp(-input.step / annealSteps);
  const out = new Float64Array(rewards.length).fill(Number.NaN);
  for (let g = 0; g < layout.groupCount; g++) {
    const members: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++)
      if (Number.isFinite(rewards[i])) members.push(i);
    // A failed thinking call scores 0, as the authors' get_process_reward returns after its retries.
    const raw = members.map((i) => (Number.isFinite(thinkingColumn[i]) ? thinkingColumn[i] : 0));
    const outcomes = members.map((i, k) => rewards[i] - thinkingWeight * raw[k]);
    const thinking = raw.map((score, k) => (outcomes[k] >= queryThreshold ? score : 0));
    const weight = members.length > 0 ? groupWeight(outcomes, thinking, annealed) : 0;
    members.forEach((i, k) => (out[i] = outcomes[k] + weight * thinking[k]));
  }
  return out;
}

/**
 * Trust-GRPO advantage: `grpo`'s z-score (sample std, ε = 1e-6) of `trustRewards`.
 * SophiaVL-R1 (#228, arXiv 2505.17018); kxfan2002/SophiaVL-R1 verl/workers/reward/custom.py.
 */
export function trustAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & TrustAdvantageOptions = {},
): AdvantageResult {
  const rewards = Array.from(trustRewards(input, options), (r) => (Number.isFinite(r) ? r : null));
  return grpoAdvantage({ ...input, rewards }, options);
}

/** `algorithm.advantage: trust-grpo`: the entry `grpo list` prints and configs name. */
export const trustAdvantagePart = defineAdvantageEstimator({
  name: 'trust-grpo',
  fn: trustAdvantage,
  description:
    'R = r_o + γ·0.3·exp(−step/500)·r_t per group (γ = exp(μ_c − μ_i) if μ_c < μ_i; none if all r_o ≥ 0.9 or ≤ 0.1), then grpo',
  citation: 'SophiaVL-R1 Trust-GRPO (#228, arXiv 2505.17018), kxfan2002/SophiaVL-R1 custom.py',
  needs: ['rewardComponents'],
  options: z
    .object({
      thinkingReward: z.string().min(1).describe('the run reward scoring the reasoning (r_t ∈ [0, 1]); required'),
      scale: z.number().nonnegative().describe('α, the thinking reward scale at step 0 (default 0.3)'),
      annealSteps: z.number().positive().describe('T of exp(−step/T) (default 500)'),
      queryThreshold: z.number().describe('r_t counts only where r_o ≥ this (default 0.2)'),
      epsilon: epsilonOption,
      std: stdOption,
      singletonGroup: singletonGroupOption,
    })
    .partial()
    .strict(),
  refuses: (options, settings) => {
    const name = options.thinkingReward;
    if (typeof name !== 'string')
      return [
        'algorithm.advantageOptions.thinkingReward: trust-grpo needs the name of the run reward that scores the reasoning',
      ];
    return settings.rewardNames.includes(name)
      ? []
      : [
          `algorithm.advantageOptions.thinkingReward: "${name}" is not a reward of this run (rewards: ${settings.rewardNames.join(', ')})`,
        ];
  },
});
