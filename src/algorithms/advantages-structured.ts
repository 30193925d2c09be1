/**
 * Advantage estimators that need more than one scalar reward per sample: GDPO and MRN (several reward
 * functions), Stratified GRPO (a stratum key), SEED-GRPO (semantic clusters), S-GRPO (serial
 * early-exit groups) and the single-stream baseline (a tracked per-prompt value).
 *
 * Is: plain array functions with the shared `AdvantageFn` signature; the extra data comes in named
 * optional fields of `AdvantageInput` and a missing one is a clear error.
 * Is not: the plain group estimators (advantages.ts) or tree advantages (advantages-tree.ts).
 */
import { z } from 'zod';
import { epsilonOption, singletonGroupOption, stdOption, unitAlphaOption } from './option-schemas.js';
import { defineAdvantageEstimator } from './advantages-groups.js';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  batchStats,
  finishAdvantages,
  requireSampleField,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
  zeroStdThreshold,
} from './advantages-groups.js';
import { defaultStdEpsilon, drGrpoAdvantage, grpoAdvantage } from './advantages.js';

function requireAlpha(options: AdvantageOptions, estimator: string, range: [number, number]): number {
  const alpha = options.alpha;
  if (alpha === undefined)
    throw new Error(`The ${estimator} advantage estimator needs options.alpha (the paper's default is unverified).`);
  if (!(alpha >= range[0] && alpha <= range[1]))
    throw new RangeError(`options.alpha must be in [${range[0]}, ${range[1]}], got ${alpha}.`);
  return alpha;
}

/** Z-scores values within segments: (v − mean) / (sstd + ε); segments with < 2 values or zero std give 0. */
function segmentZScore(
  values: Float64Array,
  segmentOf: Int32Array,
  segmentCount: number,
  epsilon: number,
): Float64Array {
  const stats = segmentStats(values, segmentOf, segmentCount, 'sample');
  return values.map((v, i) => {
    const s = segmentOf[i];
    if (Number.isNaN(v)) return NaN;
    if (stats.count[s] < 2 || stats.std[s] < zeroStdThreshold) return 0;
    return (v - stats.mean[s]) / (stats.std[s] + epsilon);
  });
}

/**
 * Σ_k w_k·(r^k − mean_g r^k) / (sstd_g r^k + ε), each reward z-scored within its group (NaN treated
 * as 0, like `nansum`), and whether each sample has any scored component: GDPO's and MRN's first step.
 */
function decoupledSum(input: AdvantageInput, options: AdvantageOptions, estimator: string) {
  const sampleCount = input.rewards.length;
  const layout = resolveGroups(sampleCount, input.groupSizes);
  const components = input.rewardComponents;
  if (components === undefined || components.length === 0)
    throw new Error(`The ${estimator} advantage estimator needs input.rewardComponents ([K][N] per-reward scores).`);
  const weights = input.rewardWeights ?? components.map(() => 1);
  if (weights.length !== components.length)
    throw new RangeError(
      `input.rewardWeights has ${weights.length} entries but rewardComponents has ${components.length}.`,
    );
  const epsilon = options.epsilon ?? 1e-4;
  const combined = new Float64Array(sampleCount);
  const anyScored = new Uint8Array(sampleCount);
  components.forEach((component, k) => {
    if (component.length !== sampleCount)
      throw new RangeError(
        `input.rewardComponents[${k}] has ${component.length} entries but rewards has ${sampleCount}.`,
      );
    const values = toRewardArray(component, `rewardComponents[${k}]`);
    const normalized = segmentZScore(values, layout.groupOf, layout.groupCount, epsilon);
    normalized.forEach((v, i) => {
      if (Number.isNaN(values[i])) return;
      anyScored[i] = 1;
      combined[i] += weights[k] * v;
    });
  });
  for (let i = 0; i < sampleCount; i++) if (!anyScored[i]) combined[i] = NaN;
  const groupStats = segmentStats(combined, layout.groupOf, layout.groupCount, 'sample');
  return { combined, anyScored, epsilon, stdIsZero: zeroStdFlags(groupStats) };
}

/**
 * GDPO: each reward k is z-scored within its group, (r^k − mean_g) / (sstd_g + ε); the weighted sum
 * (NaN treated as 0, like `nansum`) is z-scored again over the whole batch. ε = 1e-4 (the GDPO code).
 * A sample is unscored (keep = 0) only when every component is NaN/null; `rewards` is used for that
 * check only when no component is given. GDPO: Group reward-Decoupled Normalization Policy Optimization (#189; code NVlabs/GDPO).
 */
export function gdpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const { combined, anyScored, epsilon, stdIsZero } = decoupledSum(input, options, 'gdpo');
  const batch = batchStats(combined, 'sample');
  const degenerate = batch.count < 2 || batch.std < zeroStdThreshold;
  const advantages = combined.map((v) =>
    degenerate ? (Number.isNaN(v) ? NaN : 0) : (v - batch.mean) / (batch.std + epsilon),
  );
  return { advantages: finishAdvantages(advantages), keep: anyScored, stdIsZero };
}

/**
 * MRN, ReFine-RFT's multi-reward normalisation (#141, Zhu, Su & Liu 2026, arXiv 2601.06993), exact to
 * the authors' `MRPOTrainer.compute_loss` (jiezhu23/ReFine-RFT `src/refinerft/trainer/mrpo_trainer.py`):
 * A = Σ_k w_k·(r^k − mean_g r^k) / (sstd_g r^k + 1e-4), GDPO's per-reward group z-scores without its
 * batch z-score. A group of one gets 0 where torch's std gives NaN.
 */
export function mrnAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const { combined, anyScored, stdIsZero } = decoupledSum(input, options, 'mrn');
  return { advantages: finishAdvantages(combined), keep: anyScored, stdIsZero };
}

/** `algorithm.advantage: mrn`: the entry `grpo list` prints and configs name. */
export const mrnAdvantagePart = defineAdvantageEstimator({
  name: 'mrn',
  fn: mrnAdvantage,
  description: 'z-score each reward per group (ε = 1e-4), weighted sum; no batch normalisation',
  citation: 'ReFine-RFT MRN (#141, arXiv 2601.06993), jiezhu23/ReFine-RFT mrpo_trainer.py',
  needs: ['rewardComponents'],
  options: z.object({ epsilon: epsilonOption }).partial().strict(),
});

/** `algorithm.advantage: gdpo`: the entry `grpo list` prints and configs name. */
export const gdpoAdvantagePart = defineAdvantageEstimator({
  name: 'gdpo',
  fn: gdpoAdvantage,
  description: 'z-score each reward per group, weighted sum, z-score over the batch (ε = 1e-4)',
  citation: 'GDPO (#189), NVlabs/GDPO',
  needs: ['rewardComponents'],
  options: z.object({ epsilon: epsilonOption }).partial().strict(),
});

/**
 * Stratified GRPO: A = α·A^S + (1−α)·A^G, where A^S z-scores inside the sample's stratum within its
 * group (strata of one sample get A^S = 0) and A^G is the GRPO z-score; both use sample std and ε
 * (default 1e-6). α is required (no verified default). Stratified GRPO (#27, arXiv 2510.06214).
 */
export function stratifiedAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const strata = requireSampleField(input.strata, 'strata', rewards.length, 'stratified');
  const alpha = requireAlpha(options, 'stratified', [0, 1]);
  const epsilon = options.epsilon ?? defaultStdEpsilon;
  const segmentIds = new Map<string, number>();
  const segmentOf = Int32Array.from({ length: rewards.length }, (_, i) => {
    const key = `${layout.groupOf[i]}\u0000${typeof strata[i]}:${String(strata[i])}`;
    if (!segmentIds.has(key)) segmentIds.set(key, segmentIds.size);
    return segmentIds.get(key) as number;
  });
  const withinStratum = segmentZScore(rewards, segmentOf, segmentIds.size, epsilon);
  const group = grpoAdvantage(input, { ...options, epsilon, std: 'sample' });
  const out = withinStratum.map((s, i) => (Number.isNaN(s) ? NaN : alpha * s + (1 - alpha) * group.advantages[i]));
  return { advantages: finishAdvantages(out), keep: group.keep, stdIsZero: group.stdIsZero };
}

/** `algorithm.advantage: stratified`: the entry `grpo list` prints and configs name. */
export const stratifiedAdvantagePart = defineAdvantageEstimator({
  name: 'stratified',
  fn: stratifiedAdvantage,
  description: 'α·(z-score within stratum) + (1−α)·(group z-score); α and strataFrom required',
  citation: 'Stratified GRPO (#27), arXiv 2510.06214',
  needs: ['strata'],
  options: z
    .object({
      alpha: unitAlphaOption.describe(
        'the blend weight α in [0, 1] of the within-stratum z-score; the paper gives no verified default',
      ),
      strataFrom: z
        .string()
        .regex(
          /^(row\.[^.]+|rollout\.(toolCalls|truncated|turns))$/,
          'use "row.<column>" or "rollout.toolCalls" / "rollout.turns" / "rollout.truncated"',
        )
        .describe(
          'where each sample\'s stratum key comes from: "row.<column>", "rollout.toolCalls", "rollout.turns" or "rollout.truncated"',
        ),
      epsilon: epsilonOption.optional(),
    })
    .strict(),
});

/** Semantic entropy of one group from cluster frequencies: −(1/K) Σ_k log(count_k / G). */
export function semanticEntropy(clusterKeys: readonly (number | string)[]): number {
  const counts = new Map<string, number>();
  for (const key of clusterKeys)
    counts.set(`${typeof key}:${String(key)}`, (counts.get(`${typeof key}:${String(key)}`) ?? 0) + 1);
  let total = 0;
  for (const count of counts.values()) total -= Math.log(count / clusterKeys.length);
  return counts.size === 0 ? 0 : total / counts.size;
}

/**
 * SEED-GRPO: A_i = (r_i − mean_g) · (1 − α·SE/SE_max), SE the frequency-based semantic entropy of the
 * group's clusters, SE_max = log G, linear f — choices made here, the paper's exact f and α are
 * unverified (α required). A one-sample group has SE/SE_max = 0. SEED-GRPO (#215, arXiv 2505.12346).
 */
export function seedGrpoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const clusters = requireSampleField(input.clusters, 'clusters', rewards.length, 'seed-grpo');
  const alpha = requireAlpha(options, 'seed-grpo', [0, 1]);
  const base = drGrpoAdvantage(input, { ...options, singletonGroup: options.singletonGroup ?? 'zero' });
  const out = new Float32Array(rewards.length);
  for (let g = 0; g < layout.groupCount; g++) {
    const members: number[] = [];
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++) if (base.keep[i]) members.push(i);
    const entropyRatio =
      members.length > 1 ? semanticEntropy(members.map((i) => clusters[i])) / Math.log(members.length) : 0;
    for (const i of members) out[i] = base.advantages[i] * (1 - alpha * entropyRatio);
  }
  return { advantages: out, keep: base.keep, stdIsZero: base.stdIsZero };
}

/** `algorithm.advantage: seed-grpo`: the entry `grpo list` prints and configs name. */
export const seedGrpoAdvantagePart = defineAdvantageEstimator({
  name: 'seed-grpo',
  fn: seedGrpoAdvantage,
  description: '(r − mean_g)·(1 − α·SE/log G), SE = semantic entropy of answer clusters; α required',
  citation: 'SEED-GRPO (#215), arXiv 2505.12346',
  needs: ['clusters'],
  options: z
    .object({
      alpha: unitAlphaOption.describe(
        'the weight α in [0, 1] of the semantic-entropy scaling; the paper gives no verified default',
      ),
      clusterBy: z
        .enum(['answer', 'text'])
        .default('answer')
        .describe("'answer': equivalent final answers (math-verify rules); 'text': identical trimmed text"),
      singletonGroup: singletonGroupOption.optional(),
    })
    .strict(),
});

/**
 * S-GRPO serial-group reward and advantage: `rewards` holds each exit's correctness (0/1) in exit
 * order per group; r_k = 1/2^(n_k − 1) when correct (n_k = correct exits so far), else 0;
 * A_k = r_k − mean(r), no std (no authors' code; the paper's formula as four summaries of it agree, [P]).
 * S-GRPO: Early Exit via RL in Reasoning Models (#25, arXiv 2505.07686); the rollout: recipes/papers/s-grpo.ts.
 */
export function serialGroupAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const correctness = toRewardArray(input.rewards);
  const layout = resolveGroups(correctness.length, input.groupSizes);
  const decayed = new Array<number | null>(correctness.length);
  for (let g = 0; g < layout.groupCount; g++) {
    let correctSoFar = 0;
    for (let i = layout.starts[g]; i < layout.starts[g] + layout.sizes[g]; i++) {
      if (Number.isNaN(correctness[i])) {
        decayed[i] = null;
        continue;
      }
      if (correctness[i] !== 0 && correctness[i] !== 1)
        throw new RangeError(`rewards[${i}] is ${correctness[i]}; S-GRPO expects exit correctness 0 or 1.`);
      if (correctness[i] === 1) correctSoFar++;
      decayed[i] = correctness[i] === 1 ? 1 / 2 ** (correctSoFar - 1) : 0;
    }
  }
  return drGrpoAdvantage(
    { ...input, rewards: decayed },
    { ...options, singletonGroup: options.singletonGroup ?? 'zero' },
  );
}

/** `algorithm.advantage: s-grpo`: the entry `grpo list` prints and configs name. */
export const serialGroupAdvantagePart = defineAdvantageEstimator({
  name: 's-grpo',
  fn: serialGroupAdvantage,
  description: 'serial early-exit group: r_k = 1/2^(n_k−1) if correct, A = r − mean; needs a serial-exit rollout',
  citation: 'S-GRPO (#25), arXiv 2505.07686',
  needs: ['serialRollout'],
  options: z.object({ singletonGroup: singletonGroupOption }).partial().strict(),
});

/** Decayed serial-group rewards alone (for logging), same rule as `serialGroupAdvantage`. */
export function serialGroupRewards(correctness: readonly number[]): number[] {
  let correctSoFar = 0;
  return correctness.map((c) => (c === 1 ? 1 / 2 ** correctSoFar++ : 0));
}

/**
 * Single-stream baseline (SPO): A_i = r_i − v(q_i) with v a persistent per-prompt value from
 * `input.baselines`, then z-scored over the batch (sample std, ε = 1e-6) unless `batchNormalize` is false.
 * Groups are not needed (`groupSizes: 1` works). Formula inferred from the abstract [I]. Single-stream Policy Optimization (#252).
 */
export function singleStreamAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const baselines = requireSampleField(input.baselines, 'baselines', rewards.length, 'single-stream');
  const centred = rewards.map((r, i) => r - baselines[i]);
  let out = centred;
  if (options.batchNormalize ?? true) {
    const batch = batchStats(centred, options.std ?? 'sample');
    const epsilon = options.epsilon ?? defaultStdEpsilon;
    const scale = batch.count < 2 || batch.std < zeroStdThreshold ? 1 : batch.std + epsilon;
    out = centred.map((v) => (v - (batch.count < 2 ? 0 : batch.mean)) / scale);
  }
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  return { advantages: finishAdvantages(out), keep: scoredMask(rewards), stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: single-stream`: the entry `grpo list` prints and configs name. */
export const singleStreamAdvantagePart = defineAdvantageEstimator({
  name: 'single-stream',
  fn: singleStreamAdvantage,
  description: 'r − v(q) with a persistent, KL-adaptive per-prompt value, z-scored over the batch',
  citation: 'SPO: Single-stream Policy Optimization (#252), arXiv 2509.13232',
  needs: ['baselines'],
  options: z
    .object({
      epsilon: epsilonOption.optional(),
      std: stdOption.optional(),
      batchNormalize: z.boolean().optional(),
      halfLifeKl: z
        .number()
        .positive()
        .default(0.06)
        .describe('D_half: the policy KL at which old evidence counts half (SPO)'),
      minDiscount: z.number().gt(0).lt(1).default(0.875).describe('ρ_min: the strongest forgetting per visit'),
      maxDiscount: z.number().gt(0).lt(1).default(0.96).describe('ρ_max: the weakest forgetting per visit'),
    })
    .strict(),
});

/** Single-stream value tracker update: v ← v + stepSize·(r − v) (an EMA of the prompt's success). */
export function updateSingleStreamBaseline(value: number, reward: number, stepSize: number): number {
  if (!(stepSize > 0 && stepSize <= 1)) throw new RangeError(`stepSize must be in (0, 1], got ${stepSize}.`);
  return value + stepSize * (reward - value);
}
