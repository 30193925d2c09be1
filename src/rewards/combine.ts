/**
 * Reward combination: weighted sum skipping `null` (weight 0 = logged metric only), the
 * per-reward columns for GDPO's decoupled normalisation, Trust-GRPO's trust-weighted process
 * reward, Posterior-GRPO's outcome-gated process reward, weight annealing by step, and the
 * per-reward metrics the trainer logs.
 *
 * Not here: running rewards (`run.ts`) or advantages. GDPO's normalisation itself belongs to the
 * algorithms layer; this file only hands it the matrix in the layout it needs (ALGORITHMS.md §1.7).
 */
import type { RewardMatrix } from './run.js';
import type { AnyReward, NamedReward, RewardWeight } from './types.js';

/** Builds the reward list from `{ name: [reward, weight] }`, the order of the keys kept. */
export function combineRewards(entries: Record<string, readonly [AnyReward, RewardWeight]>): NamedReward[] {
  return Object.entries(entries).map(([name, [reward, weight]]) => ({ name, reward, weight }));
}

/** The numeric weight of every reward at `step`; errors name the reward whose weight is bad. */
export function weightsAt(rewards: readonly Pick<NamedReward, 'name' | 'weight'>[], step: number): number[] {
  return rewards.map(({ name, weight }) => {
    const value = typeof weight === 'function' ? weight(step) : weight;
    if (!Number.isFinite(value))
      throw new Error(`reward "${name}": weight at step ${step} is ${value}, expected a finite number`);
    return value;
  });
}

/** One combined reward per sample, plus which samples stay in the loss. */
export interface CombinedRewards {
  /** Σ_k w_k r_k over applicable rewards (nansum: 0 when none applies); NaN for invalid samples. */
  rewards: Float64Array;
  /** False when a reward with non-zero weight failed (threw / timed out) on the sample. */
  valid: boolean[];
  /** How many samples left the loss because of failures. */
  invalidCount: number;
}

/** Checks that `weights` has one entry per matrix column. */
function checkWidth(matrix: RewardMatrix, weights: readonly number[]): void {
  if (weights.length !== matrix.names.length) {
    throw new Error(`got ${weights.length} weights for ${matrix.names.length} rewards (${matrix.names.join(', ')})`);
  }
}

/** Which samples stay in the loss: those where no reward with a non-zero weight failed. */
export function validSamples(matrix: RewardMatrix, weights: readonly number[]): boolean[] {
  checkWidth(matrix, weights);
  const width = weights.length;
  return Array.from({ length: matrix.sampleCount }, (_, sample) =>
    weights.every((weight, column) => {
      const status = matrix.status[sample * width + column];
      return weight === 0 || (status !== 'error' && status !== 'timeout');
    }),
  );
}

/** Weighted sum skipping `null` (ALGORITHMS.md §5.1); a weight-0 reward never changes the sum. */
export function weightedSum(matrix: RewardMatrix, weights: readonly number[]): CombinedRewards {
  const valid = validSamples(matrix, weights);
  const width = weights.length;
  const rewards = new Float64Array(matrix.sampleCount);
  for (let sample = 0; sample < matrix.sampleCount; sample++) {
    if (!valid[sample]) {
      rewards[sample] = Number.NaN;
      continue;
    }
    let total = 0;
    for (let column = 0; column < width; column++) {
      const weight = weights[column]!;
      const cell = sample * width + column;
      if (weight !== 0 && matrix.status[cell] === 'ok') total += weight * matrix.scores[cell]!;
    }
    rewards[sample] = total;
  }
  return { rewards, valid, invalidCount: valid.filter((keep) => !keep).length };
}

/**
 * The per-reward columns and weights as GDPO (§1.7) consumes them: the algorithms layer's
 * `AdvantageInput.rewardComponents` ([K][N], NaN = not scored) and `rewardWeights` ([K]).
 */
export interface RewardColumns {
  /** Names of the rewards with non-zero weight (weight-0 metrics carry no training signal). */
  names: readonly string[];
  weights: readonly number[];
  /** One array per reward, one entry per sample; NaN where not applicable, and for invalid samples. */
  columns: Float64Array[];
  groupSizes: readonly number[];
  valid: boolean[];
}

/** Splits the matrix into per-reward columns for decoupled (GDPO) normalisation in the algorithms layer. */
export function rewardColumns(matrix: RewardMatrix, weights: readonly number[]): RewardColumns {
  const valid = validSamples(matrix, weights);
  const width = weights.length;
  const kept = weights.map((weight, column) => ({ weight, column })).filter(({ weight }) => weight !== 0);
  const columns = kept.map(({ column }) => {
    const values = new Float64Array(matrix.sampleCount);
    for (let sample = 0; sample < matrix.sampleCount; sample++)
      values[sample] = valid[sample] ? matrix.scores[sample * width + column]! : Number.NaN;
    return values;
  });
  return {
    names: kept.map(({ column }) => matrix.names[column]!),
    weights: kept.map(({ weight }) => weight),
    columns,
    groupSizes: matrix.groupSizes,
    valid,
  };
}

/** Per-reward metrics: `reward/<name>/mean` and `/std` over applicable scores, `/nullFraction`, `/failures`. */
export function rewardMetrics(matrix: RewardMatrix): Record<string, number> {
  const metrics: Record<string, number> = {};
  const width = matrix.names.length;
  matrix.names.forEach((name, column) => {
    const values: number[] = [];
    let failures = 0;
    for (let sample = 0; sample < matrix.sampleCount; sample++) {
      const status = matrix.status[sample * width + column];
      if (status === 'ok') values.push(matrix.scores[sample * width + column]!);
      else if (status !== 'null') failures++;
    }
    const mean = values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN;
    const variance = values.length ? values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length : Number.NaN;
    metrics[`reward/${name}/mean`] = mean;
    metrics[`reward/${name}/std`] = Math.sqrt(variance);
    metrics[`reward/${name}/nullFraction`] = matrix.sampleCount
      ? (matrix.sampleCount - values.length - failures) / matrix.sampleCount
      : 0;
    metrics[`reward/${name}/failures`] = failures;
  });
  return metrics;
}

/** Options of {@link trustWeightedProcessReward} (Trust-GRPO, ALGORITHMS.md §5.6). */
export interface TrustWeightOptions {
  /** Scale of the thinking reward (default 0.3). */
  alpha?: number;
  /** Decay constant T in exp(−step/T) (default 500). */
  decaySteps?: number;
  /** Outcome at or above which a response counts as correct (default 0.5). */
  correctThreshold?: number;
  /** When set, r_t is zeroed for responses whose outcome is below it (SophiaVL-R1 code queries r_t only when r_o ≥ 0.2). */
  minOutcomeForThinking?: number;
}

/**
 * Trust-GRPO / SophiaVL-R1 over one group: R = r_o + γ·α·exp(−step/T)·r_t with γ = 1 when the
 * thinking reward favours correct responses (μ_c ≥ μ_i), else exp(μ_c − μ_i); r_t is dropped
 * when all outcomes are ≥ 0.9 or all ≤ 0.1.
 */
export function trustWeightedProcessReward(
  outcome: readonly number[],
  thinking: readonly number[],
  step: number,
  options: TrustWeightOptions = {},
): Float64Array {
  const { alpha = 0.3, decaySteps = 500, correctThreshold = 0.5, minOutcomeForThinking } = options;
  if (outcome.length !== thinking.length)
    throw new Error(`trustWeightedProcessReward: ${outcome.length} outcomes but ${thinking.length} thinking scores`);
  const thinkingUsed = thinking.map((value, index) =>
    minOutcomeForThinking !== undefined && outcome[index]! < minOutcomeForThinking ? 0 : value,
  );
  const mean = (values: number[]): number => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
  const correct = thinkingUsed.filter((_, index) => outcome[index]! >= correctThreshold);
  const incorrect = thinkingUsed.filter((_, index) => outcome[index]! < correctThreshold);
  const meanCorrect = mean(correct);
  const meanIncorrect = mean(incorrect);
  const trust = meanCorrect >= meanIncorrect ? 1 : Math.exp(meanCorrect - meanIncorrect);
  const saturated = outcome.every((value) => value >= 0.9) || outcome.every((value) => value <= 0.1);
  const scale = saturated ? 0 : trust * alpha * Math.exp(-step / decaySteps);
  return Float64Array.from(outcome, (value, index) => value + scale * thinkingUsed[index]!);
}

/** Posterior-GRPO (ALGORITHMS.md §5.7): R = r_o + λ·r_p·1[r_o = 1]; process reward only on successes. */
export function outcomeGatedProcessReward(
  outcome: readonly number[],
  process: readonly number[],
  lambda = 0.5,
): Float64Array {
  if (outcome.length !== process.length)
    throw new Error(`outcomeGatedProcessReward: ${outcome.length} outcomes but ${process.length} process scores`);
  return Float64Array.from(outcome, (value, index) => value + (value === 1 ? lambda * process[index]! : 0));
}

/** Shapes of {@link annealedWeight}. */
export type AnnealShape = 'linear' | 'cosine' | 'exponential' | 'step';

/** Options of {@link annealedWeight}. */
export interface AnnealOptions {
  from: number;
  to: number;
  /** Steps over which the weight moves from `from` to `to`; it stays at `to` afterwards. */
  steps: number;
  /** Default `linear`. `exponential` needs `from` and `to` of the same sign and non-zero; `step` jumps at the end. */
  shape?: AnnealShape;
  /** Steps held at `from` before the schedule starts (default 0). */
  warmupSteps?: number;
}

/** A reward weight that changes with the training step (e.g. format early, length later, §5.5). */
export function annealedWeight({
  from,
  to,
  steps,
  shape = 'linear',
  warmupSteps = 0,
}: AnnealOptions): (step: number) => number {
  if (!(steps > 0)) throw new Error(`annealedWeight: steps must be > 0, got ${steps}`);
  if (shape === 'exponential' && (from === 0 || to === 0 || Math.sign(from) !== Math.sign(to))) {
    throw new Error(`annealedWeight: exponential needs non-zero from/to of one sign, got ${from} → ${to}`);
  }
  return (step) => {
    const progress = Math.min(1, Math.max(0, (step - warmupSteps) / steps));
    switch (shape) {
      case 'linear':
        return from + (to - from) * progress;
      case 'cosine':
        return to + (from - to) * 0.5 * (1 + Math.cos(Math.PI * progress));
      case 'exponential':
        return from * (to / from) ** progress;
      case 'step':
        return progress >= 1 ? to : from;
    }
  };
}
