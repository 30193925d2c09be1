/**
 * Per-prompt state that outlives a step and travels in checkpoints (`TrainerState.extra`): the
 * single-stream (SPO) value tracker and the prompt selectors' Beta success posteriors, keyed by the
 * example's index in the run's training list, as plain JSON.
 *
 * SPO's tracker (Xu & Ding 2025, arXiv 2509.13232, §3): per prompt a discounted success count,
 * v̂ = S/W with S ← ρ·S + Σ r and W ← ρ·W + n at each visit, where the discount
 * ρ = clip(2^(−D/D_half), ρ_min, ρ_max) and D estimates the KL between the policy now and the one
 * that last acted on the prompt: the mean of log π_then − log π_now over the last visit's stored
 * completion (sampled from π_then, so an unbiased estimate of KL(π_then ‖ π_now)).
 *
 * A first visit: the authors' code (verl-recipe spo/spo_ray_trainer.py) starts every prompt at
 * α = N_init·(s + ½)/(N + 1), β = N_init·(N − s + ½)/(N + 1) from N offline samples with s
 * successes, and at α = β = ½ (v̂ = ½, the Jeffreys prior) with none. Here the first visit's own
 * n scored samples stand in for the offline ones: v̂ = (Σr + ½)/(n + 1), and the entry keeps the
 * prior's half-counts (S = Σr + ½, W = n + 1). So a first visit with G = 1 is not advantage 0:
 * r = 1 gets ¼ and r = 0 gets −¼ before batch normalisation. The ½ assumes success rewards in [0, 1],
 * as the paper's Bernoulli tracker does.
 *
 * Is not: the estimator (algorithms/advantages-structured.ts) or the forward pass that measures
 * log π_now (grpo-step.ts does, through `frozenLogprobs`).
 */
import type { TrackerOptions } from '../config/algorithm.js';

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
