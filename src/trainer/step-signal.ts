/**
 * From a step's batch to its training signal: the per-sample inputs the bound estimator declared
 * it needs (strata, semantic clusters, tracked baselines), KL in the reward, the advantages, and
 * which samples carry gradient (invalid rewards, the group filter's sample mask, truncation). And
 * the per-prompt state that outlives a step and travels in checkpoints (the single-stream value
 * tracker, the prompt selectors' posteriors), second half of the file, moved forward after each
 * update by `recordStepState`.
 *
 * Is not: generation (step-batch.ts), the reference or tracker forward passes (grpo-step.ts), or
 * the loss. The estimator functions themselves live in algorithms/.
 */
import {
  updateBetaPosterior,
  updateQuantileTracker,
  type AdvantageInput,
  type QuantileTracker,
} from '../algorithms/index.js';
import type { TrainerState } from '../run/run-folder.js';
import { UPDATE_ENTROPY_METRIC } from './optimize.js';
import { extractFinalAnswer } from '../rewards/math/extract.js';
import { answersMatch } from '../rewards/math/verify.js';
import type { RewardEpisode } from '../rewards/types.js';
import type { BoundAlgorithm, StrataSource } from '../config/algorithm.js';
import type { RolloutRow } from '../rollout/rollout.js';
import { groupStarts, rewardColumns, sampleRows, scoredRewards, type StepBatch } from './step-batch.js';
import type { TrackerOptions } from '../config/algorithm.js';

/** Per-sample numbers the caller computed with a model: KL penalties and tracked baselines. */
export interface SignalInputs {
  /** [N] β·Σ_t k1 of each sample (KL in the reward); subtracted from the combined reward. */
  klPenalties?: Float64Array;
  /** [N] the tracked value v(q) of each sample's prompt (single-stream). */
  baselines?: Float64Array;
  /** [N][turns] each turn's information gain under the policy (IGPO; grpo-step computes them). */
  informationGains?: number[][];
  /** The quantiles tracked over earlier steps (RiskPO's `trackedQuantiles`; absent on the first step). */
  quantileTracker?: QuantileTracker;
  /** [N] per completion token, π_old's log-probs at the estimator's `logprobTemperature` (DCPO). */
  temperatureLogprobs?: Float32Array[];
  /** The previous update's −mean logπ over its loss tokens, NaN before the first (DCPO). */
  previousEntropy?: number;
  /** The training step (0 = the first; estimators that anneal read it, Trust-GRPO). */
  step?: number;
  /** [N] per completion token, the reference model's log-probs (`referenceTokenLogprobs`, GRPO-CARE). */
  referenceLogprobs?: Float32Array[];
  /** [N] per completion token, its decoded text (`tokenTexts`). */
  tokenTexts?: string[][];
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
  /** What the quantile tracker learns from after the step (a `trackedQuantiles` estimator's samples). */
  quantileSamples?: Float64Array;
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
    rewardNames: batch.rewardNames,
    step: inputs.step,
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
  if (bound.needs.has('trackedQuantiles') && inputs.quantileTracker)
    estimatorInput.quantileTracker = inputs.quantileTracker;
  if (bound.needs.has('temperatureLogprobs')) {
    if (!inputs.temperatureLogprobs)
      throw new Error(`${bound.advantage.name} needs π_old's log-probs at its temperature (grpo-step computes them)`);
    estimatorInput.oldLogprobs = batch.samples.map((sample) => sample.oldLogprobs);
    estimatorInput.temperatureLogprobs = inputs.temperatureLogprobs;
  }
  if (bound.needs.has('previousEntropy')) estimatorInput.previousEntropy = inputs.previousEntropy ?? Number.NaN;
  if (bound.needs.has('referenceTokenLogprobs')) {
    if (!inputs.referenceLogprobs)
      throw new Error(`${bound.advantage.name} needs the reference model's log-probs (grpo-step computes them)`);
    estimatorInput.referenceLogprobs = inputs.referenceLogprobs;
  }
  if (bound.needs.has('tokenTexts')) {
    if (!inputs.tokenTexts) throw new Error(`${bound.advantage.name} needs each token's text (grpo-step decodes them)`);
    estimatorInput.tokenTexts = inputs.tokenTexts;
  }
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
    quantileSamples: result.quantileSamples,
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
      turnTokenCounts: batch.samples.map((sample, i) => turnTokenCounts(sampleRows(batch, i), sample.episode)),
    },
    options,
  );
}

/** Per model turn of an episode: its loss tokens over the episode's rows (observation tokens, turn −1, are none). */
function turnTokenCounts(rows: readonly RolloutRow[], episode: RewardEpisode | undefined): number[] {
  const counts = (episode?.turnRewards ?? []).map(() => 0);
  for (const row of rows)
    row.tokenTurns?.forEach((turn, t) => {
      if (turn >= 0 && turn < counts.length && row.lossMask?.[t] !== 0) counts[turn]++;
    });
  return counts;
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

// Per-prompt state that outlives a step and travels in checkpoints (`TrainerState.extra`): the
// single-stream (SPO) value tracker and the prompt selectors' Beta success posteriors, keyed by the
// example's index in the run's training list, as plain JSON.
//
// SPO's tracker (Xu & Ding 2025, arXiv 2509.13232, §3): per prompt a discounted success count,
// v̂ = S/W with S ← ρ·S + Σ r and W ← ρ·W + n at each visit, where the discount
// ρ = clip(2^(−D/D_half), ρ_min, ρ_max) and D estimates the KL between the policy now and the one
// that last acted on the prompt: the mean of log π_then − log π_now over the last visit's stored
// completion (sampled from π_then, so an unbiased estimate of KL(π_then ‖ π_now)).
//
// A first visit: the authors' code (verl-recipe spo/spo_ray_trainer.py) starts every prompt at
// α = N_init·(s + ½)/(N + 1), β = N_init·(N − s + ½)/(N + 1) from N offline samples with s
// successes, and at α = β = ½ (v̂ = ½, the Jeffreys prior) with none. Here the first visit's own
// n scored samples stand in for the offline ones: v̂ = (Σr + ½)/(n + 1), and the entry keeps the
// prior's half-counts (S = Σr + ½, W = n + 1). So a first visit with G = 1 is not advantage 0:
// r = 1 gets ¼ and r = 0 gets −¼ before batch normalisation. The ½ assumes success rewards in [0, 1],
// as the paper's Bernoulli tracker does.
//
// Is not: the estimator (algorithms/advantages-structured.ts) or the forward pass that measures
// log π_now (grpo-step.ts does, through `frozenLogprobs`).

/** One prompt's tracker entry. */
export interface TrackedValue {
  /** Discounted sum of rewards S. */
  sum: number;
  /** Discounted count W. */
  weight: number;
  /** The last visit's completion (ids and its logprobs under the policy of that visit), for D. */
  promptIds: number[];
  completionIds: number[];
  logprobs: number[];
}

export type ValueTrackerState = Record<string, TrackedValue>;

/** ρ = clip(2^(−D/D_half), ρ_min, ρ_max); a negative KL estimate counts as 0. */
export function trackerDiscount(kl: number, options: TrackerOptions): number {
  const raw = 2 ** (-Math.max(0, kl) / options.halfLifeKl);
  return Math.min(options.maxDiscount, Math.max(options.minDiscount, raw));
}

/** Mean of (log π_then − log π_now) over a completion's tokens: the KL estimate D. */
export function policyDrift(logprobsThen: readonly number[], logprobsNow: ArrayLike<number>): number {
  if (logprobsThen.length === 0) return 0;
  let total = 0;
  for (let t = 0; t < logprobsThen.length; t++) total += logprobsThen[t] - logprobsNow[t];
  return total / logprobsThen.length;
}

/** The pseudo-counts every prompt starts from (the authors' α = β = ½ without offline samples). */
const PRIOR_SUM = 0.5;
const PRIOR_WEIGHT = 1;

/**
 * The baseline of a visit: the tracked v̂ = S/W after discounting by ρ (the discount changes
 * nothing in v̂ itself, only how much the new rewards move it), or on a first visit
 * (Σr + ½)/(n + 1) over this visit's own scored rewards (½ with none).
 */
export function trackedBaseline(entry: TrackedValue | undefined, visitRewards: readonly number[]): number {
  if (entry && entry.weight > 0) return entry.sum / entry.weight;
  const scored = visitRewards.filter(Number.isFinite);
  return (PRIOR_SUM + scored.reduce((a, b) => a + b, 0)) / (PRIOR_WEIGHT + scored.length);
}

/**
 * S ← ρ·S + Σ r, W ← ρ·W + n over the visit's scored rewards (a first visit adds them to the prior's
 * undiscounted half-counts); remembers the visit's first scored completion.
 */
export function updateTrackedValue(
  entry: TrackedValue | undefined,
  discount: number,
  visitRewards: readonly number[],
  completion: { promptIds: number[]; completionIds: number[]; logprobs: number[] } | null,
): TrackedValue {
  const scored = visitRewards.filter(Number.isFinite);
  const previous = entry ?? { sum: PRIOR_SUM, weight: PRIOR_WEIGHT, promptIds: [], completionIds: [], logprobs: [] };
  const keep = entry ? discount : 1;
  return {
    sum: keep * previous.sum + scored.reduce((a, b) => a + b, 0),
    weight: keep * previous.weight + scored.length,
    ...(completion ?? {
      promptIds: previous.promptIds,
      completionIds: previous.completionIds,
      logprobs: previous.logprobs,
    }),
  };
}

/** Beta(α, β) success posteriors of the prompt selectors, by example index; Beta(1, 1) when unseen. */
export type PosteriorState = Record<string, [alpha: number, beta: number]>;

export function posteriorOf(state: PosteriorState, exampleIndex: number): { alpha: number; beta: number } {
  const entry = state[String(exampleIndex)];
  return entry ? { alpha: entry[0], beta: entry[1] } : { alpha: 1, beta: 1 };
}

/** What a step leaves for `recordStepState` (grpo-step.ts PreparedStep carries it). */
export interface SignalOutcome {
  batch: StepBatch;
  /** The first generation round, before any filter (reward metrics are logged from it, as TRL does). */
  firstRound: StepBatch;
  signal: StepSignal;
  /** Per group: the tracker discount ρ of this visit (single-stream). */
  discounts?: number[];
}

/**
 * Moves state forward after the step: the value tracker, the selectors' posteriors, RiskPO's
 * quantile tracker (on the samples its estimator returned, as the authors' trainer after each step)
 * and (need `previousEntropy`) the update's −mean logπ over its loss tokens, averaged over the μ
 * passes (`passes`: each pass's metrics, as `policyStep` returns them).
 */
export function recordStepState(
  bound: BoundAlgorithm,
  state: TrainerState,
  prepared: SignalOutcome,
  passes: readonly Record<string, number>[] = [],
): void {
  const { batch } = prepared;
  if (bound.needs.has('trackedQuantiles') && prepared.signal.quantileSamples) {
    const next = updateQuantileTracker(
      state.extra.quantileTracker as QuantileTracker | undefined,
      prepared.signal.quantileSamples,
      bound.advantage.options as { quantileLearningRate?: number },
    );
    if (next) state.extra.quantileTracker = next;
  }
  const entropies = passes.map((metrics) => metrics[UPDATE_ENTROPY_METRIC]).filter(Number.isFinite);
  if (bound.needs.has('previousEntropy') && entropies.length > 0)
    state.extra.previousEntropy = entropies.reduce((a, b) => a + b, 0) / entropies.length;
  const starts = groupStarts(batch.groupSizes);
  if (bound.tracker && prepared.discounts) {
    const tracker = { ...((state.extra.valueTracker ?? {}) as ValueTrackerState) };
    batch.prompts.forEach((prompt, g) => {
      const members = Array.from({ length: batch.groupSizes[g] }, (_, k) => starts[g] + k);
      const visit = members.map((i) => prepared.signal.rewards[i]);
      const firstScored = members.find((i) => Number.isFinite(prepared.signal.rewards[i]));
      const completion =
        firstScored === undefined
          ? null
          : {
              promptIds: batch.samples[firstScored].promptIds ?? prompt.promptIds,
              completionIds: batch.samples[firstScored].completionIds,
              logprobs: batch.samples[firstScored].oldLogprobs,
            };
      tracker[String(prompt.exampleIndex)] = updateTrackedValue(
        tracker[String(prompt.exampleIndex)],
        prepared.discounts![g],
        visit,
        completion,
      );
    });
    state.extra.valueTracker = tracker;
  }
  if (bound.promptSelector) {
    // The selector's own choices (the first round, before any filter) are what its posteriors learn from.
    const chosen = prepared.firstRound;
    const chosenStarts = groupStarts(chosen.groupSizes);
    const posteriors = { ...((state.extra.promptPosteriors ?? {}) as PosteriorState) };
    const threshold = bound.promptSelector.options.successThreshold;
    chosen.prompts.forEach((prompt, g) => {
      const visit = Array.from(chosen.rewards.subarray(chosenStarts[g], chosenStarts[g] + chosen.groupSizes[g])).filter(
        Number.isFinite,
      );
      const successes = visit.filter((r) => r >= threshold).length;
      const next = updateBetaPosterior(
        posteriorOf(posteriors, prompt.exampleIndex!),
        successes,
        visit.length - successes,
        bound.promptSelector!.options.decay,
      );
      posteriors[String(prompt.exampleIndex)] = [next.alpha, next.beta];
    });
    state.extra.promptPosteriors = posteriors;
  }
}
