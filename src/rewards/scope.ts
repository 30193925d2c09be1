/**
 * SCOPE (papers.tsv 136; Wang, Wang, Chen & Huang 2025, "Beyond Majority Voting", arXiv 2512.15146):
 * TTRL's label-free reward, with each vote weighted by the completion's step-wise confidence and each
 * group cut into subgroups with pseudo-labels of their own, the subgroup size chosen per step on a
 * Pareto front of reward rate and label diversity (the formulas: docs/algorithms.md, "scope").
 *
 * Exact to the authors' code (szu-tera/SCOPE): `myutils.py` (`split_steps`, `compute_confidence`,
 * `calculate_avg_step_conf`, with the "\n\n" split token and vLLM `logprobs=0` of
 * `vllm_rollout_spmd.py`: the sampled token's −logprob, rounded to 3 decimals), `grouputils.py`
 * (`_batch_conf_vote`: each subgroup votes over `votesPerSubgroup` samples drawn without replacement
 * from the whole group; `_majority_vote_with_confidence`: the heaviest answer, the first drawn on a
 * tie; `apply_group_conf_gt`: the diversity) and `ray_trainer.py` "search_params" (sizes 1, 2, …, 64,
 * the Pareto choice, λ 0.7, the labels drawn afresh with the chosen size).
 *
 * Differs, and why: their vote zips the answers left after dropping no-answer completions with the
 * unfiltered confidences (each answer after a no-answer one carries its neighbour's weight); here each
 * carries its own. Answers are extracted and compared as `majority-vote` does (`requireBoxed: true`
 * is theirs). The logprobs are the sampler's (logits / temperature), vLLM's before temperature: equal
 * at their temperature 1. Tokens without a policy logprob (tool output) are left out of their step.
 *
 * Is not: TTRL's vote-over-64, train-on-32 split (SCOPE's scripts vote and train on the same 64).
 */
import { answerClasses, type VoteOptions } from './vote.js';
import { policyLogprobsOf } from './policy.js';
import type { BatchReward, RewardInput } from './types.js';

/** Options of {@link scopeReward}: the vote's size and λ, the step separator, the draw's seed, and `majority-vote`'s knobs. */
export interface ScopeOptions extends VoteOptions {
  /** Completions drawn for each subgroup's vote (default half the group; the authors' 32 of 64); at most the group. */
  votesPerSubgroup?: number;
  /** Weight of reward density against label diversity in the Pareto choice (default 0.7, the authors' `scope.lam`). */
  lambda?: number;
  /** A token whose text contains this ends a reasoning step (default "\n\n", the authors' split token). */
  stepSeparator?: string;
  /** Seed of the vote draws; the step number is mixed in, so each step draws anew (default 0). */
  seed?: number;
}

/** mulberry32: a seeded uniform generator in [0, 1), for the vote draws (rewards/ has no tensor RNG). */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The average step confidence of one completion (the authors' `calculate_avg_step_conf`); 0 without tokens. */
export function averageStepConfidence(input: RewardInput, separator = '\n\n'): number {
  const logprobs = policyLogprobsOf(input, 'scope');
  const texts = input.completionTokenTexts;
  if (texts === undefined || texts.length !== logprobs.length)
    throw new Error(
      `reward "scope" needs each completion token's text (RewardInput.completionTokenTexts, set by grpo train) to find the reasoning steps`,
    );
  const stepMeans: number[] = [];
  let sum = 0;
  let count = 0;
  const closeStep = () => {
    if (count > 0) stepMeans.push(sum / count);
    sum = 0;
    count = 0;
  };
  logprobs.forEach((logprob, t) => {
    if (!Number.isNaN(logprob)) {
      sum += Math.round(-logprob * 1000) / 1000; // round(-logprob, 3), as theirs
      count++;
    }
    if (texts[t]!.includes(separator)) closeStep();
  });
  closeStep();
  return stepMeans.length === 0 ? 0 : stepMeans.reduce((a, b) => a + b, 0) / stepMeans.length;
}

/**
 * Confidence-weighted vote over `drawn` (indices into the group): the answer class with the largest
 * summed confidence, the first drawn on a tie; −1 when none of them has an answer.
 */
function weightedVote(drawn: readonly number[], classes: readonly number[], confidence: (j: number) => number): number {
  const order: number[] = [];
  for (const j of drawn) if (classes[j]! >= 0 && !order.includes(classes[j]!)) order.push(classes[j]!);
  if (order.length <= 1) return order[0] ?? -1; // one answer wins whatever its weight: no confidence needed
  const weight = new Map<number, number>(order.map((answer) => [answer, 0]));
  for (const j of drawn) if (classes[j]! >= 0) weight.set(classes[j]!, weight.get(classes[j]!)! + confidence(j));
  return order.reduce((best, answer) => (weight.get(answer)! > weight.get(best)! ? answer : best));
}

/** One subgroup size's outcome on a step: its reward rate and mean number of distinct labels per group. */
export interface SubgroupCandidate {
  size: number;
  rate: number;
  diversity: number;
}

/**
 * The authors' Pareto choice: among the candidates no other beats in both metrics, the one nearest
 * (1, 1) after min-max normalisation, √(λ(1−R̂)² + (1−λ)(1−D̂)²); the first (smallest size) on a tie.
 */
export function chooseSubgroupSize(candidates: readonly SubgroupCandidate[], lambda: number): number {
  const front = candidates.filter(
    (c) =>
      !candidates.some(
        (o) =>
          o.size !== c.size &&
          o.rate >= c.rate &&
          o.diversity >= c.diversity &&
          (o.rate > c.rate || o.diversity > c.diversity),
      ),
  );
  const normalised = (values: number[]) => {
    const low = Math.min(...values);
    const span = Math.max(...values) - low + 1e-8;
    return values.map((value) => (value - low) / span);
  };
  const rates = normalised(front.map((c) => c.rate));
  const diversities = normalised(front.map((c) => c.diversity));
  let best = 0;
  let bestDistance = Infinity;
  front.forEach((_, k) => {
    const distance = Math.sqrt(lambda * (1 - rates[k]!) ** 2 + (1 - lambda) * (1 - diversities[k]!) ** 2);
    if (distance < bestDistance) [best, bestDistance] = [k, distance];
  });
  return front[best]!.size;
}

/**
 * SCOPE's reward: 1 when the completion's final answer equals its subgroup's confidence-weighted
 * pseudo-label, the subgroup size picked per step on the Pareto front of reward rate and label diversity.
 * @example
 * // one group of four, answers [4, 4, 5, 5], the 5s far more confident: with subgroups of 4 and a
 * // vote over all four, the label is 5 and the scores are [0, 0, 1, 1].
 */
export function scopeReward({
  votesPerSubgroup,
  lambda = 0.7,
  stepSeparator = '\n\n',
  seed = 0,
  ...voteOptions
}: ScopeOptions = {}): BatchReward {
  return {
    scope: 'batch',
    scoreBatch(inputs) {
      const groups: { start: number; size: number; classes: number[] }[] = [];
      for (let start = 0; start < inputs.length;) {
        const size = Math.max(1, inputs[start]!.group.length);
        if (inputs[start]!.indexInGroup !== 0 || start + size > inputs.length)
          throw new Error(`reward "scope": the batch is not whole groups (sample ${start} opens no group)`);
        const members = inputs.slice(start, start + size).map((input) => input.completion);
        groups.push({ start, size, classes: answerClasses(members, voteOptions) });
        start += size;
      }
      if (groups.length === 0) return [];
      const confidences = new Map<number, number>();
      const confidence = (index: number) => {
        if (!confidences.has(index)) confidences.set(index, averageStepConfidence(inputs[index]!, stepSeparator));
        return confidences.get(index)!;
      };
      const random = seededRandom(seed * 1_000_003 + inputs[0]!.step);
      /** Each sample's label under subgroup size s (fresh draws each call, as the authors' `compute_conf_gt`). */
      const labelsFor = (s: number) =>
        groups.map(({ start, size, classes }) => {
          const votes = Math.min(size, votesPerSubgroup ?? Math.max(1, Math.floor(size / 2)));
          return Array.from({ length: size / s }, () => {
            const pool = Array.from({ length: size }, (_, j) => j);
            for (let k = 0; k < votes; k++) {
              const pick = k + Math.floor(random() * (size - k)); // partial Fisher–Yates: an ordered draw without replacement
              [pool[k], pool[pick]] = [pool[pick]!, pool[k]!];
            }
            return weightedVote(pool.slice(0, votes), classes, (j) => confidence(start + j));
          }).flatMap((label) => new Array<number>(s).fill(label));
        });
      const scoresFor = (labels: number[][]) =>
        groups.map(({ classes }, g) =>
          classes.map((answer, j): number => (answer >= 0 && answer === labels[g]![j] ? 1 : 0)),
        );
      const sizes = [1, 2, 4, 8, 16, 32, 64].filter((s) => groups.every(({ size }) => size % s === 0));
      const candidates = sizes.map((s) => {
        const labels = labelsFor(s);
        const scores = scoresFor(labels);
        const rate =
          scores.reduce((a, group) => a + group.reduce((x, y) => x + y, 0) / group.length, 0) / groups.length;
        const distinct = labels.reduce((a, group) => a + new Set(group).size * group.length, 0);
        return { size: s, rate, diversity: distinct / inputs.length };
      });
      return scoresFor(labelsFor(chooseSubgroupSize(candidates, lambda))).flat();
    },
  };
}
