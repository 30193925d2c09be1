/**
 * A GRPO step's batch, flat and column-per-field: groups stored contiguously, one row per sample.
 * A generation round (rollout → reward matrix → combined reward) makes one; the refill loop keeps
 * index selections of each round's groups; `concatenateGroups` builds the step's batch from those
 * selections once. Everything after (advantages, masks, training rows) reads these columns.
 *
 * Is not: the choice of prompts (grpo-step.ts choosePrompts), advantages (step-signal.ts) or the optimiser.
 */
import type { RewardInput, NamedReward } from '../rewards/types.js';
import { weightedSum, weightsAt } from '../rewards/combine.js';
import type { RewardScorer } from '../rewards/run.js';
import type { Example } from '../data/task.js';
import type {
  RolloutContext,
  RolloutFn,
  RolloutPrompt,
  RolloutRow,
  RolloutSample,
  RolloutSettings,
} from '../rollout/rollout.js';

export interface StepBatch {
  /** [groups] the prompt of each group. */
  prompts: RolloutPrompt[];
  /** [groups] samples per group (ragged when a prompt selector varies them). */
  groupSizes: number[];
  /** [N] the samples, groups contiguous in prompt order. */
  samples: RolloutSample[];
  /** [K] reward names, the columns of `scores`. */
  rewardNames: readonly string[];
  /** [N·K] row-major per-reward scores; NaN = not applicable or failed. */
  scores: Float64Array;
  /** [K] reward weights at this step. */
  rewardWeights: number[];
  /** [N] combined reward Σ_k w_k r_k; NaN where a weighted reward failed. */
  rewards: Float64Array;
  /** [N] 0 where a weighted reward threw or timed out (the sample leaves the loss). */
  valid: Uint8Array;
  /** Reward calls that failed, per reward name. */
  failures: Record<string, number>;
  /** [N] the failed rewards' messages of each sample (reward name → message), or null. */
  errors: (Record<string, string> | null)[];
}

/**
 * Rolls out `prompts` (prompt i gets `counts[i]` samples; one rollout call per distinct count, so
 * every call keeps the RolloutFn contract of equal groups) and scores the samples.
 */
export async function generateRound(
  rollout: RolloutFn,
  context: RolloutContext,
  prompts: readonly RolloutPrompt[],
  counts: readonly number[],
  settings: RolloutSettings,
  rewards: readonly NamedReward[],
  scoreRewards: RewardScorer,
  step: number,
  /** RewardInput.policyLogprobsAfter for a row (absent: rewards get none). */
  scoreAfter?: (example: Example, prompt: RewardInput['prompt'], completionIds: readonly number[]) => Promise<number[]>,
): Promise<{ batch: StepBatch; rolloutSeconds: number; rewardSeconds: number }> {
  const rolloutStart = Date.now();
  // Each call's samples go straight to their group's rows: groups contiguous, in prompt order.
  const starts = groupStarts(counts);
  const samples: RolloutSample[] = new Array(
    starts.length > 0 ? starts[starts.length - 1] + counts[counts.length - 1] : 0,
  );
  for (const count of [...new Set(counts)].sort((a, b) => a - b)) {
    const members = prompts.flatMap((_, i) => (counts[i] === count ? [i] : []));
    const returned = await rollout(
      context,
      members.map((i) => prompts[i]),
      { ...settings, groupSize: count, step },
    );
    if (returned.length !== members.length * count)
      throw new Error(
        `the rollout returned ${returned.length} samples for ${members.length} prompts × ${count}; a RolloutFn must return groupSize samples per prompt`,
      );
    members.forEach((promptIndex, k) => {
      for (let j = 0; j < count; j++) samples[starts[promptIndex] + j] = { ...returned[k * count + j], promptIndex };
    });
  }
  const rolloutSeconds = (Date.now() - rolloutStart) / 1000;
  const rewardStart = Date.now();
  const groups: RewardInput[][] = prompts.map((prompt, g) => {
    const members = samples.slice(starts[g], starts[g] + counts[g]);
    const texts = members.map((member) => member.text);
    const tokenTexts: (string[] | undefined)[] = [];
    return members.map((sample, indexInGroup) => ({
      prompt: prompt.example.prompt,
      completion: sample.text,
      completionIds: sample.completionIds,
      row: prompt.example,
      group: texts,
      indexInGroup,
      step,
      truncated: sample.truncated,
      episode: sample.episode,
      // what the sampler saw; tokens the policy did not produce (tool output, lossMask 0) have none
      policyLogprobs: sample.oldLogprobs.map((logprob, t) => (sample.lossMask[t] ? logprob : Number.NaN)),
      policyLogprobsAfter: scoreAfter
        ? (other: RewardInput['prompt'], ids: readonly number[] = sample.completionIds) =>
            scoreAfter(prompt.example, other, ids)
        : undefined,
      // decoded only when a reward reads it (scope), once
      get completionTokenTexts() {
        return (tokenTexts[indexInGroup] ??= sample.completionIds.map((id) => context.tokenizer.decode([id])));
      },
    }));
  });
  const matrix = await scoreRewards(groups);
  const rewardWeights = weightsAt(rewards, step);
  const combined = weightedSum(matrix, rewardWeights);
  const failures: Record<string, number> = Object.fromEntries(matrix.names.map((name) => [name, 0]));
  const errors: (Record<string, string> | null)[] = new Array(matrix.sampleCount).fill(null);
  for (const failure of matrix.failures) {
    failures[failure.reward]++;
    errors[failure.sample] = { ...errors[failure.sample], [failure.reward]: failure.message };
  }
  const batch: StepBatch = {
    prompts: [...prompts],
    groupSizes: [...counts],
    samples,
    rewardNames: matrix.names,
    scores: matrix.scores,
    rewardWeights,
    rewards: combined.rewards,
    valid: Uint8Array.from(combined.valid, Number),
    failures,
    errors,
  };
  return { batch, rolloutSeconds, rewardSeconds: (Date.now() - rewardStart) / 1000 };
}

/**
 * The trained rows of sample i: the sample itself (its prompt ids, or the group's prompt) and, for
 * an episode the template split, its continuation rows — all with the sample's advantage.
 */
export function sampleRows(batch: StepBatch, i: number): RolloutRow[] {
  const sample = batch.samples[i];
  const first: RolloutRow = {
    promptIds: sample.promptIds ?? batch.prompts[sample.promptIndex].promptIds,
    completionIds: sample.completionIds,
    oldLogprobs: sample.oldLogprobs,
    lossMask: sample.lossMask,
    tokenTurns: sample.tokenTurns,
  };
  return sample.continuationRows ? [first, ...sample.continuationRows] : [first];
}

/** [N] index of each sample's group. */
export function groupIndexOf(groupSizes: readonly number[]): Int32Array {
  const out = new Int32Array(groupSizes.reduce((a, b) => a + b, 0));
  let offset = 0;
  groupSizes.forEach((size, g) => {
    out.fill(g, offset, offset + size);
    offset += size;
  });
  return out;
}

/** [groups] index of each group's first sample. */
export function groupStarts(groupSizes: readonly number[]): number[] {
  const starts: number[] = [];
  let offset = 0;
  for (const size of groupSizes) {
    starts.push(offset);
    offset += size;
  }
  return starts;
}

/**
 * The step's batch from the kept groups of each round (one copy, in round then group order; none
 * when a single round keeps every group in order, the common case, as a round's batch already is one).
 */
export function concatenateGroups(
  selections: readonly { batch: StepBatch; groupIndices: readonly number[] }[],
): StepBatch {
  if (selections.length === 0) throw new Error('concatenateGroups needs at least one selection');
  const first = selections[0].batch;
  const whole = (s: (typeof selections)[number]) =>
    s.groupIndices.length === s.batch.prompts.length && s.groupIndices.every((g, k) => g === k);
  if (selections.length === 1 && whole(selections[0])) return first;
  const K = first.rewardNames.length;
  const prompts: RolloutPrompt[] = [];
  const groupSizes: number[] = [];
  const rows: { batch: StepBatch; index: number; group: number }[] = [];
  const failures: Record<string, number> = Object.fromEntries(first.rewardNames.map((name) => [name, 0]));
  for (const { batch, groupIndices } of selections) {
    const starts = groupStarts(batch.groupSizes);
    for (const name of batch.rewardNames) failures[name] += batch.failures[name];
    for (const g of groupIndices) {
      const group = prompts.length;
      prompts.push(batch.prompts[g]);
      groupSizes.push(batch.groupSizes[g]);
      for (let i = starts[g]; i < starts[g] + batch.groupSizes[g]; i++) rows.push({ batch, index: i, group });
    }
  }
  const scores = new Float64Array(rows.length * K);
  rows.forEach(({ batch, index }, row) => scores.set(batch.scores.subarray(index * K, (index + 1) * K), row * K));
  return {
    prompts,
    groupSizes,
    // promptIndex is renumbered to the group in this batch: it indexes `prompts` (the trained row's prompt)
    samples: rows.map(({ batch, index, group }) => ({ ...batch.samples[index], promptIndex: group })),
    rewardNames: first.rewardNames,
    scores,
    rewardWeights: first.rewardWeights,
    rewards: Float64Array.from(rows, ({ batch, index }) => batch.rewards[index]),
    valid: Uint8Array.from(rows, ({ batch, index }) => batch.valid[index]),
    failures,
    errors: rows.map(({ batch, index }) => batch.errors[index]),
  };
}

/** [K][N] per-reward columns with NaN as null (the estimators' `rewardComponents`). */
export function rewardColumns(batch: StepBatch): (number | null)[][] {
  const K = batch.rewardNames.length;
  return batch.rewardNames.map((_, k) =>
    batch.samples.map((_, i) => {
      const value = batch.scores[i * K + k];
      return Number.isFinite(value) ? value : null;
    }),
  );
}

/** The combined rewards with failed samples as null. */
export function scoredRewards(rewards: Float64Array): (number | null)[] {
  return Array.from(rewards, (value) => (Number.isFinite(value) ? value : null));
}
