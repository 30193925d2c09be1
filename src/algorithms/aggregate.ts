/**
 * Loss aggregation: how per-token losses [B, T] become one scalar (ALGORITHMS.md §3). Every mode
 * is a fixed weighting of the tokens computed from the mask alone, so it is one masked multiply
 * and a sum on the tensor side, and gradient accumulation only needs the right denominator.
 *
 * Is: the aggregation modes (a registry of plain functions) and their token weights.
 * Is not: the per-token losses (policy-losses*.ts).
 */
import { type Part, definePart } from './registry.js';
import { type Tensor, mul, sum, tensor, where } from '../tensor/index.js';

/** Optional denominators of the aggregation modes. */
export interface AggregationOptions {
  /**
   * token-mean: the total number of completion tokens over the whole accumulated batch (all
   * micro-batches, all processes), so a micro-batch's loss sums to the exact global token mean.
   * Omitted: the local micro-batch's token count (TRL `bnpo`).
   */
  globalTokenCount?: number;
  /** seq-mean-token-sum-norm (Dr. GRPO): the constant L_max (default: the padded length T). */
  maxLength?: number;
  /** seq-mean-*: the number of sequences to divide by across micro-batches (default: local non-empty rows). */
  globalSequenceCount?: number;
}

/** The one signature of every registered aggregation: [B, T] mask → [B, T] token weights. */
export type AggregationFn = (
  mask: ArrayLike<number>,
  B: number,
  T: number,
  options?: AggregationOptions,
) => Float32Array;

/** A loss aggregation's file exports its function with this entry (`algorithm.aggregation`). */
export const defineLossAggregation = (entry: Omit<Part<AggregationFn>, 'kind'>): Part<AggregationFn> =>
  definePart('loss aggregation', entry);

function tokensPerRow(mask: ArrayLike<number>, B: number, T: number): Float64Array {
  const counts = new Float64Array(B);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) if (mask[b * T + t]) counts[b]++;
  return counts;
}

function fillRows(mask: ArrayLike<number>, B: number, T: number, rowWeight: (b: number) => number): Float32Array {
  const weights = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    const w = rowWeight(b);
    for (let t = 0; t < T; t++) if (mask[b * T + t]) weights[b * T + t] = w;
  }
  return weights;
}

function positive(value: number | undefined, field: string): number | undefined {
  if (value !== undefined && !(value > 0)) throw new RangeError(`${field} must be > 0, got ${value}.`);
  return value;
}

/** token-mean: Σ L / (tokens in the batch, or `globalTokenCount`). BNPO locally; DAPO/CISPO with the global count. */
export function tokenMeanWeights(
  mask: ArrayLike<number>,
  B: number,
  T: number,
  options: AggregationOptions = {},
): Float32Array {
  const local = tokensPerRow(mask, B, T).reduce((a, b) => a + b, 0);
  const denominator = positive(options.globalTokenCount, 'globalTokenCount') ?? Math.max(local, 1);
  return fillRows(mask, B, T, () => 1 / denominator);
}

/** `algorithm.aggregation: token-mean`: the entry `grpo list` prints and configs name. */
export const tokenMeanWeightsPart = defineLossAggregation({
  name: 'token-mean',
  fn: tokenMeanWeights,
  description: 'Σ L / tokens (local, or globalTokenCount for exact accumulation)',
  citation: 'BNPO; DAPO/CISPO global token mean',
});

/** seq-mean-token-mean: (1/N) Σ_i (1/T_i) Σ_t L, N = sequences with ≥ 1 token (verl). GRPO (DeepSeekMath). */
export function seqMeanTokenMeanWeights(
  mask: ArrayLike<number>,
  B: number,
  T: number,
  options: AggregationOptions = {},
): Float32Array {
  const counts = tokensPerRow(mask, B, T);
  const sequences =
    positive(options.globalSequenceCount, 'globalSequenceCount') ?? Math.max(counts.filter((c) => c > 0).length, 1);
  return fillRows(mask, B, T, (b) => 1 / (counts[b] * sequences));
}

/** `algorithm.aggregation: seq-mean-token-mean`: the entry `grpo list` prints and configs name. */
export const seqMeanTokenMeanWeightsPart = defineLossAggregation({
  name: 'seq-mean-token-mean',
  fn: seqMeanTokenMeanWeights,
  description: '(1/N) Σ_i (1/T_i) Σ_t L',
  citation: 'GRPO (DeepSeekMath)',
});

/** seq-mean-token-sum: (1/N) Σ_i Σ_t L, N = sequences with ≥ 1 token (verl option). */
export function seqMeanTokenSumWeights(
  mask: ArrayLike<number>,
  B: number,
  T: number,
  options: AggregationOptions = {},
): Float32Array {
  const counts = tokensPerRow(mask, B, T);
  const sequences =
    positive(options.globalSequenceCount, 'globalSequenceCount') ?? Math.max(counts.filter((c) => c > 0).length, 1);
  return fillRows(mask, B, T, () => 1 / sequences);
}

/** `algorithm.aggregation: seq-mean-token-sum`: the entry `grpo list` prints and configs name. */
export const seqMeanTokenSumWeightsPart = defineLossAggregation({
  name: 'seq-mean-token-sum',
  fn: seqMeanTokenSumWeights,
  description: '(1/N) Σ_i Σ_t L',
  citation: 'verl agg_loss option',
});

/** seq-mean-token-sum-norm: Σ L / (N · L_max), N = all B rows, L_max constant (default T). Dr. GRPO (arXiv 2503.20783). */
export function seqMeanTokenSumNormWeights(
  mask: ArrayLike<number>,
  B: number,
  T: number,
  options: AggregationOptions = {},
): Float32Array {
  const maxLength = positive(options.maxLength, 'maxLength') ?? T;
  const sequences = positive(options.globalSequenceCount, 'globalSequenceCount') ?? Math.max(B, 1);
  return fillRows(mask, B, T, () => 1 / (sequences * maxLength));
}

/** `algorithm.aggregation: seq-mean-token-sum-norm`: the entry `grpo list` prints and configs name. */
export const seqMeanTokenSumNormWeightsPart = defineLossAggregation({
  name: 'seq-mean-token-sum-norm',
  fn: seqMeanTokenSumNormWeights,
  description: 'Σ L / (N·L_max), a constant normaliser',
  citation: 'Dr. GRPO, arXiv 2503.20783',
});

/** Reduces per-token losses [B, T] to a scalar with the token weights of an aggregation mode. */
export function aggregateLoss(
  perTokenLoss: Tensor,
  mask: ArrayLike<number>,
  aggregation: AggregationFn,
  options: AggregationOptions = {},
): Tensor {
  if (perTokenLoss.shape.length !== 2)
    throw new RangeError(`per-token loss must be [B, T], got [${perTokenLoss.shape.join(', ')}].`);
  const [B, T] = perTokenLoss.shape;
  if (mask.length !== B * T)
    throw new RangeError(`mask has ${mask.length} entries but the per-token loss is [${B}, ${T}].`);
  const weights = aggregation(mask, B, T, options);
  // where() first: padded positions may hold inf/NaN log-probs, and 0·inf would poison the sum.
  const masked = where(
    tensor(
      Float32Array.from(mask, (m) => (m ? 1 : 0)),
      [B, T],
    ),
    perTokenLoss,
    0,
  );
  return sum(mul(masked, tensor(weights, [B, T])));
}
