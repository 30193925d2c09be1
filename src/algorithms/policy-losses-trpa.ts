/**
 * TRPA: trust region preference approximation (Su et al., "Trust Region Preference Approximation: A
 * simple and stable reinforcement learning algorithm for LLM reasoning", #261, arXiv 2504.04524).
 * Rule-defined preference levels (correct > wrong answer > no answer > bad format) turn each group
 * into every pair of completions on different levels; a DPO-style logistic loss on the pairs'
 * reference log-ratios (steeper, ×anisotropy, when the winner is correct) plus a KL trust region to
 * π_old replaces the clipped surrogate.
 *
 * Is: the `trpa` advantage (the raw reward, the authors' `compute_trpa_outcome_advantage`) and the
 * `trpa` loss, exact to the authors' code (XueruiSu/Trust-Region-Preference-Approximation,
 * `verl/trainer/ppo/core_algos.py` `compute_pairwise_policy_loss`, and `verl/workers/actor/dp_actor.py`
 * `update_policy` with use_trkl_loss: + c·token-mean low_var_kl(logπ_θ, logπ_old), or
 * c·√(KL + 0.25) with use_sqrt_trkl), with the defaults of their `main_TRPA.sh` (β = 0.1,
 * anisotropy 2.5, c = 0.001, no square root). A sequence's level is its reward (the authors' rule
 * rewards give each level its own value: 3, −0.5, −1, −3 in deepscaler's math reward): a higher
 * reward is preferred, and a winner whose reward is at least `correctReward` is the authors' level 1.
 * The pairs' mean is over this call, as theirs is over a micro-batch; the call's loss is scaled by
 * its share of the batch's sequences, as theirs is divided by the gradient-accumulation count.
 * Is not: their KL-to-reference loss, which `update_policy` computes but, under TRPA, never adds.
 */
import { z } from 'zod';
import { add, div, exp, log, mul, reshape, sigmoid, sqrt, sub, sum, tensor } from '../tensor/index.js';
import { type Tensor } from '../tensor/index.js';
import {
  type AdvantageInput,
  type AdvantageResult,
  defineAdvantageEstimator,
  finishAdvantages,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';
import type { RunSettings } from './registry.js';

/**
 * TRPA's advantage: A_i = r_i, the raw reward, which the `trpa` loss reads as the preference level.
 * Unscored samples get 0 and keep 0. TRPA (#261); the authors' compute_trpa_outcome_advantage.
 */
export function trpaAdvantage(input: AdvantageInput): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  return { advantages: finishAdvantages(rewards), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: trpa`: the entry `grpo list` prints and configs name. */
export const trpaAdvantagePart = defineAdvantageEstimator({
  name: 'trpa',
  fn: trpaAdvantage,
  description: 'A = r, the raw reward: the preference level the trpa loss pairs on',
  citation:
    'TRPA (#261, arXiv 2504.04524); XueruiSu/Trust-Region-Preference-Approximation compute_trpa_outcome_advantage',
  options: z.object({}).strict(),
});

/** TRPA's options (the authors' names in brackets). */
export interface TrpaLossOptions {
  /** β of the logistic loss on the log-ratio difference [trpa_beta] (default 0.1). */
  beta?: number;
  /** Factor on β when the winner is correct [trpa_anisotropy] (default 2.5). */
  anisotropy?: number;
  /** A reward at or above this is the authors' level 1, correct (default 1). */
  correctReward?: number;
  /** c of the trust-region KL(π_θ, π_old) term [tr_kl_loss_coef] (default 0.001). */
  trustRegionCoefficient?: number;
  /** c·√(KL + 0.25) instead of c·KL [use_sqrt_trkl] (default false). */
  squareRootTrustRegion?: boolean;
}

function checkFinite(value: number, field: string, positive = false): number {
  if (!Number.isFinite(value) || (positive ? value <= 0 : value < 0))
    throw new RangeError(`options.${field} must be ${positive ? '> 0' : '≥ 0'}, got ${value}.`);
  return value;
}

/** The pairs [winner, loser, steep] of each group: every two rows on different levels (rewards), winner higher. */
function preferencePairs(
  levels: ArrayLike<number>,
  rows: number[],
  correctReward: number,
): [number, number, boolean][] {
  const pairs: [number, number, boolean][] = [];
  for (const winner of rows)
    for (const loser of rows)
      if (levels[winner] > levels[loser]) pairs.push([winner, loser, levels[winner] >= correctReward]);
  return pairs;
}

/**
 * TRPA loss: (B/N)·(mean over pairs −log σ(h) + c·KL), h = β·(s_w − s_l)·(anisotropy if r_w ≥ correctReward),
 * s = mean_t (logπ_θ − logπ_ref), pairs = every two members of a group with different rewards (the
 * advantages of `trpa`), KL = token mean of π_old/π_θ − log(π_old/π_θ) − 1 (clamped to [−10, 10]).
 * Without any pair in the call: −mean log σ(m·s), m = +1 for correct rows and −1 otherwise (theirs).
 * Defaults β 0.1, anisotropy 2.5, c 0.001. Needs whole groups and the reference's log-probs.
 * #261 (arXiv 2504.04524); the authors' core_algos.py compute_pairwise_policy_loss, dp_actor.py update_policy.
 */
export function trpaLoss(input: PolicyLossInput, options: PolicyLossOptions & TrpaLossOptions = {}): PolicyLossResult {
  for (const field of ['klCoefficient', 'mismatchCorrection', 'topEntropyQuantile'] as const)
    if (options[field] !== undefined && options[field] !== 0)
      throw new Error(`The trpa loss does not support options.${field}.`);
  if (input.groupSizes === undefined) throw new Error('The trpa loss needs input.groupSizes (whole groups per batch).');
  if (input.refLogprobs === undefined)
    throw new Error("The trpa loss needs input.refLogprobs (the reference's log-probs).");
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const beta = checkFinite(options.beta ?? 0.1, 'beta', true);
  const anisotropy = checkFinite(options.anisotropy ?? 2.5, 'anisotropy', true);
  const correctReward = options.correctReward ?? 1;
  if (!Number.isFinite(correctReward))
    throw new RangeError(`options.correctReward must be finite, got ${correctReward}.`);
  const coefficient = checkFinite(options.trustRegionCoefficient ?? 0.001, 'trustRegionCoefficient');
  const layout = resolveGroups(B, input.groupSizes);
  const refData = 'data' in input.refLogprobs ? input.refLogprobs.data : input.refLogprobs;
  if (refData.length !== B * T)
    throw new RangeError(`input.refLogprobs has ${refData.length} entries, expected ${B * T} ([${B}, ${T}]).`);
  const reference = tensor(
    Float32Array.from(refData, (v, i) => (mask[i] ? v : 0)),
    [B, T],
  );
  const tokens = new Float32Array(B);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) tokens[b] += mask[b * T + t];
  const levels = Float32Array.from({ length: B }, (_, b) => {
    let t = 0;
    while (t < T - 1 && !mask[b * T + t]) t++;
    return prepared.advantages.data[b * T + t]; // the trpa advantage: the raw reward
  });

  // s [B]: each row's masked mean of logπ_θ − logπ_ref (the authors' masked_mean, axis −1).
  const referenceRatio = div(
    sum(sub(prepared.logprobs, reference), 1),
    tensor(
      tokens.map((n) => Math.max(n, 1)),
      [B],
    ),
  );
  const winners: number[] = [];
  const losers: number[] = [];
  const scales: number[] = [];
  for (let g = 0; g < layout.groupCount; g++) {
    const rows = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k).filter((b) => tokens[b] > 0);
    for (const [winner, loser, steep] of preferencePairs(levels, rows, correctReward)) {
      winners.push(winner);
      losers.push(loser);
      scales.push(steep ? anisotropy * beta : beta);
    }
  }
  let preference: Tensor;
  if (winners.length > 0) {
    // h [P] = scale·(s_w − s_l): a [P, B] selection of ±scale, times s broadcast over pairs, summed per pair.
    const selection = new Float32Array(winners.length * B);
    winners.forEach((w, p) => {
      selection[p * B + w] += scales[p];
      selection[p * B + losers[p]] -= scales[p];
    });
    const h = sum(mul(tensor(selection, [winners.length, B]), reshape(referenceRatio, [1, B])), 1);
    preference = mul(sum(log(sigmoid(h))), -1 / winners.length);
  } else {
    const sign = Float32Array.from(levels, (level) => (level >= correctReward ? 1 : -1));
    const rows = Math.max(B, 1);
    preference = mul(sum(log(sigmoid(mul(referenceRatio, tensor(sign, [B]))))), -1 / rows);
  }

  // The trust region: verl's low_var_kl(logπ_θ, logπ_old) = e^{old − θ} − (old − θ) − 1, clamped to ±10.
  const logRatio = logRatioOf(prepared);
  const oldMinusNew = mul(logRatio, -1);
  const perToken = sub(sub(exp(oldMinusNew), oldMinusNew), 1);
  // torch.clamp: the value clamped, the gradient 1 inside ±10 and 0 outside.
  const inside = tensor(
    Float32Array.from(perToken.data, (v, i) => (mask[i] && v >= -10 && v <= 10 ? 1 : 0)),
    [B, T],
  );
  const outside = tensor(
    Float32Array.from(perToken.data, (v, i) => (mask[i] && (v < -10 || v > 10) ? Math.min(Math.max(v, -10), 10) : 0)),
    [B, T],
  );
  const tokenCount = Math.max(
    tokens.reduce((a, b) => a + b, 0),
    1,
  );
  const kl = div(add(sum(mul(perToken, inside)), sum(outside)), tokenCount);
  const trustRegion = options.squareRootTrustRegion ? sqrt(add(kl, 0.25)) : kl;
  const sequences = options.globalSequenceCount ?? B;
  if (!(sequences > 0)) throw new RangeError(`options.globalSequenceCount must be > 0, got ${sequences}.`);
  const loss = mul(add(preference, mul(trustRegion, coefficient)), B / sequences);
  return {
    loss,
    metrics: {
      ...ratioMetrics(logRatio.data, mask),
      policyLoss: loss.item(),
      trustRegionKl: kl.item(),
      trpaPairs: winners.length,
    },
  };
}

/** The run settings TRPA cannot work with: its only KL is the trust region to π_old, and it pairs raw rewards. */
function refusesTrpa(settings: RunSettings): string[] {
  return [
    ...(settings.advantage.name !== 'trpa'
      ? [
          `algorithm.advantage: the trpa loss reads each completion's raw reward as its preference level; use algorithm.advantage "trpa", got "${settings.advantage.name}"`,
        ]
      : []),
    ...(settings.klCoefficient > 0 && settings.klPlacement === 'loss'
      ? [
          'algorithm.klCoefficient: the trpa loss adds no KL-to-reference term (its KL is the trust region to π_old, lossOptions.trustRegionCoefficient); use klCoefficient 0',
        ]
      : []),
    ...(settings.mismatchCorrection
      ? ['algorithm.mismatchCorrection: the trpa loss has no per-token weights to correct; set it to null']
      : []),
  ];
}

/** `algorithm.loss: trpa`: the entry `grpo list` prints and configs name. */
export const trpaLossPart = definePolicyLoss({
  name: 'trpa',
  fn: trpaLoss,
  description:
    'pairs on different reward levels: −log σ(β·(s_w − s_l)) (β×2.5 if the winner is correct), s = mean log π/π_ref; + 0.001·KL(π_old); whole groups',
  citation:
    'TRPA (#261, arXiv 2504.04524); XueruiSu/Trust-Region-Preference-Approximation compute_pairwise_policy_loss',
  needs: ['wholeGroups', 'referenceLogprobs'],
  options: z
    .object({
      beta: z.number().positive().describe('β of the logistic loss (default 0.1)'),
      anisotropy: z.number().positive().describe('factor on β when the winner is correct (default 2.5)'),
      correctReward: z.number().describe('a reward at or above this is correct, level 1 (default 1)'),
      trustRegionCoefficient: z.number().nonnegative().describe('c of the KL(π_θ, π_old) trust region (default 0.001)'),
      squareRootTrustRegion: z.boolean().describe('c·√(KL + 0.25) instead of c·KL (default false)'),
    })
    .partial()
    .strict(),
  refuses: (_options, settings) => refusesTrpa(settings),
});
