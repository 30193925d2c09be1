/**
 * `cerm`: BigCharts-R1's continuous error-magnitude reward (Masry et al. 2025, arXiv 2508.09804) for
 * chart answers: a numeric answer p against the truth t scores 1 / (1 + |p − t| / |t|), so a near
 * miss earns part of the reward where an exact match gives 0; a text answer scores 1 on a
 * case-insensitive match. Exact to `error_magnitude_reward` and
 * `relaxed_correctness_magnitude_no_clipping` in the authors' grpo_bigcharts.py (ServiceNow/BigCharts-R1).
 *
 * Is: the answer extraction, Python `float()` parsing (ASCII) and the score. Is not: the 5% relaxed
 * accuracy of ChartQA (`numeric-answer`), nor the format reward (recipes/papers/bigcharts-r1.ts).
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import type { RewardFn } from './types.js';

const digits = String.raw`\d(?:_?\d)*`;
const floatLiteral = new RegExp(
  String.raw`^[+-]?(?:${digits}(?:\.(?:${digits})?)?|\.${digits})(?:[eE][+-]?${digits})?$`,
);

/**
 * Python's `float(text)`: surrounding whitespace, a sign, digits with single `_` between them, an
 * optional fraction and exponent, or inf / infinity / nan in any case; else null (their ValueError).
 */
export function pythonFloat(text: string): number | null {
  const body = text.trim();
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(body);
  if (special) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  return floatLiteral.test(body) ? Number(body.replaceAll('_', '')) : null;
}

/** The code's `_to_float`: Python `float()`, a trailing `%` (all of them stripped) dividing by 100. */
export function percentFloat(text: string): number | null {
  if (!text.endsWith('%')) return pythonFloat(text);
  const value = pythonFloat(text.replace(/%+$/, ''));
  return value === null ? null : value / 100;
}

/** `relaxed_correctness_magnitude_no_clipping(target, prediction)`: a score in [0, 1] (NaN for NaN input). */
export function errorMagnitudeScore(target: string, prediction: string): number {
  const predicted = percentFloat(prediction);
  const truth = percentFloat(target);
  if (predicted !== null && truth !== null) {
    if (truth === 0) return predicted === 0 ? 1 : 0;
    return 1 / (1 + Math.abs(predicted - truth) / Math.abs(truth));
  }
  return prediction.trim().toLowerCase() === target.trim().toLowerCase() ? 1 : 0;
}

/**
 * `error_magnitude_reward` for one completion: the first `<answer>…</answer>` on one line (any case;
 * Python's `.` stops only at \n), stripped, scored against `truth`; no answer, NaN or infinity → 0.
 */
export function cermScore(completion: string, truth: string): number {
  const answer = /<answer>([^\n]*?)<\/answer>/i.exec(completion)?.[1].trim();
  if (answer === undefined) return 0;
  const score = errorMagnitudeScore(truth, answer);
  return Number.isFinite(score) ? score : 0;
}

/**
 * BigCharts-R1's CERM against the row's `answerColumn` (a number or its text, as in their data).
 * @example cerm()(makeRewardInput({ completion: '<thinking>…</thinking> <answer>8</answer>', row: { answer: '10' } })) // 0.833…
 */
export function cerm({ answerColumn = 'answer' }: { answerColumn?: string } = {}): RewardFn {
  return ({ completion, row }) => {
    const cell = row[answerColumn];
    if (typeof cell !== 'string' && typeof cell !== 'number')
      throw new Error(
        `cerm: column "${answerColumn}" must hold the answer text or number, got ${JSON.stringify(cell)}`,
      );
    return cermScore(completion, String(cell));
  };
}

export const cermFactory = define(
  'cerm',
  'the first one-line <answer>: 1 / (1 + |p − t| / |t|) for numbers (Python float, a trailing % / 100; truth 0: only 0 scores), else 1 for a case-insensitive text match; no answer 0',
  'BigCharts-R1 CERM (Masry et al. 2025, grpo_bigcharts.py error_magnitude_reward)',
  z.object({ answerColumn: z.string().min(1).optional() }).strict(),
  cerm,
  { answerColumn: 'answer' },
);
