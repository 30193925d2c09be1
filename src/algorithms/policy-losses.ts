/**
 * Token-level policy losses: PPO/GRPO clipped surrogate (asymmetric clip-higher, dual-clip), CISPO
 * (both cap conventions), the DISPO-style four-bound variant, and on-policy REINFORCE (also GTPO's
 * loss). Each builds a per-token surrogate [B, T] from tensor ops and hands it to
 * `finishPolicyLoss` (token weights, KL, aggregation).
 *
 * Is: the surrogates, their clip metrics and their TSDoc'd defaults.
 * Is not: sequence-level losses (GSPO, REAL in policy-losses-sequence.ts) or the aggregation modes.
 */
import { z } from 'zod';
import { clipBoundsOption, clipHighOption, clipLowOption, commonLossOptions } from './option-schemas.js';
import { definePolicyLoss } from './policy-losses-common.js';
import { type Tensor, clamp, exp, less, minimum, mul, neg, sub, tensor, where } from '../tensor/index.js';
import { seqMeanTokenMeanWeights, tokenMeanWeights } from './aggregate.js';
import { gtpoEntropyFilter } from './policy-losses-gtpo.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  type PreparedLossInput,
  finishPolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';

function maskedFraction(
  prepared: PreparedLossInput,
  predicate: (ratio: number, advantage: number) => boolean,
  ratio: Float32Array,
): number {
  let hits = 0;
  let count = 0;
  for (let i = 0; i < prepared.mask.length; i++) {
    if (!prepared.mask[i]) continue;
    count++;
    if (predicate(ratio[i], prepared.advantages.data[i])) hits++;
  }
  return count > 0 ? hits / count : 0;
}

function maskedMean(values: ArrayLike<number>, mask: Float32Array): number {
  let total = 0;
  let count = 0;
  mask.forEach((m, i) => {
    if (m) {
      count++;
      total += values[i];
    }
  });
  return count > 0 ? total / count : 0;
}

function checkEpsilon(value: number, field: string, maximum = Infinity): number {
  if (!(value >= 0 && value <= maximum))
    throw new RangeError(`options.${field} must be in [0, ${maximum}], got ${value}.`);
  return value;
}

/** −min(ρ·A, clip(ρ, low, high)·A): the clipped surrogate shared by PPO and GSPO-token. */
export function clippedSurrogate(ratio: Tensor, advantages: Tensor, low: number, high: number): Tensor {
  return neg(minimum(mul(ratio, advantages), mul(clamp(ratio, low, high), advantages)));
}

/**
 * PPO/GRPO clipped surrogate per token: −min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A), ρ = exp(logπ_θ −
 * logπ_old). Defaults ε_low = ε_high = 0.2 (set ε_high = 0.28 for DAPO clip-higher, 0.16/0.24 for
 * NGRPO); optional dual-clip caps negative-advantage losses at −c·A (verl, c = 3). Default
 * aggregation token-mean (TRL `dapo`, verl default). Metrics: clipFractionLow/High (verl's
 * definition: the clip binds), dualClipFraction, ratio stats, approxKl (k3 of π_old vs π_θ).
 * Schulman et al. 2017 (PPO); Shao et al. 2024 (GRPO); Yu et al. 2025 (DAPO clip-higher); Ye et al. 2020 (dual-clip).
 */
export function ppoClipLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const epsilonLow = checkEpsilon(options.epsilonLow ?? 0.2, 'epsilonLow', 1);
  const epsilonHigh = checkEpsilon(options.epsilonHigh ?? 0.2, 'epsilonHigh');
  const logRatio = logRatioOf(prepared);
  const ratio = exp(logRatio);
  let surrogate = clippedSurrogate(ratio, prepared.advantages, 1 - epsilonLow, 1 + epsilonHigh);
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatio.data, prepared.mask),
    clipFractionLow: maskedFraction(prepared, (r, a) => a < 0 && r < 1 - epsilonLow, ratio.data),
    clipFractionHigh: maskedFraction(prepared, (r, a) => a > 0 && r > 1 + epsilonHigh, ratio.data),
  };
  metrics.clipFraction = metrics.clipFractionLow + metrics.clipFractionHigh;
  if (options.dualClip !== undefined) {
    const c = options.dualClip;
    if (!(c > 1)) throw new RangeError(`options.dualClip must be > 1, got ${c}.`);
    const capped = minimum(surrogate, mul(prepared.advantages, -c));
    surrogate = where(less(prepared.advantages, 0), capped, surrogate);
    metrics.dualClipFraction = maskedFraction(prepared, (r, a) => a < 0 && r > c, ratio.data);
  }
  return finishPolicyLoss(prepared, input, options, surrogate, tokenMeanWeights, metrics);
}

/** `algorithm.loss: ppo-clip`: the entry `grpo list` prints and configs name. */
export const ppoClipLossPart = definePolicyLoss({
  name: 'ppo-clip',
  fn: ppoClipLoss,
  description: '−min(ρA, clip(ρ, 1−ε_low, 1+ε_high)A) per token; clip-higher, dual-clip; token-mean',
  citation: 'PPO (Schulman 2017); GRPO; DAPO clip-higher, arXiv 2503.14476',
  options: z
    .object({ epsilonLow: clipLowOption, epsilonHigh: clipHighOption, dualClip: z.number().gt(1) })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});

/** −sg(w)·A·logπ_θ: the REINFORCE-with-fixed-weight form shared by CISPO and DISPO. */
function weightedReinforce(prepared: PreparedLossInput, weights: Float32Array): Tensor {
  const constant = tensor(
    Float32Array.from(weights, (w, i) => -w * prepared.advantages.data[i]),
    [prepared.B, prepared.T],
  );
  return mul(prepared.logprobs, constant);
}

/**
 * CISPO: −sg(clip(ρ))·A·logπ_θ per token, so every token keeps a gradient (scaled by the clipped
 * IS weight). capMode 'relative' (default) clips ρ to [1−ε_low, 1+ε_high] with defaults ε_low = 1
 * (no lower bound, as the paper) and ε_high = 0.28 (Trinity-RFT); 'absolute' clips ρ to at most
 * ε_high (default 5.0, ScaleRL / ms-swift). Default aggregation token-mean (global with
 * `globalTokenCount`). MiniMax 2025, MiniMax-M1 (CISPO).
 */
export function cispoLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const absolute = (options.capMode ?? 'relative') === 'absolute';
  const low = absolute ? 0 : 1 - checkEpsilon(options.epsilonLow ?? 1, 'epsilonLow', 1);
  const high = absolute
    ? checkEpsilon(options.epsilonHigh ?? 5, 'epsilonHigh')
    : 1 + checkEpsilon(options.epsilonHigh ?? 0.28, 'epsilonHigh');
  const logRatio = logRatioOf(prepared);
  const ratio = Float32Array.from(logRatio.data, Math.exp);
  const weights = ratio.map((r) => Math.min(Math.max(r, low), high));
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatio.data, prepared.mask),
    clipFractionLow: maskedFraction(prepared, (r) => r < low, ratio),
    clipFractionHigh: maskedFraction(prepared, (r) => r > high, ratio),
  };
  metrics.clipFraction = metrics.clipFractionLow + metrics.clipFractionHigh;
  return finishPolicyLoss(prepared, input, options, weightedReinforce(prepared, weights), tokenMeanWeights, metrics);
}

/** `algorithm.loss: cispo`: the entry `grpo list` prints and configs name. */
export const cispoLossPart = definePolicyLoss({
  name: 'cispo',
  fn: cispoLoss,
  description: '−sg(clip(ρ))·A·logπ: every token keeps a gradient; relative or absolute cap',
  citation: 'MiniMax-M1 (CISPO); ScaleRL absolute cap',
  options: z
    .object({ epsilonLow: clipLowOption, epsilonHigh: clipHighOption, capMode: z.enum(['relative', 'absolute']) })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});

function requireBounds(bounds: [number, number] | undefined, field: string): [number, number] {
  if (bounds === undefined)
    throw new Error(`The dispo loss needs options.${field} ([ε_down, ε_up]; the paper's defaults are unknown).`);
  checkEpsilon(bounds[0], `${field}[0]`, 1);
  checkEpsilon(bounds[1], `${field}[1]`);
  return bounds;
}

/**
 * DISPO-style four-bound IS clipping: w = sg(clip(ρ, 1−ε_down^c, 1+ε_up^c)) with c = positive
 * bounds for A > 0 and negative bounds for A ≤ 0, loss −w·A·logπ_θ; `maskOutside` gives zero
 * gradient outside the bounds (the abstract's reading). With four equal bounds and
 * maskOutside = false it is CISPO. Bounds are required. DISPO (#229), inferred from the abstract [I].
 */
export function dispoLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const positive = requireBounds(options.positiveBounds, 'positiveBounds');
  const negative = requireBounds(options.negativeBounds, 'negativeBounds');
  const logRatio = logRatioOf(prepared);
  const ratio = Float32Array.from(logRatio.data, Math.exp);
  const outside = new Uint8Array(ratio.length);
  const weights = ratio.map((r, i) => {
    const [down, up] = prepared.advantages.data[i] > 0 ? positive : negative;
    outside[i] = r < 1 - down || r > 1 + up ? 1 : 0;
    if (outside[i] && options.maskOutside) return 0;
    return Math.min(Math.max(r, 1 - down), 1 + up);
  });
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatio.data, prepared.mask),
  };
  metrics.clipFraction = maskedMean(outside, prepared.mask);
  return finishPolicyLoss(prepared, input, options, weightedReinforce(prepared, weights), tokenMeanWeights, metrics);
}

/** `algorithm.loss: dispo`: the entry `grpo list` prints and configs name. */
export const dispoLossPart = definePolicyLoss({
  name: 'dispo',
  fn: dispoLoss,
  description: 'CISPO-style weight with separate bounds for A>0 and A<0, optional mask outside',
  citation: 'DISPO (#229), from the abstract',
  options: z
    .object({
      positiveBounds: clipBoundsOption.describe(
        '[ε_down, ε_up] for tokens of positive-advantage completions; the paper gives no defaults',
      ),
      negativeBounds: clipBoundsOption.describe('[ε_down, ε_up] for tokens of negative-advantage completions'),
      maskOutside: z.boolean().optional(),
    })
    .extend(commonLossOptions)
    .strict(),
});

/** ρ = exp(logπ − sg(logπ)): value 1, gradient of logπ — the on-policy ratio. */
function onPolicyRatio(logprobs: Tensor): Tensor {
  return exp(sub(logprobs, logprobs.detach()));
}

/**
 * On-policy REINFORCE with a group baseline: −exp(logπ − sg(logπ))·A per token (value −A, gradient
 * −A), ignoring oldLogprobs; default aggregation token-mean. Williams 1992; the loss of Dr. GRPO /
 * RLOO style one-update-per-batch training.
 */
export function reinforceLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const surrogate = neg(mul(onPolicyRatio(prepared.logprobs), prepared.advantages));
  return finishPolicyLoss(
    prepared,
    input,
    options,
    surrogate,
    tokenMeanWeights,
    ratioMetrics(logRatioOf(prepared).data, prepared.mask),
  );
}

/** `algorithm.loss: reinforce`: the entry `grpo list` prints and configs name. */
export const reinforceLossPart = definePolicyLoss({
  name: 'reinforce',
  fn: reinforceLoss,
  description: 'on-policy −exp(logπ − sg(logπ))·A, no ratio to π_old, no clip',
  citation: 'Williams 1992 (REINFORCE with a group baseline)',
  options: z.object({}).extend(commonLossOptions).strict(),
});

/**
 * GTPO loss: −Σ_t ρ·A·δ_t/|o| with ρ = exp(logπ − sg(logπ)) (on-policy, no clipping, no KL),
 * δ = input.tokenWeights from `gtpoTokenWeights`; when input.entropies is given, A is first passed
 * through `gtpoEntropyFilter` with each completion's mean token entropy (A = 0 above
 * options.entropyThreshold 0.7, else A − options.entropyCoefficient 0.1·H); default aggregation
 * seq-mean-token-mean. GTPO (#197; code winstonsmith1897/GTPO gtpo_training.py).
 */
export function gtpoLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const metrics = ratioMetrics(logRatioOf(prepared).data, prepared.mask);
  let advantages = prepared.advantages;
  if (input.entropies !== undefined) {
    // The entropy filter acts on each completion's advantage, from its mean token entropy H_i.
    if (!prepared.perSequenceAdvantages) throw new Error('The gtpo entropy filter needs per-sequence advantages.');
    const { B, T, mask } = prepared;
    const meanEntropies = new Float32Array(B);
    const sequenceAdvantages = new Float32Array(B);
    for (let b = 0; b < B; b++) {
      let total = 0;
      let count = 0;
      for (let t = 0; t < T; t++)
        if (mask[b * T + t]) {
          total += input.entropies[b * T + t];
          count++;
          sequenceAdvantages[b] = prepared.advantages.data[b * T + t];
        }
      meanEntropies[b] = count > 0 ? total / count : 0;
    }
    const filtered = gtpoEntropyFilter(sequenceAdvantages, meanEntropies, {
      threshold: options.entropyThreshold,
      coefficient: options.entropyCoefficient,
    });
    metrics.entropyFilteredFraction =
      meanEntropies.filter((h) => h > (options.entropyThreshold ?? 0.7)).length / Math.max(1, B);
    advantages = tensor(
      Float32Array.from({ length: B * T }, (_, i) => (mask[i] ? filtered[Math.floor(i / T)] : 0)),
      [B, T],
    );
  }
  const surrogate = neg(mul(onPolicyRatio(prepared.logprobs), advantages));
  return finishPolicyLoss(prepared, input, options, surrogate, seqMeanTokenMeanWeights, metrics);
}

/** `algorithm.loss: gtpo`: the entry `grpo list` prints and configs name. */
export const gtpoLossPart = definePolicyLoss({
  name: 'gtpo',
  fn: gtpoLoss,
  description: 'on-policy −Σ_t ρAδ/|o|: conflict-token weights δ from the group, entropy filter on A',
  citation: 'GTPO (#197), winstonsmith1897/GTPO',
  needs: ['groupTokenWeights'],
  options: z
    .object({
      positiveWeight: z.number().nonnegative(),
      negativeWeight: z.number().nonnegative(),
      direction: z.enum(['forward', 'backward', 'both']),
      entropyThreshold: z
        .number()
        .nonnegative()
        .describe('completions with mean token entropy above this get A = 0 (default 0.7)'),
      entropyCoefficient: z.number().nonnegative().describe('otherwise A ← A − coefficient·H (default 0.1)'),
    })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});
