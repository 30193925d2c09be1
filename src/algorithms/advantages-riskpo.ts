/**
 * RiskPO's advantage (Ren, Jiang, Yang et al., "RiskPO: Risk-based Policy Optimization via Verifiable
 * Reward for LLM Post-Training", #249, arXiv 2510.00911): a Mixed Value-at-Risk (MVaR) objective on
 * bundles of questions. Consecutive groups (questions) form a bundle; the k-th completion of every
 * question in a bundle forms one "paper" whose score is their reward sum; each paper's advantage is
 * the MVaR gradient weight of its score against the bundle's α- and β-quantiles, and is shared out
 * to the paper's completions.
 *
 * Is: the estimator and its entry, exact to the authors' code (RTkenny/RiskPO
 * `verl/trainer/ppo/core_algos.py`, `compute_grpo_bundle_rvar_outcome_advantage_quantile_tracking`),
 * with the defaults of their `scripts/run_qwen2.5_1.5b_MVaR_dapomath.sh` (α = 0.2, β = 0.8, bundles
 * of 5 questions, w_mix = 1.5, credit 'sum-mean', no natural baseline, divided by the papers' std,
 * quantiles tracked across steps); and `updateQuantileTracker`, their tracker (`ray_trainer.py`: the
 * first step sets the 19 levels 0.05…0.95 to the papers' quantiles, each later step takes one SGD
 * step of the quantile loss, lr_q = 0.1), which the trainer runs after the step on the papers'
 * scores this estimator returns (`trackedQuantiles` need; kept in trainer state and checkpoints).
 * Is not: their risk-seeking upper-tail variant or their mean-baseline option (both off in their scripts).
 */
import { z } from 'zod';
import {
  type QuantileTracker,
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';

/** RiskPO's options (the authors' config names in brackets). */
export interface RiskpoAdvantageOptions {
  /** α, the lower quantile level [quantile_down] (default 0.2). */
  quantileDown?: number;
  /** β, the upper quantile level [quantile_up] (default 0.8). */
  quantileUp?: number;
  /** Questions (consecutive groups) per bundle [bundle_size] (default 5); the last bundle may be smaller. */
  bundleSize?: number;
  /** Weight of the CVaR_α term in the mixture [w_mix] (default 1.5); 0 leaves the RVaR term alone. */
  mixWeight?: number;
  /** Add q_α − q_β to the RVaR term [natural_baseline_adv] (default false). */
  naturalBaseline?: boolean;
  /** Divide by the std (N − 1) of the bundle's paper scores + ε [norm_adv_by_std_in_grpo] (default true). */
  normalizeByStd?: boolean;
  /** How a paper's advantage reaches its completions [credit_assign_mode] (default 'sum-mean'). */
  creditAssignment?: 'uniform' | 'score' | 'std' | 'sum-mean';
  /** ε added to every denominator [epsilon] (default 1e-6). */
  epsilon?: number;
  /**
   * Where q_α, q_β come from [use_q_track_mode] (default 'track'): 'track' the tracker's levels
   * nearest α and β (a bundle's own quantiles until the tracker has run once), 'batch' each bundle's
   * own papers, 'mix' the mean of the two.
   */
  quantileMode?: 'track' | 'batch' | 'mix';
  /** The tracker's SGD step size [lr_q] (default 0.1). */
  quantileLearningRate?: number;
}

/** The levels the authors' tracker follows (`ray_trainer.py` alpha_list). */
export const trackedQuantileLevels = [
  0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95,
];

/** torch.quantile's default ('linear'): interpolate between the order statistics at q·(n − 1). */
function quantile(sorted: readonly number[], level: number): number {
  const position = level * (sorted.length - 1);
  const low = Math.floor(position);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low] + (position - low) * (sorted[high] - sorted[low]);
}

/** torch.std's default: the sample standard deviation (N − 1). */
function sampleStd(values: readonly number[]): number {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((total, v) => total + (v - mean) ** 2, 0) / (values.length - 1));
}

/** The tracked value at the level nearest `level` (torch argmin: the first of two equally near). */
function trackedAt(tracker: QuantileTracker, level: number): number {
  let best = 0;
  tracker.levels.forEach((candidate, k) => {
    if (Math.abs(candidate - level) < Math.abs(tracker.levels[best] - level)) best = k;
  });
  return tracker.values[best];
}

/**
 * The authors' quantile tracker after one step's samples (their papers' scores, all bundles
 * together): with no tracker yet, every level's torch.quantile of the samples; then one SGD step of
 * the quantile (pinball) loss per level, q ← q + lr·(level − mean[S < q]), lr = `quantileLearningRate`.
 * No samples leave the tracker as it was.
 */
export function updateQuantileTracker(
  previous: QuantileTracker | undefined,
  samples: ArrayLike<number>,
  options: Pick<RiskpoAdvantageOptions, 'quantileLearningRate'> = {},
): QuantileTracker | undefined {
  if (samples.length === 0) return previous;
  if (!previous) {
    const sorted = Array.from(samples).sort((a, b) => a - b);
    return { levels: [...trackedQuantileLevels], values: trackedQuantileLevels.map((l) => quantile(sorted, l)) };
  }
  const learningRate = options.quantileLearningRate ?? 0.1;
  const values = previous.values.map((q, k) => {
    let below = 0;
    for (let i = 0; i < samples.length; i++) if (samples[i] < q) below++;
    return q + learningRate * (previous.levels[k] - below / samples.length);
  });
  return { levels: [...previous.levels], values };
}

function checkLevel(value: number, field: string): number {
  if (!(value > 0 && value < 1)) throw new RangeError(`options.${field} must be in (0, 1), got ${value}.`);
  return value;
}

/**
 * RiskPO advantage. Per bundle of `bundleSize` consecutive groups, paper k takes the k-th scored
 * completion of each question (k < the fewest scored completions of any question in the bundle;
 * completions past that get A = 0, as the authors' zero-initialised advantages). With S_k the paper's
 * reward sum, q_α, q_β torch.quantile of the bundle's S (one paper: both S, std 1):
 *   A_RVaR = ([S − q_α]₊ − [S − q_β]₊ (+ q_α − q_β if naturalBaseline)) / (β − α + ε),
 *   A = (w·(−[q_α − S]₊/(α + ε)) + A_RVaR)/(w + 1), then A /= (std(S) + ε) if normalizeByStd.
 * Credit to completion i of question q: 'uniform' A; 'score' 0.5·A if r_i > 0 else 1.5·A; 'std'
 * A/(σ_q + ε) with σ_q the std of q's scored rewards (1 when ≤ 1e-3); 'sum-mean' A·d_i/Σ_paper d,
 * d_i = r_i − mean_q r (A/n when |Σ d| ≤ 1e-6). Unscored completions take no place in a paper and
 * get A = 0, keep = 0. With a tracker (`input.quantileTracker`) and quantileMode 'track', q_α and
 * q_β are its levels nearest α and β for every bundle ('mix': their mean with the bundle's own).
 * Returns the papers' scores as `quantileSamples` for the tracker. #249 (arXiv 2510.00911);
 * RTkenny/RiskPO core_algos.py compute_grpo_bundle_rvar_outcome_advantage_quantile_tracking.
 */
export function riskpoAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & RiskpoAdvantageOptions = {},
): AdvantageResult {
  const down = checkLevel(options.quantileDown ?? 0.2, 'quantileDown');
  const up = checkLevel(options.quantileUp ?? 0.8, 'quantileUp');
  if (!(down < up)) throw new RangeError(`options.quantileDown (${down}) must be below options.quantileUp (${up}).`);
  const bundleSize = options.bundleSize ?? 5;
  if (!(Number.isInteger(bundleSize) && bundleSize >= 1))
    throw new RangeError(`options.bundleSize must be a whole number ≥ 1, got ${bundleSize}.`);
  const mixWeight = options.mixWeight ?? 1.5;
  if (!(mixWeight >= 0 && Number.isFinite(mixWeight)))
    throw new RangeError(`options.mixWeight must be ≥ 0, got ${mixWeight}.`);
  const epsilon = options.epsilon ?? 1e-6;
  const credit = options.creditAssignment ?? 'sum-mean';
  const mode = options.quantileMode ?? 'track';
  const tracker = mode === 'batch' ? undefined : input.quantileTracker;
  if (tracker && !(tracker.levels.length > 0 && tracker.levels.length === tracker.values.length))
    throw new RangeError('input.quantileTracker must hold one value per level.');
  const allScores: number[] = [];
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  // Each question's scored completions in order, with the std and mean of their rewards.
  const scored = Array.from({ length: layout.groupCount }, (_, g) =>
    Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k).filter((i) => !Number.isNaN(rewards[i])),
  );
  const questionStd = scored.map((rows) => {
    const std = rows.length > 1 ? sampleStd(rows.map((i) => rewards[i])) : NaN; // torch.std of one value: NaN
    return std > 1e-3 ? std : 1; // the authors' `std if std > 1e-3 else 1.0` (NaN > 1e-3 is false)
  });
  const questionMean = scored.map((rows) => rows.reduce((total, i) => total + rewards[i], 0) / rows.length);
  const advantages = new Float32Array(rewards.length);
  for (let first = 0; first < layout.groupCount; first += bundleSize) {
    const questions = Array.from({ length: Math.min(bundleSize, layout.groupCount - first) }, (_, j) => first + j);
    const paperCount = Math.min(...questions.map((g) => scored[g].length));
    if (paperCount === 0) continue;
    const papers = Array.from({ length: paperCount }, (_, k) => questions.map((g) => scored[g][k]));
    const scores = papers.map((rows) => rows.reduce((total, i) => total + rewards[i], 0));
    const sorted = [...scores].sort((a, b) => a - b);
    const single = paperCount === 1;
    allScores.push(...scores);
    const bundleDown = single ? scores[0] : quantile(sorted, down);
    const bundleUp = single ? scores[0] : quantile(sorted, up);
    const share = mode === 'mix' ? 0.5 : 1; // the tracked quantiles' share in q
    const qDown = tracker ? share * trackedAt(tracker, down) + (1 - share) * bundleDown : bundleDown;
    const qUp = tracker ? share * trackedAt(tracker, up) + (1 - share) * bundleUp : bundleUp;
    const std = single ? 1 : sampleStd(scores);
    papers.forEach((rows, k) => {
      const score = scores[k];
      let advantage =
        Math.max(score - qDown, 0) - Math.max(score - qUp, 0) + (options.naturalBaseline ? qDown - qUp : 0);
      advantage /= up - down + epsilon;
      if (mixWeight > 0) {
        const cvar = -Math.max(qDown - score, 0) / (down + epsilon);
        advantage = (mixWeight * cvar + advantage) / (mixWeight + 1);
      }
      if (options.normalizeByStd ?? true) advantage /= std + epsilon;
      if (credit === 'sum-mean') {
        const deviations = rows.map((i) => rewards[i] - questionMean[layout.groupOf[i]]);
        const total = deviations.reduce((a, b) => a + b, 0);
        rows.forEach((i, j) => {
          advantages[i] = Math.abs(total) > 1e-6 ? (advantage * deviations[j]) / total : advantage / rows.length;
        });
        return;
      }
      for (const i of rows)
        advantages[i] =
          credit === 'uniform'
            ? advantage
            : credit === 'score'
              ? (rewards[i] > 0 ? 0.5 : 1.5) * advantage
              : advantage / (questionStd[layout.groupOf[i]] + epsilon);
    });
  }
  return {
    advantages,
    keep: scoredMask(rewards),
    stdIsZero: zeroStdFlags(stats),
    quantileSamples: Float64Array.from(allScores),
  };
}

/** `algorithm.advantage: riskpo`: the entry `grpo list` prints and configs name. */
export const riskpoAdvantagePart = defineAdvantageEstimator({
  name: 'riskpo',
  fn: riskpoAdvantage,
  description:
    'Mixed VaR on bundles of 5 questions: paper k = k-th answer of each; A = (w·CVaR_α + RVaR_α,β weight)/(w+1)/std, α .2, β .8, w 1.5, quantiles tracked across steps; sum-mean credit',
  citation:
    'RiskPO (#249, arXiv 2510.00911); RTkenny/RiskPO core_algos.py compute_grpo_bundle_rvar_outcome_advantage_quantile_tracking',
  needs: ['trackedQuantiles'],
  options: z
    .object({
      quantileDown: z.number().gt(0).lt(1).describe('α, the lower quantile level (default 0.2)'),
      quantileUp: z.number().gt(0).lt(1).describe('β, the upper quantile level (default 0.8)'),
      bundleSize: z.number().int().min(1).describe('questions (consecutive groups) per bundle (default 5)'),
      mixWeight: z.number().nonnegative().describe('w of the CVaR_α term; 0: RVaR alone (default 1.5)'),
      naturalBaseline: z.boolean().describe('add q_α − q_β to the RVaR term (default false)'),
      normalizeByStd: z.boolean().describe("divide by the std of the bundle's paper scores (default true)"),
      creditAssignment: z
        .enum(['uniform', 'score', 'std', 'sum-mean'])
        .describe("how a paper's advantage reaches its answers (default 'sum-mean')"),
      epsilon: z.number().nonnegative().describe('added to every denominator (default 1e-6)'),
      quantileMode: z
        .enum(['track', 'batch', 'mix'])
        .describe("q from the tracker across steps, each bundle's papers, or their mean (default 'track')"),
      quantileLearningRate: z.number().positive().describe("the tracker's SGD step size lr_q (default 0.1)"),
    })
    .partial()
    .strict(),
});
