/**
 * `grpo-lambda`: GRPO-λ's reward (Dai, Liu & Si 2025, "Stable Reinforcement Learning for Efficient
 * Reasoning", arXiv 2505.18086, papers.tsv 30). A step reward: it ranks the step's groups (one per
 * prompt) by their correctness ratio, and only the top λ fraction of them is trained for length:
 *
 *   top-λ groups:  r = 1 − α·σ((L − mean(L_correct)) / std(L_correct))  when correct, 0 when wrong
 *   other groups:  r = 1[correct]                                          (plain 0/1)
 *
 * with L a completion's length, mean and std over the group's correct completions and σ the
 * logistic sigmoid. These are the paper's §3 equations ("batch-wise top-λ selection", "dynamic
 * reward strategy adjustment"), read in a public translation of its method section; the authors'
 * code was not found. The choices the equations leave open follow that write-up's reference code:
 * the top ⌈λ·groups⌉ groups (at least one), ties kept in batch order (a stable sort), the std over
 * the correct lengths without Bessel's correction. One choice is ours: when that std is 0 (one correct
 * completion, or all of one length) the z-score is 0, so r = 1 − α/2 (their code divides by 1e-4,
 * which gives the same for one completion and 0/0 for equal lengths). λ = 0.2 is the paper's
 * example ("the top 20%"); α = 0.6 is that write-up's default, not read from the paper.
 *
 * Is not: the correctness check (the run's task check, or a reward by name) or GRPO's advantage,
 * which the run's estimator computes from these rewards as for any reward. The earlier
 * `length-among-correct` reward gated per group on a threshold, not on the batch ranking.
 */
import { z } from 'zod';
import { define, type RewardFactory } from './factory-registry.js';
import { completionLength } from './length.js';
import {
  namedReward,
  perCompletionColumns,
  perCompletionReward,
  type ColumnsOfReward,
  type CreateReward,
} from './named-reward.js';
import type { BatchReward, RewardFn, RewardInput } from './types.js';

/** One prompt's completions as GRPO-λ sees them: right or wrong, and how long. */
export interface GrpoLambdaGroup {
  correct: readonly boolean[];
  lengths: readonly number[];
}

/** Options of {@link grpoLambdaScores}: the top fraction λ and the length penalty α. */
export interface GrpoLambdaOptions {
  /** Fraction of the step's groups, those with the highest correctness ratio, that get the length penalty (default 0.2). */
  topFraction?: number;
  /** Length penalty coefficient α (default 0.6). */
  alpha?: number;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * GRPO-λ's rewards for every group of one step, in order.
 * @example
 * // two groups: the first (2/3 right) is the top 50%, its right answers of lengths 4 and 8 score
 * // 1 − 0.6·σ(∓1); the second (1/3 right) keeps plain 0/1
 * grpoLambdaScores([{ correct: [true, true, false], lengths: [4, 8, 5] },
 *                   { correct: [true, false, false], lengths: [9, 1, 1] }], { topFraction: 0.5 })
 * // → [[0.8387, 0.5613, 0], [1, 0, 0]]
 */
export function grpoLambdaScores(
  groups: readonly GrpoLambdaGroup[],
  { topFraction = 0.2, alpha = 0.6 }: GrpoLambdaOptions = {},
): number[][] {
  if (!(topFraction > 0 && topFraction <= 1))
    throw new Error(`reward "grpo-lambda": topFraction must be in (0, 1], got ${topFraction}`);
  const ratio = (group: GrpoLambdaGroup) =>
    group.correct.length === 0 ? 0 : group.correct.filter(Boolean).length / group.correct.length;
  // Array.prototype.sort is stable: groups of equal ratio keep their batch order, as Python's sorted().
  const ranked = groups.map((group, index) => ({ index, ratio: ratio(group) })).sort((a, b) => b.ratio - a.ratio);
  const top = new Set(ranked.slice(0, Math.max(1, Math.ceil(groups.length * topFraction))).map(({ index }) => index));
  return groups.map((group, index) => {
    if (!top.has(index)) return group.correct.map((ok) => (ok ? 1 : 0));
    const correctLengths = group.lengths.filter((_, position) => group.correct[position]);
    const mean = correctLengths.reduce((sum, length) => sum + length, 0) / Math.max(1, correctLengths.length);
    const std = Math.sqrt(
      correctLengths.reduce((sum, length) => sum + (length - mean) ** 2, 0) / Math.max(1, correctLengths.length),
    );
    return group.correct.map((ok, position) =>
      ok ? 1 - alpha * sigmoid(std === 0 ? 0 : (group.lengths[position]! - mean) / std) : 0,
    );
  });
}

/** The step's groups in the runner's order: contiguous, each opening at `indexInGroup` 0. */
function groupSpans(inputs: readonly RewardInput[]): Array<{ start: number; size: number }> {
  const spans: Array<{ start: number; size: number }> = [];
  for (let start = 0; start < inputs.length;) {
    const size = Math.max(1, inputs[start]!.group.length);
    if (inputs[start]!.indexInGroup !== 0 || start + size > inputs.length)
      throw new Error(`reward "grpo-lambda": the batch is not whole groups (sample ${start} opens no group)`);
    spans.push({ start, size });
    start += size;
  }
  return spans;
}

/**
 * GRPO-λ as a step reward: `correctness` ≥ 0.5 counts as right; lengths in tokens (or characters).
 * @example grpoLambda({ correctness: mathAnswer(), topFraction: 0.2, alpha: 0.6 })
 */
export function grpoLambda({
  correctness,
  unit = 'tokens',
  ...options
}: GrpoLambdaOptions & { correctness: RewardFn; unit?: 'tokens' | 'characters' }): BatchReward {
  return {
    scope: 'batch',
    async scoreBatch(inputs, signal) {
      const correct = await Promise.all(
        inputs.map(async (input) => ((await correctness({ ...input, signal })) ?? 0) >= 0.5),
      );
      const lengths = inputs.map((input) => completionLength(input, unit, 'reward "grpo-lambda"'));
      const spans = groupSpans(inputs);
      const groups = spans.map(({ start, size }) => ({
        correct: correct.slice(start, start + size),
        lengths: lengths.slice(start, start + size),
      }));
      return grpoLambdaScores(groups, options).flat();
    },
  };
}

/** The registry entry; `correctness` by name is built with `createReward` (default: the run's task check, else math-answer). */
export function grpoLambdaFactory(createReward: CreateReward, columnsOfReward: ColumnsOfReward): RewardFactory {
  const name = 'grpo-lambda';
  return define(
    name,
    "step: the top λ fraction of the step's groups by correctness ratio score 1 − α·σ(z-scored length among the group's right answers) when right, 0 when wrong; the other groups plain 0/1",
    'GRPO-λ, Dai, Liu & Si 2025, arXiv 2505.18086 §3 (batch-wise top-λ selection); papers.tsv 30',
    z
      .object({
        correctness: namedReward.optional(),
        topFraction: z.number().gt(0).max(1).optional(),
        alpha: z.number().finite().optional(),
        unit: z.enum(['tokens', 'characters']).optional(),
      })
      .strict(),
    ({ correctness, ...rest }, context) =>
      grpoLambda({
        correctness: perCompletionReward(createReward, name, 'correctness', correctness, context),
        ...rest,
      }),
    ({ correctness }, context) => perCompletionColumns(columnsOfReward, 'correctness', correctness, context),
  );
}
