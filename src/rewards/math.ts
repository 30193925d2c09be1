/**
 * Math answer-verification reward: extract the completion's final answer and compare it with the
 * gold answer in a dataset column (GSM8K `#### N`, MATH `\boxed{}`, a delimited `$…$` answer or a
 * bare one) with Math-Verify's semantics (its `tests/test_all.py` is `math/math-verify.test.ts`)
 * and its knobs: which extraction targets count, whether a box is required, the numeric precision
 * and whether a predicted inequality may equal a gold interval.
 *
 * The extraction and comparison live in `math/`; this file only wires them into a reward.
 */
import { extractFinalAnswer, type ExtractionTarget, type ExtractOptions } from './math/extract.js';
import { answersMatch, type VerifyOptions } from './math/verify.js';
import { stringColumn, type RewardFn } from './types.js';

export { extractBoxed, extractFinalAnswer, lastNumber, type ExtractionTarget } from './math/extract.js';
export { answersMatch, normaliseAnswer } from './math/verify.js';

/** Math delimiters or a box: a gold cell holding them is read like a completion (`$1/3$`, `\[\boxed{7}\]`). */
const DELIMITED = /(?<!\\)\$|\\\(|\\\[|\\boxed|\\fbox/;

/**
 * The gold final answer in a dataset cell: a GSM8K solution's `#### N`; a `\boxed{}`, "the answer is
 * X" or "Answer: X"; in a cell with math delimiters, the answer a completion's extraction finds
 * there (as Math-Verify parses gold and prediction alike, within `targets`); else the whole cell (a
 * bare gold answer, whose last number need not be the answer: "x^2 + 3"). Relations are kept
 * ("$x = 11$" is "x = 11").
 */
export function goldAnswer(cell: string, { targets }: Pick<ExtractOptions, 'targets'> = {}): string {
  const marked = /####\s*([^\n]+)\s*$/.exec(cell.trim());
  if (marked) return marked[1]!.trim();
  const explicit = extractFinalAnswer(cell, { targets: ['boxed', 'marker'] });
  if (explicit) return explicit.statement;
  const extracted = DELIMITED.test(cell) ? extractFinalAnswer(cell, { targets }) : null;
  return extracted ? extracted.statement : cell.trim();
}

/** True when the completion's final answer (found as `options` allow) verifies against `gold`. */
export function verifyMathAnswer(
  completion: string,
  gold: string,
  options: ExtractOptions & VerifyOptions = {},
): boolean {
  const extracted = extractFinalAnswer(completion, options);
  return extracted !== null && answersMatch(extracted.statement, goldAnswer(gold, options), options);
}

/** Options of {@link mathAnswer}. */
export interface MathAnswerOptions {
  /** Dataset column holding the gold answer or a reference solution (default `answer`). */
  answerColumn?: string;
  /** Score for a correct answer (default 1). */
  correct?: number;
  /** Score for a wrong or missing answer (default 0). */
  wrong?: number;
  /**
   * Where to look for the completion's answer (default all: `boxed`, `marker`, `latex`, `number`, in
   * that priority). Math-Verify's `LatexExtractionConfig` alone is `['boxed', 'marker', 'latex']`,
   * its `ExprExtractionConfig` alone `['marker', 'number']`; the gold cell, when delimited, is read the same way.
   */
  targets?: readonly ExtractionTarget[];
  /** Only a `\boxed{}` answer counts (default false), as open-r1's accuracy reward asks. */
  requireBoxed?: boolean;
  /** Significant digits a numeric comparison must match (default 6). */
  precision?: number;
  /** Whether 50% also equals 0.5 (default true; 50% always equals 50). */
  percentAsFraction?: boolean;
  /**
   * Whether a predicted inequality may equal a gold interval, `-2 \le x \le 7` for `[-2,7]` (default
   * false, Math-Verify's `allow_set_relation_comp`); a predicted interval always equals a gold inequality.
   */
  allowSetRelationComparison?: boolean;
}

/**
 * 1 when the completion's final answer (last `\boxed{}`, `#### N`, "the answer is", last LaTeX
 * span or number) equals the row's gold answer by value or symbolically, else 0.
 * @example
 * const reward = mathAnswer();
 * await reward(makeRewardInput({ completion: 'so \\boxed{\\frac{1}{2}}', row: { answer: '0.5' } })); // 1
 * const strict = mathAnswer({ requireBoxed: true, precision: 3 });
 * await strict(makeRewardInput({ completion: 'it is 3.1416', row: { answer: '\\pi' } })); // 0: no box
 * await strict(makeRewardInput({ completion: '\\boxed{3.1416}', row: { answer: '\\pi' } })); // 1: 3 significant digits
 */
export function mathAnswer({
  answerColumn = 'answer',
  correct = 1,
  wrong = 0,
  ...options
}: MathAnswerOptions = {}): RewardFn {
  return ({ completion, row }) =>
    verifyMathAnswer(completion, stringColumn(row, answerColumn, 'mathAnswer'), options) ? correct : wrong;
}
