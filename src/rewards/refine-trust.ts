/**
 * `refine-trust`: ReFIne's GRPO reward (Sun, Yan, Kulkarni & Weng 2025, arXiv 2510.09062, papers.tsv
 * 235), exact to the authors' `reward_fn` (Trustworthy-ML-Lab/Training_Trustworthy_LRM_with_Refine
 * `train/grpo_ReFIne.py`): the mean of four terms that train a reasoning model to be right
 * (reliability), to keep the structured format (interpretability), to refer back to its own
 * sections while thinking (faithfulness), and to state a calibrated confidence.
 *
 *   r = (correct + structure + references + confidence) / 4
 *   structure  = 1 when <understanding> <facts> <plan> <think> <final_answer> <self_assessment>
 *                open and close in that order, else 0
 *   references = 1/3 for each of "<understanding>", "<facts>", "<plan>" written inside the first
 *                <think> block (case-insensitive)
 *   confidence = 1 − (p − correct)² with p = min(1, n/10) from the first "Confidence: n/10"
 *                (n one or two digits); without one, p = 0.5 and a −1 penalty
 *
 * Is not: ReFIne's SFT stage (the structured traces it trains on first) or its evaluation. The
 * correctness check is this library's (the run's task check, or a reward by name), where the
 * authors take the last \boxed{} (else the last number) and compare it with math_verify.
 */
import { z } from 'zod';
import { define, type RewardFactory } from './factory-registry.js';
import {
  namedReward,
  perCompletionColumns,
  perCompletionReward,
  type ColumnsOfReward,
  type CreateReward,
} from './named-reward.js';
import type { RewardFn } from './types.js';

/** The tags ReFIne's answer format opens and closes, in order. */
const sectionTags = ['understanding', 'facts', 'plan', 'think', 'final_answer', 'self_assessment'];
/** The sections a faithful <think> block refers back to. */
const referencedTags = ['<understanding>', '<facts>', '<plan>'];

/** 1 when every section tag opens then closes, each found after the previous one, else 0. */
export function refineStructure(text: string): number {
  let position = 0;
  for (const tag of sectionTags.flatMap((name) => [`<${name}>`, `</${name}>`])) {
    const index = text.indexOf(tag, position);
    if (index < 0) return 0;
    position = index + tag.length;
  }
  return 1;
}

/** 1/3 per earlier section tag written inside the first <think> block (lower-cased, as the authors'). */
export function refineReferences(text: string): number {
  const lower = text.toLowerCase();
  if (!lower.includes('<think>') || !lower.includes('</think>')) return 0;
  // The authors' split("<think>", 1)[1].split("</think>", 1)[0]: from the first <think> to the first </think> after it.
  const afterThink = lower.slice(lower.indexOf('<think>') + '<think>'.length);
  const closing = afterThink.indexOf('</think>');
  const body = closing < 0 ? afterThink : afterThink.slice(0, closing);
  return referencedTags.filter((tag) => body.includes(tag)).length / 3;
}

/** The confidence term: normalised Brier score 1 − (p − correct)² plus −1 when no "Confidence: n/10" is written. */
export function refineConfidence(text: string, correct: number): number {
  const match = /Confidence:\s*(\d{1,2})\/10/.exec(text);
  const probability = Math.max(0, Math.min((match ? Number(match[1]) : 5) / 10, 1));
  return 1 - (probability - correct) ** 2 + (match ? 0 : -1);
}

/**
 * ReFIne's reward for one completion, in [−0.0625, 1]; `correctness` ≥ 0.5 counts as right (the
 * authors' correctness is 1/0).
 * @example refineTrust({ correctness: mathAnswer() })
 */
export function refineTrust({ correctness }: { correctness: RewardFn }): RewardFn {
  return async (input) => {
    const correct = ((await correctness(input)) ?? 0) >= 0.5 ? 1 : 0;
    const text = input.completion;
    return (correct + refineStructure(text) + refineReferences(text) + refineConfidence(text, correct)) / 4;
  };
}

/** The registry entry; `correctness` by name is built with `createReward`, its columns are `columnsOfReward`'s. */
export function refineTrustFactory(createReward: CreateReward, columnsOfReward: ColumnsOfReward): RewardFactory {
  const name = 'refine-trust';
  return define(
    name,
    "ReFIne's trustworthy-reasoning reward: mean of correct, section structure, <think> references to <understanding>/<facts>/<plan>, and Brier-scored 'Confidence: n/10' (−1 when missing), in [−0.0625, 1]",
    'ReFIne (Sun et al. 2025, arXiv 2510.09062) reward_fn, github.com/Trustworthy-ML-Lab/Training_Trustworthy_LRM_with_Refine train/grpo_ReFIne.py',
    z.object({ correctness: namedReward.optional() }).strict(),
    ({ correctness }, context) =>
      refineTrust({ correctness: perCompletionReward(createReward, name, 'correctness', correctness, context) }),
    ({ correctness }, context) => perCompletionColumns(columnsOfReward, 'correctness', correctness, context),
  );
}
