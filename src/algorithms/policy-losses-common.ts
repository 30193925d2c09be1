/**
 * What every policy loss shares: the input/option/result types, input validation, the token
 * weightings applied on top of any loss (rollout/trainer mismatch importance sampling, top-entropy
 * token selection, caller-given token weights), the KL term and the aggregation.
 *
 * Is: `finishPolicyLoss`, which turns a loss's per-token surrogate [B, T] into `{ loss, metrics }`.
 * Is not: any particular surrogate (policy-losses.ts, policy-losses-sequence.ts).
 */
import { type Part, definePart } from './registry.js';
import { Tensor, add, mul, noGrad, sub, tensor, where } from '../tensor/index.js';
import { type AggregationFn, type AggregationOptions, aggregateLoss } from './aggregate.js';
import { type KlEstimatorFn, klK3, offPolicyCorrectedKl } from './kl.js';

/** Per-token data as a tensor or a flat row-major array. */
export type TokenValues = Tensor | ArrayLike<number>;

/** What every policy loss receives. B = sequences, T = padded completion length. */
export interface PolicyLossInput {
  /** [B, T] log π_θ of each sampled token (requiresGrad): the only input that carries gradient; padded positions may hold anything. */
  logprobs: Tensor;
  /** [B, T] log π_old of the sampled tokens under the policy that generated them (trainer-side). */
  oldLogprobs: TokenValues;
  /** [B] per-sequence or [B, T] per-token advantages. */
  advantages: TokenValues;
  /** [B, T] 1 for completion tokens that count, 0 for padding, prompt and masked tokens. */
  mask: ArrayLike<number>;
  /** [B, T] log π_ref, needed when options.klCoefficient > 0. */
  refLogprobs?: TokenValues;
  /** [B, T] log-probs reported by the inference engine, for rollout/trainer mismatch correction. */
  rolloutLogprobs?: TokenValues;
  /** [B, T] policy entropy per token, for metrics and top-entropy selection. */
  entropies?: ArrayLike<number>;
  /**
   * [B, T] the same entropies as a tensor with gradient (through the logits to the parameters), given
   * only to a loss whose entry needs `entropyWithGradient`; padded positions hold the entropy of a
   * real row, so mask them like the surrogate.
   */
  entropyTensor?: Tensor;
  /** [B, T] extra per-token weights on the surrogate (e.g. GTPO conflict-token weights). */
  tokenWeights?: ArrayLike<number>;
  /** REAL: [B] 1 = positive (correct), 0 = negative, NaN = ignored; default: sign of the advantage. */
  sequenceLabels?: ArrayLike<number>;
  /** REAL: group sizes of the B sequences (whole groups per batch). */
  groupSizes?: number | readonly number[];
}

/** Rollout/trainer mismatch correction (TIS / MIS), TRL's vLLM importance-sampling correction. */
export interface MismatchCorrection {
  /** 'truncate' (TIS): weight min(ratio, C); 'mask' (MIS): weight ratio·1[ratio ≤ C]. */
  mode: 'truncate' | 'mask';
  /** 'token': ratio per token; 'sequence': the product of a sequence's token ratios. */
  level: 'token' | 'sequence';
  /** The cap C (default 2). */
  cap?: number;
}

/** Every tunable a policy loss may read; each loss documents the fields it uses and its defaults. */
export interface PolicyLossOptions extends AggregationOptions {
  /** Lower clip width: the ratio is clipped at 1 − epsilonLow. */
  epsilonLow?: number;
  /** Upper clip width: the ratio is clipped at 1 + epsilonHigh (CISPO 'absolute': the cap itself). */
  epsilonHigh?: number;
  /** PPO dual-clip constant c (> 1): caps the loss of negative-advantage tokens at −c·A (verl uses 3). */
  dualClip?: number;
  /** CISPO: 'relative' clips ρ to [1−ε_low, 1+ε_high]; 'absolute' clips ρ to at most ε_high (ScaleRL). */
  capMode?: 'relative' | 'absolute';
  /** DISPO: [ε_down, ε_up] for tokens of positive-advantage sequences. */
  positiveBounds?: [number, number];
  /** DISPO: [ε_down, ε_up] for tokens of negative-advantage sequences. */
  negativeBounds?: [number, number];
  /** DISPO: zero gradient for tokens whose ratio lies outside the bounds. */
  maskOutside?: boolean;
  /** REAL temperature τ (default 0.5). */
  temperature?: number;
  /** Aggregation mode (default per loss). */
  aggregation?: AggregationFn;
  /** β of the KL-in-loss term (default 0: no KL, no reference model needed). */
  klCoefficient?: number;
  /** KL estimator (default k3). */
  klEstimator?: KlEstimatorFn;
  /** Multiply the KL by the importance ratio π_θ/π_old (DeepSeek-V3.2). */
  klOffPolicyCorrection?: boolean;
  /** Rollout/trainer mismatch correction; needs input.rolloutLogprobs. */
  mismatchCorrection?: MismatchCorrection;
  /** Keep only tokens in the top quantile of entropy (e.g. 0.2); needs input.entropies. */
  topEntropyQuantile?: number;
  /** The entropy cut of `topEntropyQuantile` over the whole accumulated batch (default: this call's tokens). */
  topEntropyThreshold?: number;
  /** REAL: labelled groups in the whole accumulated batch (default: those of this call), so micro-batches sum to the batch loss. */
  globalGroupCount?: number;
  /** GTPO entropy filter: completions whose mean token entropy exceeds this get A = 0 (default 0.7). */
  entropyThreshold?: number;
  /** GTPO entropy filter: otherwise A ← A − entropyCoefficient·H (default 0.1). */
  entropyCoefficient?: number;
}

/** What every policy loss returns. */
export interface PolicyLossResult {
  /** Scalar loss to call backward() on. */
  loss: Tensor;
  /** Namespaced-free numbers for logging (clipFraction, approxKl, ratioMean, ...). */
  metrics: Record<string, number>;
}

/** The one signature shared by every registered policy loss. */
export type PolicyLossFn = (input: PolicyLossInput, options?: PolicyLossOptions) => PolicyLossResult;

/** A policy loss's file exports its function with this entry (`algorithm.loss`). */
export const definePolicyLoss = (entry: Omit<Part<PolicyLossFn>, 'kind'>): Part<PolicyLossFn> =>
  definePart('policy loss', entry);

/** Validated input: shapes known, constants as tensors. */
export interface PreparedLossInput {
  B: number;
  T: number;
  logprobs: Tensor;
  oldLogprobs: Tensor;
  /** [B, T] advantages broadcast to tokens. */
  advantages: Tensor;
  /** True when the caller gave per-sequence advantages. */
  perSequenceAdvantages: boolean;
  mask: Float32Array;
}

function asConstant(values: TokenValues, shape: number[], field: string): Tensor {
  const data = values instanceof Tensor ? values.data : values;
  const size = shape.reduce((a, b) => a * b, 1);
  if (data.length !== size)
    throw new RangeError(`input.${field} has ${data.length} entries, expected ${size} ([${shape.join(', ')}]).`);
  return tensor(Float32Array.from(data), shape);
}

/** Checks shapes and converts constants to tensors; advantages [B] are broadcast to [B, T]. */
export function prepareLossInput(input: PolicyLossInput): PreparedLossInput {
  if (input.logprobs.shape.length !== 2)
    throw new RangeError(`input.logprobs must be [B, T], got [${input.logprobs.shape.join(', ')}].`);
  const [B, T] = input.logprobs.shape;
  const mask = Float32Array.from(asConstant(input.mask, [B, T], 'mask').data, (m) => (m ? 1 : 0));
  // Padded positions may hold anything (−inf, NaN, stale values): replace them by 0 up front, so no
  // op downstream ever multiplies a zero gradient by a non-finite number; where() routes exactly 0 back.
  const logprobs = where(tensor(mask, [B, T]), input.logprobs, 0);
  const oldLogprobs = asConstant(input.oldLogprobs, [B, T], 'oldLogprobs');
  oldLogprobs.data.forEach((_, i) => {
    if (!mask[i]) oldLogprobs.data[i] = 0;
  });
  const advantageData = input.advantages instanceof Tensor ? input.advantages.data : input.advantages;
  let advantages: Tensor;
  if (advantageData.length === B && T !== 1) {
    const expanded = new Float32Array(B * T);
    for (let b = 0; b < B; b++) expanded.fill(advantageData[b], b * T, (b + 1) * T);
    advantages = tensor(expanded, [B, T]);
  } else {
    advantages = asConstant(advantageData, [B, T], 'advantages (per token)');
  }
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) advantages.data[i] = 0;
    else if (!Number.isFinite(advantages.data[i]))
      throw new RangeError(`input.advantages is not finite at token ${i} (row ${Math.floor(i / T)}).`);
    else if (!Number.isFinite(oldLogprobs.data[i]))
      throw new RangeError(`input.oldLogprobs is not finite at token ${i} (row ${Math.floor(i / T)}).`);
  }
  return { B, T, logprobs, oldLogprobs, advantages, perSequenceAdvantages: advantageData.length === B, mask };
}

/**
 * Rollout/trainer mismatch weights [B, T] (TRL vLLM IS correction): ratio = π_old/π_rollout per token
 * or its product over the sequence; 'truncate' gives min(ratio, C) (TIS), 'mask' gives
 * min(ratio, C)·1[ratio ≤ C] (MIS: tokens or sequences past the cap are dropped). C defaults to 2.
 */
export function mismatchWeights(
  oldLogprobs: ArrayLike<number>,
  rolloutLogprobs: ArrayLike<number>,
  mask: ArrayLike<number>,
  B: number,
  T: number,
  correction: MismatchCorrection,
): Float32Array {
  const cap = correction.cap ?? 2;
  if (!(cap > 0)) throw new RangeError(`mismatchCorrection.cap must be > 0, got ${cap}.`);
  const weights = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    let sequenceLogRatio = 0;
    for (let t = 0; t < T; t++)
      if (mask[b * T + t]) sequenceLogRatio += oldLogprobs[b * T + t] - rolloutLogprobs[b * T + t];
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      const ratio = Math.exp(correction.level === 'sequence' ? sequenceLogRatio : oldLogprobs[i] - rolloutLogprobs[i]);
      weights[i] = correction.mode === 'truncate' ? Math.min(ratio, cap) : ratio <= cap ? ratio : 0;
    }
  }
  return weights;
}

/**
 * The entropy at the (1 − quantile) quantile of the masked tokens (linear interpolation, as
 * torch.quantile): tokens at or above it are the top `quantile` by entropy. Wang et al. 2025,
 * "Beyond the 80/20 Rule"; TRL `top_entropy_quantile`.
 */
export function topEntropyThreshold(entropies: ArrayLike<number>, mask: ArrayLike<number>, quantile: number): number {
  if (!(quantile > 0 && quantile <= 1)) throw new RangeError(`topEntropyQuantile must be in (0, 1], got ${quantile}.`);
  if (entropies.length !== mask.length)
    throw new RangeError(`input.entropies has ${entropies.length} entries but mask has ${mask.length}.`);
  const values: number[] = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) values.push(entropies[i]);
  if (values.length === 0) return Infinity;
  values.sort((a, b) => a - b);
  const position = (1 - quantile) * (values.length - 1);
  const low = Math.floor(position);
  return values[low] + (position - low) * ((values[Math.min(low + 1, values.length - 1)] ?? values[low]) - values[low]);
}

/**
 * Top-entropy token selection [B, T]: 1 for masked tokens whose entropy ≥ `threshold`, by default
 * the (1 − quantile) quantile of these tokens' own entropies (`topEntropyThreshold`); a trainer that
 * splits a batch into micro-batches passes the whole batch's threshold instead.
 */
export function topEntropyMask(
  entropies: ArrayLike<number>,
  mask: ArrayLike<number>,
  quantile: number,
  threshold = topEntropyThreshold(entropies, mask, quantile),
): Float32Array {
  const out = new Float32Array(mask.length);
  for (let i = 0; i < mask.length; i++) out[i] = mask[i] && entropies[i] >= threshold ? 1 : 0;
  return out;
}

function maskedMean(values: ArrayLike<number>, mask: ArrayLike<number>): number {
  let total = 0;
  let count = 0;
  for (let i = 0; i < mask.length; i++)
    if (mask[i]) {
      total += values[i];
      count++;
    }
  return count > 0 ? total / count : 0;
}

/**
 * Applies token weightings, adds β·KL and aggregates: the shared tail of every per-token loss.
 * `surrogate` is the per-token policy loss [B, T]; `aggregation` is the loss's default mode.
 */
export function finishPolicyLoss(
  prepared: PreparedLossInput,
  input: PolicyLossInput,
  options: PolicyLossOptions,
  surrogate: Tensor,
  aggregation: AggregationFn,
  metrics: Record<string, number>,
): PolicyLossResult {
  const { B, T, mask } = prepared;
  const weights = new Float32Array(B * T).fill(1);
  if (input.tokenWeights !== undefined) {
    if (input.tokenWeights.length !== B * T)
      throw new RangeError(`input.tokenWeights has ${input.tokenWeights.length} entries, expected ${B * T}.`);
    for (let i = 0; i < weights.length; i++) weights[i] *= input.tokenWeights[i];
  }
  if (options.mismatchCorrection !== undefined) {
    if (input.rolloutLogprobs === undefined) throw new Error('options.mismatchCorrection needs input.rolloutLogprobs.');
    const rollout = asConstant(input.rolloutLogprobs, [B, T], 'rolloutLogprobs').data;
    const correction = mismatchWeights(prepared.oldLogprobs.data, rollout, mask, B, T, options.mismatchCorrection);
    metrics.mismatchWeightMean = maskedMean(correction, mask);
    metrics.mismatchDroppedFraction = maskedMean(
      Float32Array.from(correction, (w) => (w === 0 ? 1 : 0)),
      mask,
    );
    for (let i = 0; i < weights.length; i++) weights[i] *= correction[i];
  }
  if (options.topEntropyQuantile !== undefined) {
    if (input.entropies === undefined) throw new Error('options.topEntropyQuantile needs input.entropies.');
    const selected = topEntropyMask(input.entropies, mask, options.topEntropyQuantile, options.topEntropyThreshold);
    metrics.entropySelectedFraction = maskedMean(selected, mask);
    for (let i = 0; i < weights.length; i++) weights[i] *= selected[i];
  }
  let perToken = mul(surrogate, tensor(weights, [B, T]));
  metrics.policyLoss = noGrad(() => aggregateLoss(perToken, mask, options.aggregation ?? aggregation, options).item());
  const beta = options.klCoefficient ?? 0;
  if (beta !== 0) {
    if (input.refLogprobs === undefined) throw new Error('options.klCoefficient > 0 needs input.refLogprobs.');
    const ref = asConstant(input.refLogprobs, [B, T], 'refLogprobs');
    const estimator = options.klEstimator ?? klK3;
    const kl = options.klOffPolicyCorrection
      ? offPolicyCorrectedKl(prepared.logprobs, ref, prepared.oldLogprobs, estimator)
      : estimator(prepared.logprobs, ref);
    metrics.kl = maskedMean(kl.data, mask);
    perToken = add(perToken, mul(kl, beta));
  }
  if (input.entropies !== undefined) metrics.entropy = maskedMean(input.entropies, mask);
  const loss = aggregateLoss(perToken, mask, options.aggregation ?? aggregation, options);
  return { loss, metrics };
}

/** Ratio statistics and the k3 approximate KL between π_old and π_θ over masked tokens. */
export function ratioMetrics(logRatio: ArrayLike<number>, mask: ArrayLike<number>): Record<string, number> {
  let minimum = Infinity;
  let maximum = -Infinity;
  let total = 0;
  let approxKl = 0;
  let count = 0;
  for (let i = 0; i < mask.length; i++) {
    if (!mask[i]) continue;
    const ratio = Math.exp(logRatio[i]);
    minimum = Math.min(minimum, ratio);
    maximum = Math.max(maximum, ratio);
    total += ratio;
    approxKl += ratio - 1 - logRatio[i];
    count++;
  }
  if (count === 0) return { ratioMean: 1, ratioMin: 1, ratioMax: 1, approxKl: 0 };
  return { ratioMean: total / count, ratioMin: minimum, ratioMax: maximum, approxKl: approxKl / count };
}

/** log π_θ − log π_old as a tensor with gradient (through log π_θ). */
export function logRatioOf(prepared: PreparedLossInput): Tensor {
  return sub(prepared.logprobs, prepared.oldLogprobs);
}
