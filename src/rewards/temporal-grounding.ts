/**
 * Temporal grounding rewards of TempSamp-R1 (Li et al. 2025, arXiv 2509.18056, #209): `temporal-iou`,
 * the IoU of the predicted span "X to Y" with the row's, optionally through TempSamp-R1's non-linear
 * shaping (a near-flat plateau above a success threshold, an exponential ramp below it), and
 * `temporal-format`, whether an `<answer>` block holds a span. Exact to `_timestamp_iou_reward`,
 * `compute_temporal_iou`, `parse_timestamp_from_text`, `_temporal_format_reward` and
 * `transform_rewards` of the open-source TempSamp-R1 (ZhangZikun6666/TempSamp-R1,
 * scripts/timelens/timelens_reward.py; its run weighs them 1 and 0.1). Differs: digits are ASCII
 * (their Python `\d` also takes other scripts' digits), and a ground truth with no span is an error
 * naming the column (theirs scores 0).
 *
 * Is: parsing, IoU, shaping. Is not: the ground-truth injection (rollout/ground-truth.ts) or a task.
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import type { RewardFn } from './types.js';

type Span = [number, number];
const number = String.raw`(\d+\.?\d*)`;

/** Their `parse_timestamp_from_text`: inside the first `<answer>` if any; "X to Y" / "X and Y", then "X - Y" (the last of each), then the first two numbers. */
export function parseSpan(text: string): Span | null {
  if (!text) return null;
  const answer = /<answer>(.*?)<\/answer>/s.exec(text);
  const search = answer ? answer[1] : text;
  for (const pattern of [String.raw`${number}\s*(?:to|and)\s*${number}`, String.raw`${number}\s*-\s*${number}`]) {
    const matches = [...search.matchAll(new RegExp(pattern, 'g'))];
    if (matches.length > 0) {
      const last = matches[matches.length - 1];
      return [Number(last[1]), Number(last[2])];
    }
  }
  const numbers = [...search.matchAll(new RegExp(String.raw`\b${number}\b`, 'g'))];
  return numbers.length >= 2 ? [Number(numbers[0][1]), Number(numbers[1][1])] : null;
}

/** Their `compute_temporal_iou` (the spans as given, not sorted): intersection over union, 0 for an empty union. */
export function temporalIou(predicted: Span, truth: Span): number {
  const intersection = Math.max(0, Math.min(predicted[1], truth[1]) - Math.max(predicted[0], truth[0]));
  const union = Math.max(predicted[1], truth[1]) - Math.min(predicted[0], truth[0]);
  return union > 0 ? intersection / union : 0;
}

/**
 * Their `transform_rewards`: IoU ≥ τ → τ + 0.01·ln(IoU − τ + 1); below → τ − (e^{α(τ − IoU)} − 1)/(e^α − 1).
 * @example shapeIou(0, 0.8, 1) // 0.0868…
 */
export function shapeIou(iou: number, threshold: number, alpha: number): number {
  if (iou >= threshold) return threshold + Math.log(iou - threshold + 1) * 0.01;
  const denominator = Math.exp(alpha) - 1;
  if (denominator <= 0) return Math.max(0, iou);
  return threshold - (Math.exp(alpha * (threshold - iou)) - 1) / denominator;
}

interface TemporalIouOptions {
  answerColumn?: string;
  shaping?: boolean;
  threshold?: number;
  alpha?: number;
}

/** The (optionally shaped) IoU of the completion's span with the row's `answerColumn` span. */
export function temporalIouReward({
  answerColumn = 'answer',
  shaping = false,
  threshold = 0.8,
  alpha = 1,
}: TemporalIouOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const cell = row[answerColumn];
    const truth = typeof cell === 'string' ? parseSpan(cell) : null;
    if (!truth)
      throw new Error(
        `temporal-iou: column "${answerColumn}" must hold a span such as "7.0 to 11.0", got ${JSON.stringify(cell)}`,
      );
    const predicted = parseSpan(completion);
    const iou = predicted ? temporalIou(predicted, truth) : 0;
    return shaping ? shapeIou(iou, threshold, alpha) : iou;
  };
}

const spanInside = new RegExp(String.raw`\d+\.?\d*\s*(?:to|and|-)\s*\d+\.?\d*`);

/** Their `_temporal_format_reward`; `strict` is their TIMELENS_STRICT_FORMAT=1 variant. */
export function temporalFormatReward({ strict = false }: { strict?: boolean } = {}): RewardFn {
  return ({ completion }) => {
    if (!completion) return 0;
    if (!strict) {
      const answer = /<answer>(.*?)<\/answer>/s.exec(completion);
      return answer && spanInside.test(answer[1]) ? 1 : 0;
    }
    const stripped = completion.trimEnd();
    const blocks = [...stripped.matchAll(/<answer>(.*?)<\/answer>/gs)];
    if (blocks.length !== 1 || !stripped.endsWith('</answer>')) return 0;
    const content = blocks[0][1];
    return !/[\n\r]/.test(content) && spanInside.test(content) ? 1 : 0;
  };
}

export const temporalIouFactory = define(
  'temporal-iou',
  'IoU of the "X to Y" span (in <answer> if any) with the row\'s; shaping: τ + 0.01·ln(IoU − τ + 1) above τ, τ − (e^{α(τ−IoU)} − 1)/(e^α − 1) below',
  'TempSamp-R1 (Li et al. 2025, timelens_reward.py _timestamp_iou_reward, transform_rewards)',
  z
    .object({
      answerColumn: z.string().min(1).optional(),
      shaping: z.boolean().optional(),
      threshold: z.number().min(0).max(1).optional(),
      alpha: z.number().positive().max(50).optional(),
    })
    .strict(),
  temporalIouReward,
  { answerColumn: 'answer' },
);

export const temporalFormatFactory = define(
  'temporal-format',
  '1 when an <answer> block holds an "X to Y" / "X and Y" / "X - Y" span (strict: exactly one block, ending the text, on one line)',
  'TempSamp-R1 (Li et al. 2025, timelens_reward.py _temporal_format_reward)',
  z.object({ strict: z.boolean().optional() }).strict(),
  temporalFormatReward,
);
