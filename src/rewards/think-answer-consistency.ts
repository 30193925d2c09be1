/**
 * `think-answer-consistency`: 1 when the reasoning's own conclusion — the last value of the answer's kind
 * written inside `<think>` — agrees with the `<answer>`, else 0; with a correctness reward named, the
 * product of the two, so only an answer that is both right and the one the reasoning reached scores.
 * The idea of TACO's Think-Answer Consistency (Kan et al. 2025, arXiv 2505.20777: the reward ties the
 * reasoning, the answer and the ground truth together) for answers a rule can compare: numbers, boxes
 * (IoU ≥ iouThreshold) and option letters.
 *
 * Is not: TACO's exact TAC formula (the paper's text was not reachable here; this is our rule-based
 * form), nor its Rollback Resample, adaptive difficulty sampling or test-time resolution scaling.
 */
import { z } from 'zod';
import { define, type RewardFactory } from './factory-registry.js';
import { tagContent } from './format.js';
import { extractFinalNumber } from './numeric-answer.js';
import { isGroupReward, type Reward, type RewardColumn, type RewardFn } from './types.js';
import { boxIntersectionOverUnion, extractBox } from './visual.js';

/** What the think's conclusion and the answer are compared as. */
export type ConsistencyKind = 'number' | 'box' | 'choice';

/** The last option letter written as a choice ("(B)", "B.", "answer is B", a lone "B"), or null. */
function lastChoice(text: string): string | null {
  const matches = [
    ...text.matchAll(/\(([A-J])\)|\b([A-J])\b(?=[.):]|\s*$)|(?:answer|option|choice) is\s*\(?([A-J])\b/g),
  ];
  const last = matches[matches.length - 1];
  return last ? (last[1] ?? last[2] ?? last[3] ?? null) : null;
}

/** Options of {@link thinkAnswerConsistency}. */
export interface ThinkAnswerConsistencyOptions {
  kind?: ConsistencyKind;
  /** kind box: the think's last box and the answer's agree when their IoU ≥ this (default 0.9). */
  iouThreshold?: number;
  /** When given, the reward is consistency × this correctness (null counts as 0). */
  correctness?: RewardFn;
}

/**
 * 1 when the last number / box / option letter in `<think>` equals the `<answer>`'s (numbers exactly,
 * boxes by IoU ≥ iouThreshold), else 0 — also 0 without both tags or without a value in either;
 * times `correctness` when given.
 * @example thinkAnswerConsistency()(makeRewardInput({ completion: '<think>3 + 4 = 7</think><answer>7</answer>' })) // 1
 */
export function thinkAnswerConsistency({
  kind = 'number',
  iouThreshold = 0.9,
  correctness,
}: ThinkAnswerConsistencyOptions = {}): RewardFn {
  if (!(iouThreshold > 0 && iouThreshold <= 1))
    throw new Error(`think-answer-consistency: iouThreshold must be in (0, 1], got ${iouThreshold}`);
  const consistent = (think: string, answer: string): boolean => {
    if (kind === 'number') {
      const [a, b] = [extractFinalNumber(think), extractFinalNumber(answer)];
      return a !== null && a === b;
    }
    if (kind === 'box') {
      const [a, b] = [extractBox(think), extractBox(answer)];
      return a !== null && b !== null && boxIntersectionOverUnion(a, b) >= iouThreshold;
    }
    const [a, b] = [lastChoice(think), lastChoice(answer)];
    return a !== null && a === b;
  };
  return async (input) => {
    const think = tagContent(input.completion, 'think');
    const answer = tagContent(input.completion, 'answer');
    if (think === null || answer === null || !consistent(think, answer)) return 0;
    return correctness ? ((await correctness(input)) ?? 0) : 1;
  };
}

/**
 * The registry entry; `correctness` by name is built with `createReward` and its columns are
 * `columnsOfReward`'s (both passed in, so this file does not import the registry).
 */
export function thinkAnswerConsistencyFactory(
  createReward: (name: string, options?: unknown) => Reward,
  columnsOfReward: (name: string, options?: unknown) => RewardColumn[],
): RewardFactory {
  return define(
    'think-answer-consistency',
    "1 when the last number / box / option letter in <think> agrees with the <answer>'s, else 0; times a correctness reward by name when given",
    "TACO's Think-Answer Consistency (Kan et al. 2025, arXiv 2505.20777), rule-based form (ours)",
    z
      .object({
        kind: z.enum(['number', 'box', 'choice']).optional(),
        iouThreshold: z.number().gt(0).max(1).optional(),
        correctness: z
          .object({ name: z.string(), options: z.record(z.string(), z.unknown()).optional() })
          .strict()
          .optional(),
      })
      .strict(),
    ({ correctness, ...rest }) => {
      if (!correctness) return thinkAnswerConsistency(rest);
      const reward = createReward(correctness.name, correctness.options);
      if (isGroupReward(reward))
        throw new Error(
          `reward "think-answer-consistency": correctness "${correctness.name}" is a group reward; it must score one completion`,
        );
      return thinkAnswerConsistency({ ...rest, correctness: reward });
    },
    ({ correctness }) =>
      (correctness ? columnsOfReward(correctness.name, correctness.options) : []).map(({ column, option }) => ({
        column,
        option: `correctness "${correctness!.name}"'s ${option ?? 'column'}`,
      })),
  );
}
