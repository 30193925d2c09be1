/**
 * `point-in-box`: GUI / pointing grounding — 1 when the point the answer gives ("(x, y)" or "[x, y]")
 * lies inside the row's box [x1, y1, x2, y2] (edges included), else 0; an answer that gives a box instead
 * is scored by its centre (UI-R1 / GUI-R1 click rewards: the predicted click must land in the target
 * element's box).
 *
 * Is: parsing the point and the containment test. Is not: box overlap (`box-iou`) nor anything on pixels.
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';
import { extractBox, type Box } from './visual.js';

const numberText = String.raw`[-+]?\d+(?:\.\d+)?`;
const pointPattern = new RegExp(String.raw`[([]\s*(${numberText})\s*,\s*(${numberText})\s*[)\]]`, 'g');

/** The last "(x, y)" / "[x, y]" of the answer (`<answer>` first), else the centre of its last box, else null. */
export function extractPoint(completion: string, boxAsCentre = true): [number, number] | null {
  const text = tagContent(completion, 'answer') ?? completion;
  const points = [...text.matchAll(pointPattern)];
  const last = points[points.length - 1];
  if (last) return [Number(last[1]), Number(last[2])];
  const box = boxAsCentre ? extractBox(completion) : null;
  return box ? [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2] : null;
}

/** The row's box: [x1, y1, x2, y2] numbers or text holding them, x2 ≥ x1 and y2 ≥ y1; an error names the column. */
export function rowBox(row: Readonly<Record<string, unknown>>, column: string, reward: string): Box {
  const value = row[column];
  const box =
    Array.isArray(value) && value.length === 4 && value.every((item) => typeof item === 'number' && isFinite(item))
      ? (value as Box)
      : typeof value === 'string'
        ? extractBox(value)
        : null;
  if (!box || !(box[2] >= box[0] && box[3] >= box[1]))
    throw new Error(
      `${reward}: column "${column}" must hold a box [x1, y1, x2, y2] with x2 ≥ x1 and y2 ≥ y1, got ${JSON.stringify(value)}`,
    );
  return box;
}

/** Options of {@link pointInBox}. */
export interface PointInBoxOptions {
  /** Column with the target box (default `box`). */
  boxColumn?: string;
  /** Score an answer that gives a box by its centre (default true); false: a box answer scores 0. */
  boxAsCentre?: boolean;
}

/**
 * 1 when the answer's point is inside the row's box, edges included; 0 otherwise or without a point.
 * @example pointInBox()(makeRewardInput({ completion: '<answer>(12, 30)</answer>', row: { box: [10, 20, 40, 50] } })) // 1
 */
export function pointInBox({ boxColumn = 'box', boxAsCentre = true }: PointInBoxOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const [x1, y1, x2, y2] = rowBox(row, boxColumn, 'point-in-box');
    const point = extractPoint(completion, boxAsCentre);
    return point && point[0] >= x1 && point[0] <= x2 && point[1] >= y1 && point[1] <= y2 ? 1 : 0;
  };
}

export const pointInBoxFactory = define(
  'point-in-box',
  "the answer's point (x, y) — or its box's centre — lies in the row's box [x1, y1, x2, y2], edges included: 1/0",
  'UI-R1 / GUI-R1 click-in-box reward; VLM pointing',
  z.object({ boxColumn: z.string().min(1).optional(), boxAsCentre: z.boolean().optional() }).strict(),
  pointInBox,
  { boxColumn: 'box' },
);
