/**
 * Shared plumbing for advantage estimators: input validation, contiguous group layout, and
 * NaN-aware per-group statistics computed in flat passes over the whole batch (the "vectorised"
 * form that the loop-based reference in advantages.test.ts is checked against).
 *
 * Is: the types every estimator shares (`AdvantageInput`, `AdvantageOptions`, `AdvantageResult`)
 * and float64 segment reductions.
 * Is not: any particular estimator (advantages.ts, advantages-structured.ts) or anything on tensors.
 */
import { type Part, definePart } from './registry.js';

/** Per-sample scalar rewards; `null` or NaN means "not scored" (the sample leaves the loss). */
export type RewardValues = ArrayLike<number | null>;

/** What every advantage estimator receives; estimator-specific fields are optional and checked. */
export interface AdvantageInput {
  /** [N] one scalar reward per completion, groups stored contiguously. */
  rewards: RewardValues;
  /** Group sizes in order (ragged allowed, must sum to N), or one size shared by all groups. */
  groupSizes: number | readonly number[];
  /** GDPO: [K][N] the individual reward functions' scores, before weighting. */
  rewardComponents?: readonly RewardValues[];
  /** GDPO: [K] weight per reward component (default all 1). */
  rewardWeights?: readonly number[];
  /** [K] the reward functions' names, the columns of `rewardComponents` (Trust-GRPO picks its thinking reward by name). */
  rewardNames?: readonly string[];
  /** The training step (0 = the first), for estimators whose weights anneal (Trust-GRPO). */
  step?: number;
  /** Stratified GRPO: [N] stratum key per sample (e.g. the number of tool calls). */
  strata?: ArrayLike<number | string>;
  /** SEED-GRPO: [N] semantic cluster id of each sample's answer. */
  clusters?: ArrayLike<number | string>;
  /** Single-stream baseline: [N] the tracked value v(q) of each sample's prompt. */
  baselines?: ArrayLike<number>;
  /** Tree advantages: [N] completion token ids; shared prefixes inside a group form the tree. */
  completionIds?: readonly ArrayLike<number>[];
  /** DCPO: [N] per completion token, log π_old as the rollout sampled it. */
  oldLogprobs?: readonly ArrayLike<number>[];
  /** DCPO: [N] per completion token, log π_old at the estimator's `logprobTemperature` (need `temperatureLogprobs`). */
  temperatureLogprobs?: readonly ArrayLike<number>[];
  /** DCPO: the previous update's −mean logπ over its loss tokens; NaN before the first (need `previousEntropy`). */
  previousEntropy?: number;
  /** GRPO-CARE: [N] per completion token, log π_ref (need `referenceTokenLogprobs`). */
  referenceLogprobs?: readonly ArrayLike<number>[];
  /** GRPO-CARE: [N] per completion token, its decoded text (need `tokenTexts`). */
  tokenTexts?: readonly (readonly string[])[];
  /** RiskPO: the quantiles tracked over earlier steps (absent on the first step); `trackedQuantiles` need. */
  quantileTracker?: QuantileTracker;
}

/** Quantiles of a statistic tracked across steps (RiskPO): `values[k]` estimates the `levels[k]` quantile. */
export interface QuantileTracker {
  levels: number[];
  values: number[];
}

/** Every tunable an estimator may read; each estimator documents the fields it uses and defaults. */
export interface AdvantageOptions {
  /** Added to the standard deviation before dividing (GRPO default 1e-6 as verl; TRL uses 1e-4). */
  epsilon?: number;
  /** 'sample' (N−1, torch/TRL/verl default) or 'population' (N, ART). */
  std?: 'sample' | 'population';
  /** A group with one scored sample: 'raw' uses mean 0 and std 1 so A = r (verl), 'zero' gives A = 0. */
  singletonGroup?: 'raw' | 'zero';
  /** MC-GRPO: lower bound on the MAD before dividing, so binary rewards do not give |A| = 1000. */
  madFloor?: number;
  /** MC-GRPO GSM variant: multiply each group's non-zero advantages by (G+1)/#non-zero. */
  rescaleNonzero?: boolean;
  /** NGRPO: value of the virtual samples added to each group's statistics (default 1). */
  virtualReward?: number;
  /** NGRPO: number of virtual samples per group (default 1). */
  virtualCount?: number;
  /** Stratified blend weight α or SEED-GRPO entropy weight α (no verified default: required). */
  alpha?: number;
  /** Single-stream baseline: z-score the advantages over the whole batch (default true). */
  batchNormalize?: boolean;
}

/** What every advantage estimator returns. */
export interface AdvantageResult {
  /** [N] one advantage per completion (token-level estimators: the mean over its tokens). */
  advantages: Float32Array;
  /** [N] per-token advantages (ragged, one array per completion) when the estimator is token-level. */
  tokenAdvantages?: Float32Array[];
  /** [N] 1 when the sample carries gradient; 0 for unscored rewards or dropped pivots. */
  keep: Uint8Array;
  /** [groups] 1 when a group's scored rewards are all equal (TRL `is_std_zero`). */
  stdIsZero: Uint8Array;
  /** The values a `trackedQuantiles` estimator's tracker learns from after the step (RiskPO: paper scores). */
  quantileSamples?: Float64Array;
}

/** The one signature shared by every registered advantage estimator. */
export type AdvantageFn = (input: AdvantageInput, options?: AdvantageOptions) => AdvantageResult;

/** An advantage estimator's file exports its function with this entry (`algorithm.advantage`). */
export const defineAdvantageEstimator = (entry: Omit<Part<AdvantageFn>, 'kind'>): Part<AdvantageFn> =>
  definePart('advantage estimator', entry);

/** Contiguous group layout of a batch. */
export interface GroupLayout {
  groupCount: number;
  /** [groups] index of each group's first sample. */
  starts: Int32Array;
  /** [groups] number of samples per group. */
  sizes: Int32Array;
  /** [N] group index of each sample. */
  groupOf: Int32Array;
}

/** Standard deviations below this count as zero (float64 sums of equal values leave ~1e-17). */
export const zeroStdThreshold = 1e-9;

/** Converts rewards to float64 with null → NaN, rejecting non-numbers and infinities by index. */
export function toRewardArray(rewards: RewardValues, field = 'rewards'): Float64Array {
  const out = new Float64Array(rewards.length);
  for (let i = 0; i < rewards.length; i++) {
    const value = rewards[i];
    if (value === null || value === undefined) out[i] = NaN;
    else if (typeof value !== 'number')
      throw new TypeError(`${field}[${i}] is ${typeof value}, expected a number or null.`);
    else if (value === Infinity || value === -Infinity)
      throw new RangeError(`${field}[${i}] is ${value}; rewards must be finite (use null for "not scored").`);
    else out[i] = value;
  }
  return out;
}

/** Validates `groupSizes` against the sample count and lays the groups out contiguously. */
export function resolveGroups(sampleCount: number, groupSizes: number | readonly number[]): GroupLayout {
  let sizes: number[];
  if (typeof groupSizes === 'number') {
    if (!Number.isInteger(groupSizes) || groupSizes < 1)
      throw new RangeError(`groupSizes must be a positive integer, got ${groupSizes}.`);
    if (sampleCount % groupSizes !== 0) {
      throw new RangeError(`rewards has ${sampleCount} entries, which is not a multiple of groupSizes=${groupSizes}.`);
    }
    sizes = new Array<number>(sampleCount / groupSizes).fill(groupSizes);
  } else {
    sizes = [...groupSizes];
    sizes.forEach((size, g) => {
      if (!Number.isInteger(size) || size < 1)
        throw new RangeError(`groupSizes[${g}] must be a positive integer, got ${size}.`);
    });
    const total = sizes.reduce((a, b) => a + b, 0);
    if (total !== sampleCount)
      throw new RangeError(`rewards has ${sampleCount} entries but groupSizes sum to ${total}.`);
  }
  const starts = new Int32Array(sizes.length);
  const groupOf = new Int32Array(sampleCount);
  let offset = 0;
  sizes.forEach((size, g) => {
    starts[g] = offset;
    groupOf.fill(g, offset, offset + size);
    offset += size;
  });
  return { groupCount: sizes.length, starts, sizes: Int32Array.from(sizes), groupOf };
}

/** Checks that a per-sample side input has one entry per reward, naming the field when not. */
export function requireSampleField<T extends ArrayLike<unknown>>(
  value: T | undefined,
  field: string,
  sampleCount: number,
  estimator: string,
): T {
  if (value === undefined) throw new Error(`The ${estimator} advantage estimator needs input.${field}.`);
  if (value.length !== sampleCount)
    throw new RangeError(`input.${field} has ${value.length} entries but rewards has ${sampleCount}.`);
  return value;
}

/** NaN-aware mean, std and count of `values` per segment, in two flat passes. */
export interface SegmentStats {
  mean: Float64Array;
  std: Float64Array;
  count: Int32Array;
}

/** Per-segment NaN-aware mean and standard deviation; a segment with < 2 values (sample std) has std NaN. */
export function segmentStats(
  values: Float64Array,
  segmentOf: Int32Array,
  segmentCount: number,
  std: 'sample' | 'population' = 'sample',
): SegmentStats {
  const sum = new Float64Array(segmentCount);
  const count = new Int32Array(segmentCount);
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i])) continue;
    sum[segmentOf[i]] += values[i];
    count[segmentOf[i]]++;
  }
  const mean = sum.map((s, g) => (count[g] > 0 ? s / count[g] : NaN));
  const squares = new Float64Array(segmentCount);
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i])) continue;
    const deviation = values[i] - mean[segmentOf[i]];
    squares[segmentOf[i]] += deviation * deviation;
  }
  const divisorOffset = std === 'sample' ? 1 : 0;
  const deviation = squares.map((s, g) =>
    count[g] - divisorOffset > 0 ? Math.sqrt(s / (count[g] - divisorOffset)) : NaN,
  );
  return { mean, std: deviation, count };
}

/** NaN-aware mean and standard deviation over the whole array. */
export function batchStats(
  values: Float64Array,
  std: 'sample' | 'population' = 'sample',
): { mean: number; std: number; count: number } {
  const stats = segmentStats(values, new Int32Array(values.length), 1, std);
  return { mean: stats.mean[0], std: stats.std[0], count: stats.count[0] };
}

/** 1 where the reward is scored (not NaN), else 0. */
export function scoredMask(rewards: Float64Array): Uint8Array {
  return Uint8Array.from(rewards, (r) => (Number.isNaN(r) ? 0 : 1));
}

/** Float32 copy of float64 advantages with NaN (unscored samples) written as 0. */
export function finishAdvantages(values: Float64Array): Float32Array {
  return Float32Array.from(values, (v) => (Number.isNaN(v) ? 0 : v));
}

/** [groups] 1 where a group has at most one distinct scored reward. */
export function zeroStdFlags(stats: SegmentStats): Uint8Array {
  return Uint8Array.from(stats.std, (s, g) => (stats.count[g] <= 1 || s < zeroStdThreshold ? 1 : 0));
}

/** Broadcasts per-sequence advantages to a padded [B, T] row-major array (the loss input layout). */
export function expandAdvantagesToTokens(advantages: ArrayLike<number>, tokensPerSequence: number): Float32Array {
  const out = new Float32Array(advantages.length * tokensPerSequence);
  for (let b = 0; b < advantages.length; b++)
    out.fill(advantages[b], b * tokensPerSequence, (b + 1) * tokensPerSequence);
  return out;
}

/** Packs ragged per-token advantages into a zero-padded [B, T] row-major array. */
export function padTokenAdvantages(rows: readonly ArrayLike<number>[], tokensPerSequence: number): Float32Array {
  const out = new Float32Array(rows.length * tokensPerSequence);
  rows.forEach((row, b) => {
    if (row.length > tokensPerSequence)
      throw new RangeError(`tokenAdvantages[${b}] has ${row.length} tokens, more than T=${tokensPerSequence}.`);
    for (let t = 0; t < row.length; t++) out[b * tokensPerSequence + t] = row[t];
  });
  return out;
}
