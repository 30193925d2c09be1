/**
 * From a step's batch to its training signal: the per-sample inputs the bound estimator declared
 * it needs (strata, semantic clusters, tracked baselines), KL in the reward, the advantages, and
 * which samples carry gradient (invalid rewards, the group filter's sample mask, truncation).
 *
 * Is not: generation (step-batch.ts), the reference or tracker forward passes (grpo-step.ts), or
 * the loss. The estimator functions themselves live in algorithms/.
 */
import type { AdvantageInput } from '../algorithms/index.js';
import { extractFinalAnswer } from '../rewards/math/extract.js';
import { answersMatch } from '../rewards/math/verify.js';
import type { RewardEpisode } from '../rewards/types.js';
import type { BoundAlgorithm, StrataSource } from '../config/algorithm.js';
import type { RolloutRow } from '../rollout/rollout.js';
import { groupStarts, rewardColumns, scoredRewards, type StepBatch } from './step-batch.js';

/** Per-sample numbers the caller computed with a model: KL penalties and tracked baselines. */
export interface SignalInputs {
  /** [N] β·Σ_t k1 of each sample (KL in the reward); subtracted from the combined reward. */
  klPenalties?: Float64Array;
  /** [N] the tracked value v(q) of each sample's prompt (single-stream). */
  baselines?: Float64Array;
  /** [N][turns] each turn's information gain under the policy (IGPO; grpo-step computes them). */
  informationGains?: number[][];
  /** [N] per completion token, π_old's log-probs at the estimator's `logprobTemperature` (DCPO). */
  temperatureLogprobs?: Float32Array[];
  /** The previous update's −mean logπ over its loss tokens, NaN before the first (DCPO). */
  previousEntropy?: number;
}

export interface StepSignal {
  /** [N] the rewards the estimator saw (after KL in the reward); NaN = invalid. */
  rewards: Float64Array;
  advantages: Float32Array;
  tokenAdvantages?: Float32Array[];
  /** [N][turns] per model turn of each episode: the advantage of that turn's tokens (algorithm.turnCredit). */
  turnAdvantages?: number[][];
  /** [N] 1 = the sample carries gradient. */
  keep: Uint8Array;
  zeroStdGroups: number;
  /** The turn-credit estimator's own metrics (logged under turnCredit/). */
  turnCreditMetrics?: Record<string, number>;
}

/** Stratum key of every sample. */
export function strataOf(batch: StepBatch, source: StrataSource): string[] {
  return batch.samples.map((sample) => {
    if (source.kind === 'row') return String(batch.prompts[sample.promptIndex].example[source.column]);
    return String(source.statistic === 'truncated' ? sample.truncated : (sample[source.statistic] ?? 'missing'));
  });
}

/**
 * Semantic cluster id of every sample, within its group: 'answer' puts samples whose final answers
 * are equivalent (the math-answer rules) together, a sample with no extractable answer alone;
 * 'text' groups identical trimmed completions.
 */
export function clustersOf(batch: StepBatch, by: 'answer' | 'text'): number[] {
  const clusters = new Array<number>(batch.samples.length);
  let next = 0;
  groupStarts(batch.groupSizes).forEach((start, g) => {
    const representatives: { key: string; id: number }[] = [];
    for (let i = start; i < start + batch.groupSizes[g]; i++) {
      const text = batch.samples[i].text.trim();
      const key = by === 'text' ? text : (extractFinalAnswer(text)?.answer ?? null);
      const match =
        key === null
          ? undefined
          : representatives.find((r) => (by === 'text' ? r.key === key : answersMatch(key, r.key)));
      if (match) clusters[i] = match.id;
      else {
        clusters[i] = next++;
        if (key !== null) representatives.push({ key, id: clusters[i] });
      }
    }
  });
  return clusters;
}

/** Advantages and the loss mask of a step, exactly as the bound parts define them. */
export function computeSignal(bound: BoundAlgorithm, batch: StepBatch, inputs: SignalInputs = {}): StepSignal {
  const rewards = inputs.klPenalties ? batch.rewards.map((r, i) => r - inputs.klPenalties![i]) : batch.rewards.slice();
  const estimatorInput: AdvantageInput = {
    rewards: scoredRewards(rewards),
    groupSizes: batch.groupSizes,
    rewardComponents: rewardColumns(batch),
    rewardWeights: batch.rewardWeights,
    completionIds: batch.samples.map((sample) => sample.completionIds),
  };
  if (bound.strata) estimatorInput.strata = strataOf(batch, bound.strata);
  if (bound.needs.has('clusters'))
    estimatorInput.clusters = clustersOf(batch, bound.advantage.options.clusterBy ?? 'answer');
  if (bound.needs.has('baselines')) {
    if (!inputs.baselines)
      throw new Error('the single-stream estimator needs tracked baselines (grpo-step computes them)');
    estimatorInput.baselines = inputs.baselines;
  }
  if (bound.needs.has('temperatureLogprobs')) {
    if (!inputs.temperatureLogprobs)
      throw new Error(`${bound.advantage.name} needs π_old's log-probs at its temperature (grpo-step computes them)`);
    estimatorInput.oldLogprobs = batch.samples.map((sample) => sample.oldLogprobs);
    estimatorInput.temperatureLogprobs = inputs.temperatureLogprobs;
  }
  if (bound.needs.has('previousEntropy')) estimatorInput.previousEntropy = inputs.previousEntropy ?? Number.NaN;
  const result = bound.advantage.fn(estimatorInput, bound.advantage.options);
  const keep = Uint8Array.from(result.keep);
  if (bound.groupFilter) {
    // The refill loop already dropped whole groups; this applies the filter's per-sample mask.
    const filtered = bound.groupFilter.fn(
      {
        rewards: scoredRewards(rewards),
        groupSizes: batch.groupSizes,
        truncated: batch.samples.map((s) => s.truncated),
      },
      bound.groupFilter.options,
    );
    filtered.keepSamples.forEach((kept, i) => {
      if (!kept) keep[i] = 0;
    });
  }
  batch.samples.forEach((sample, i) => {
    if (bound.maskTruncated && sample.truncated) keep[i] = 0;
    if (!batch.valid[i]) keep[i] = 0;
  });
  const credit = bound.turnCredit ? turnCredit(bound, batch, rewards, keep, inputs) : undefined;
  return {
    rewards,
    advantages: result.advantages,
    tokenAdvantages: result.tokenAdvantages,
    turnAdvantages: credit?.turnAdvantages,
    turnCreditMetrics: credit?.metrics,
    keep,
    zeroStdGroups: result.stdIsZero.reduce((a, b) => a + b, 0),
  };
}

/** The bound turn-credit estimator over the episodes (samples that carry no gradient count as unscored). */
function turnCredit(
  bound: BoundAlgorithm,
  batch: StepBatch,
  rewards: Float64Array,
  keep: Uint8Array,
  inputs: SignalInputs,
): { turnAdvantages: number[][]; metrics: Record<string, number> } {
  const { fn, options, needs, name } = bound.turnCredit!;
  if (needs.includes('informationGains') && !inputs.informationGains)
    throw new Error(`${name} needs per-turn information gains (grpo-step computes them with the policy)`);
  return fn(
    {
      rewards: Float64Array.from(rewards, (reward, i) => (keep[i] ? reward : Number.NaN)),
      groupSizes: batch.groupSizes,
      turnRewards: batch.samples.map((sample) => sample.episode?.turnRewards ?? []),
      toolCallTurns: batch.samples.map((sample) => toolCallTurns(sample.episode)),
      stateKeys: needs.includes('stateKeys') ? batch.samples.map((sample) => sample.stateKeys ?? []) : undefined,
      informationGains: inputs.informationGains,
    },
    options,
  );
}

/** Per model turn of an episode: whether it made tool calls (a turn with a malformed call counts). */
function toolCallTurns(episode: RewardEpisode | undefined): boolean[] {
  if (!episode) return [];
  const flags = episode.turnRewards.map(() => false);
  for (const call of episode.toolCalls) flags[call.turn] = true;
  return flags;
}

/** Per completion token of a row: its turn's advantage (observation tokens, turn −1, get 0; they are masked). */
export function turnTokenAdvantages(row: RolloutRow, turnAdvantages: readonly number[]): Float32Array {
  if (!row.tokenTurns) throw new Error("turn-level credit needs the rollout to record each token's turn (tokenTurns)");
  return Float32Array.from(row.tokenTurns, (turn) => (turn >= 0 ? (turnAdvantages[turn] ?? 0) : 0));
}
