/**
 * Rewards for visual tasks scored from the completion's text, R1-V / VLM-R1 style: box IoU and
 * grounding accuracy against the row's box, and counting (an integer answer equal to the row's
 * count). Multiple choice is `multipleChoice` in `format.ts` (it also reads `<answer>` tags).
 *
 * Each looks inside the last `<answer>…</answer>` when the completion has one (the R1 template),
 * else at the whole completion. Is not: anything that looks at pixels — the image is the prompt's,
 * the answer is text.
 */
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

/** A box as [x1, y1, x2, y2] (left, top, right, bottom; any unit, the same for both boxes). */
export type Box = [number, number, number, number];

const numberText = String.raw`[-+]?\d+(?:\.\d+)?`;
const boxPattern = new RegExp(
  String.raw`\[\s*(${numberText})\s*,\s*(${numberText})\s*,\s*(${numberText})\s*,\s*(${numberText})\s*\]`,
  'g',
);

/** The text a visual answer is read from: the last `<answer>` content, else the whole completion. */
function answerText(completion: string): string {
  return tagContent(completion, 'answer') ?? completion;
}

/** The last `[x1, y1, x2, y2]` in the completion's answer, or null. */
export function extractBox(completion: string): Box | null {
  const matches = [...answerText(completion).matchAll(boxPattern)];
  const last = matches[matches.length - 1];
  return last ? [Number(last[1]), Number(last[2]), Number(last[3]), Number(last[4])] : null;
}

/** Intersection over union of two boxes with continuous edges (area = (x2 − x1)·(y2 − y1)); 0 for an empty box. */
export function boxIntersectionOverUnion(a: Box, b: Box): number {
  const areaOf = (box: Box) => Math.max(0, box[2] - box[0]) * Math.max(0, box[3] - box[1]);
  const width = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const height = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  const intersection = width > 0 && height > 0 ? width * height : 0;
  const union = areaOf(a) + areaOf(b) - intersection;
  return union > 0 ? intersection / union : 0;
}

/** The row's gold box: a list of 4 numbers, or text holding `[x1, y1, x2, y2]` (CSV); an error names the column. */
function goldBox(row: Readonly<Record<string, unknown>>, column: string): Box {
  const value = row[column];
  const box =
    Array.isArray(value) && value.length === 4 && value.every((item) => typeof item === 'number' && isFinite(item))
      ? (value as Box)
      : typeof value === 'string'
        ? extractBox(value)
        : null;
  if (!box || !(box[2] > box[0] && box[3] > box[1]))
    throw new Error(
      `boxIou: column "${column}" must hold a box [x1, y1, x2, y2] with x2 > x1 and y2 > y1, got ${JSON.stringify(value)}`,
    );
  return box;
}

/** Options of {@link boxIou}. */
export interface BoxIouOptions {
  /** Column with the gold box (default `box`). */
  boxColumn?: string;
  /** When set, the reward is grounding accuracy: 1 when IoU ≥ threshold (Acc@0.5 uses 0.5), else 0. */
  threshold?: number;
}

/**
 * The IoU in [0, 1] of the completion's last `[x1, y1, x2, y2]` with the row's box (0 when there is
 * no box or it is empty); with `threshold`, grounding accuracy 1/0 (IoU ≥ threshold). VLM-R1's REC
 * reward is this with threshold 0.5 (it uses IoU > 0.5 and pixel-inclusive edges, +1 per side).
 * @example boxIou({ threshold: 0.5 })(makeRewardInput({ completion: '<answer>[10, 10, 50, 50]</answer>', row: { box: [12, 10, 50, 52] } })) // 1
 */
export function boxIou({ boxColumn = 'box', threshold }: BoxIouOptions = {}): RewardFn {
  if (threshold !== undefined && !(threshold > 0 && threshold <= 1))
    throw new Error(`boxIou: threshold must be in (0, 1], got ${threshold}`);
  return ({ completion, row }) => {
    const gold = goldBox(row, boxColumn);
    const predicted = extractBox(completion);
    const iou = predicted ? boxIntersectionOverUnion(predicted, gold) : 0;
    return threshold === undefined ? iou : iou >= threshold ? 1 : 0;
  };
}

const numberWords = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten',
  'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty',
]; // prettier-ignore
const countPattern = new RegExp(String.raw`(?<![\w.])(${numberText})(?![\w.]*\d)|\b(${numberWords.join('|')})\b`, 'gi');

/**
 * The final number of a counting answer (digits, or a number word zero–twenty), read from the last
 * `<answer>` when there is one, else the whole text; null when it is not a whole number or there is none.
 */
export function extractCount(text: string): number | null {
  const matches = [...answerText(text).matchAll(countPattern)];
  const last = matches[matches.length - 1];
  if (!last) return null;
  const value = last[1] !== undefined ? Number(last[1]) : numberWords.indexOf(last[2]!.toLowerCase());
  return Number.isInteger(value) ? value : null;
}

/**
 * 1 when the completion's final whole number (in `<answer>` when present: "<answer>3</answer>",
 * "There are three.") equals the row's count, else 0. The gold cell may be a number, "3", or R1-V's
 * "<answer> 3 </answer>". R1-V's counting accuracy reward (CLEVR), with number parsing instead of
 * string equality.
 * @example countAnswer()(makeRewardInput({ completion: '<think>…</think><answer>4</answer>', row: { answer: 4 } })) // 1
 */
export function countAnswer({ answerColumn = 'answer' }: { answerColumn?: string } = {}): RewardFn {
  return ({ completion, row }) => {
    const cell = row[answerColumn];
    const gold = typeof cell === 'number' ? cell : typeof cell === 'string' ? extractCount(cell) : null;
    if (gold === null || !Number.isInteger(gold))
      throw new Error(`countAnswer: column "${answerColumn}" must hold a whole number, got ${JSON.stringify(cell)}`);
    return extractCount(completion) === gold ? 1 : 0;
  };
}
