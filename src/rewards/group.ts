/**
 * Group rewards: the ones that need every completion of a prompt at once. Pairwise win-rate
 * (Pref-GRPO), length shaping among correct peers (GRPO-λ), and the Trust-GRPO / Posterior-GRPO
 * process-reward combinators wrapped as group rewards (their maths is in `combine.ts`).
 *
 * Not here: per-completion rewards, or combination of reward columns (`combine.ts`).
 */
import { outcomeGatedProcessReward, trustWeightedProcessReward, type TrustWeightOptions } from './combine.js';
import { completionLength, type LengthUnit } from './length.js';
import { groupReward, type GroupReward, type RewardFn, type RewardInput } from './types.js';

/**
 * Pref-GRPO pairwise win-rate (ALGORITHMS.md §5.10): r_i = (1/(G−1)) Σ_{j≠i} 1[o_i ≻ o_j], with the
 * preference judged by `prefers(a, b)` (true when a beats b). A group of one scores `null`.
 * @example pairwiseWinRate({ prefers: (a, b) => a.completion.length > b.completion.length })
 */
export function pairwiseWinRate({
  prefers,
}: {
  prefers: (a: RewardInput, b: RewardInput) => boolean | Promise<boolean>;
}): GroupReward {
  return groupReward(async (inputs) => {
    if (inputs.length < 2) return inputs.map(() => null);
    const wins = new Array<number>(inputs.length).fill(0);
    for (let i = 0; i < inputs.length; i++) {
      for (let j = 0; j < inputs.length; j++) if (i !== j && (await prefers(inputs[i]!, inputs[j]!))) wins[i]!++;
    }
    return wins.map((count) => count / (inputs.length - 1));
  });
}

/** Options of {@link lengthAmongCorrect}. */
export interface LengthAmongCorrectOptions {
  /** The correctness reward; a score ≥ 0.5 counts as correct. */
  correctness: RewardFn;
  /** Strength α of the length term (default 0.2). */
  alpha?: number;
  /** Correct fraction τ of the group needed before length shaping starts (default 0.5). */
  minCorrectFraction?: number;
  unit?: LengthUnit;
}

/**
 * GRPO-λ (ALGORITHMS.md §5.5, inferred from the abstract): when at least τ of the group is correct,
 * r = 1[correct]·(1 − α·ℓ) with ℓ the length min-max normalised among the correct completions
 * (shortest 0, longest 1); otherwise plain 0/1 correctness.
 * @example lengthAmongCorrect({ correctness: mathAnswer(), alpha: 0.2 })
 */
export function lengthAmongCorrect({
  correctness,
  alpha = 0.2,
  minCorrectFraction = 0.5,
  unit = 'tokens',
}: LengthAmongCorrectOptions): GroupReward {
  return groupReward(async (inputs) => {
    const correct = await Promise.all(inputs.map(async (input) => ((await correctness(input)) ?? 0) >= 0.5));
    const fraction = correct.filter(Boolean).length / inputs.length;
    if (fraction < minCorrectFraction) return correct.map((ok) => (ok ? 1 : 0));
    const lengths = inputs.map((input) => completionLength(input, unit, 'lengthAmongCorrect'));
    const correctLengths = lengths.filter((_, index) => correct[index]);
    const shortest = Math.min(...correctLengths);
    const span = Math.max(...correctLengths) - shortest;
    return correct.map((ok, index) => (ok ? 1 - alpha * (span === 0 ? 0 : (lengths[index]! - shortest) / span) : 0));
  });
}

/** Scores a group with a per-completion reward, treating `null` as 0 (for the process-reward combinators). */
async function scoreAll(reward: RewardFn, inputs: readonly RewardInput[], signal?: AbortSignal): Promise<number[]> {
  return Promise.all(inputs.map(async (input) => (await reward({ ...input, signal })) ?? 0));
}

/**
 * Trust-GRPO as a group reward (ALGORITHMS.md §5.6): R = r_o + γ·α·exp(−step/T)·r_t, where
 * `outcome` gives r_o and `thinking` (a process / thinking reward model) gives r_t ∈ [0, 1].
 * @example trustWeighted({ outcome: mathAnswer(), thinking: llmJudge({ rubric: 'Is the reasoning sound?' }) })
 */
export function trustWeighted({
  outcome,
  thinking,
  ...options
}: { outcome: RewardFn; thinking: RewardFn } & TrustWeightOptions): GroupReward {
  return groupReward(async (inputs, signal) => {
    const [outcomes, thoughts] = await Promise.all([
      scoreAll(outcome, inputs, signal),
      scoreAll(thinking, inputs, signal),
    ]);
    return Array.from(trustWeightedProcessReward(outcomes, thoughts, inputs[0]?.step ?? 0, options));
  });
}

/**
 * Posterior-GRPO as a group reward (ALGORITHMS.md §5.7): R = r_o + λ·r_p·1[r_o = 1].
 * @example outcomeGated({ outcome: mathAnswer(), process: llmJudge({ mode: 'yes-no' }), lambda: 0.5 })
 */
export function outcomeGated({
  outcome,
  process,
  lambda = 0.5,
}: {
  outcome: RewardFn;
  process: RewardFn;
  lambda?: number;
}): GroupReward {
  return groupReward(async (inputs, signal) => {
    const outcomes = await scoreAll(outcome, inputs, signal);
    // the process reward is only needed (and only paid for) where the outcome is a success
    const processes = await Promise.all(
      inputs.map(async (input, index) => (outcomes[index] === 1 ? ((await process({ ...input, signal })) ?? 0) : 0)),
    );
    return Array.from(outcomeGatedProcessReward(outcomes, processes, lambda));
  });
}
