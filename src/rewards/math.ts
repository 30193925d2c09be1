/**
 * Math answer-verification reward: extract the completion's final answer and compare it by value
 * with the gold answer in a dataset column (GSM8K `#### N`, MATH `\boxed{}` or a bare answer).
 *
 * The extraction and comparison live in `math/`; this file only wires them into a reward.
 */
import { extractFinalAnswer } from './math/extract.js';
import { answersMatch } from './math/verify.js';
import { stringColumn, type RewardFn } from './types.js';

export { extractBoxed, extractFinalAnswer, lastNumber } from './math/extract.js';
export { answersMatch, normaliseAnswer } from './math/verify.js';

/** The gold final answer in a dataset cell: a GSM8K solution's `#### N`, a `\boxed{}`, or the whole cell. */
export function goldAnswer(cell: string): string {
  const marked = /####\s*([^\n]+)\s*$/.exec(cell.trim());
  if (marked) return marked[1]!.trim();
  const extracted = extractFinalAnswer(cell);
  return extracted && extracted.source === 'boxed' ? extracted.answer : cell.trim();
}

/** True when the completion's final answer verifies against `gold`. */
export function verifyMathAnswer(completion: string, gold: string): boolean {
  const extracted = extractFinalAnswer(completion);
  return extracted !== null && answersMatch(extracted.answer, goldAnswer(gold));
}

/** Options of {@link mathAnswer}. */
export interface MathAnswerOptions {
  /** Dataset column holding the gold answer or a reference solution (default `answer`). */
  answerColumn?: string;
  /** Score for a correct answer (default 1). */
  correct?: number;
  /** Score for a wrong or missing answer (default 0). */
  wrong?: number;
}

/**
 * 1 when the completion's final answer (last `\boxed{}`, `#### N`, "the answer is", last number)
 * equals the row's gold answer by value, else 0.
 * @example
 * const reward = mathAnswer();
 * await reward(makeRewardInput({ completion: 'so \\boxed{\\frac{1}{2}}', row: { answer: '0.5' } })); // 1
 */
export function mathAnswer({ answerColumn = 'answer', correct = 1, wrong = 0 }: MathAnswerOptions = {}): RewardFn {
  return ({ completion, row }) => (verifyMathAnswer(completion, stringColumn(row, answerColumn, 'mathAnswer')) ? correct : wrong);
}
