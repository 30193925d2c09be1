/**
 * `numeric-answer`: the answer's final number equals the row's within a tolerance — ChartQA's "relaxed
 * accuracy" (Masry et al. 2022: 5% relative tolerance) for chart, measurement and VQA answers where an
 * exact string match would punish "12.0" against "12" or "1,204" against 1204.
 *
 * Is: number parsing (signs, decimals, thousands commas, exponents, a/b fractions; a trailing % is read as
 * the number before it) and the tolerance test. Is not: symbolic maths (`math-answer`) nor counting words
 * (`count-answer`).
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

const numberPattern =
  /[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:\s*\/\s*\d+(?:\.\d+)?)?/g;

/** A number's text as matched above → its value ("1,204" → 1204, "3/4" → 0.75); null for "x/0". */
function valueOf(text: string): number | null {
  const [numerator, denominator] = text.replace(/,/g, '').split('/');
  const value = Number(numerator) / (denominator === undefined ? 1 : Number(denominator));
  return Number.isFinite(value) ? value : null;
}

/** The final number of `text` (inside its last `<answer>` when there is one), or null. */
export function extractFinalNumber(text: string): number | null {
  const matches = [...(tagContent(text, 'answer') ?? text).matchAll(numberPattern)];
  return matches.length > 0 ? valueOf(matches[matches.length - 1]![0]) : null;
}

/** Options of {@link numericAnswer}. */
export interface NumericAnswerOptions {
  /** Column with the gold number (a number, or text holding one; default `answer`). */
  answerColumn?: string;
  /** Relative tolerance r: correct when |p − g| ≤ r·|g| (default 0.05, ChartQA's relaxed accuracy). */
  relativeTolerance?: number;
  /** Absolute tolerance a, for golds near 0 (default 0): correct when |p − g| ≤ max(a, r·|g|). */
  absoluteTolerance?: number;
}

/**
 * 1 when the completion's final number p is within max(a, r·|g|) of the row's number g, else 0 (no number: 0).
 * @example numericAnswer()(makeRewardInput({ completion: '<answer>about 10.4</answer>', row: { answer: 10 } })) // 1
 */
export function numericAnswer({
  answerColumn = 'answer',
  relativeTolerance = 0.05,
  absoluteTolerance = 0,
}: NumericAnswerOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const cell = row[answerColumn];
    const gold = typeof cell === 'number' ? cell : typeof cell === 'string' ? extractFinalNumber(cell) : null;
    if (gold === null || !Number.isFinite(gold))
      throw new Error(`numeric-answer: column "${answerColumn}" must hold a number, got ${JSON.stringify(cell)}`);
    const predicted = extractFinalNumber(completion);
    if (predicted === null) return 0;
    return Math.abs(predicted - gold) <= Math.max(absoluteTolerance, relativeTolerance * Math.abs(gold)) ? 1 : 0;
  };
}

export const numericAnswerFactory = define(
  'numeric-answer',
  "the answer's final number (commas, exponents, a/b allowed; <answer> first) is within max(absoluteTolerance, relativeTolerance·|gold|) of the row's: 1/0",
  'ChartQA relaxed accuracy (Masry et al. 2022, 5% relative tolerance)',
  z
    .object({
      answerColumn: z.string().min(1).optional(),
      relativeTolerance: z.number().min(0).optional(),
      absoluteTolerance: z.number().min(0).optional(),
    })
    .strict(),
  numericAnswer,
  { answerColumn: 'answer' },
);
