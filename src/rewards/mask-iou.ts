/**
 * `mask-iou`: segmentation answered in text — the IoU of the polygon the answer gives
 * ("[[x, y], [x, y], …]" or "[(x, y), …]", at least 3 vertices) with the row's mask, both rasterised on
 * the pixel grid (a pixel is inside when its centre is, even–odd rule), as polygon-output segmentation
 * rewards score it: the segmentation IoU of PASCAL VOC, with the predicted mask drawn from the text.
 *
 * The row's mask is a polygon (same forms, or an array of [x, y] pairs) or a grid of 0/1 rows
 * (`mask[y][x]`), whose size then sets the canvas; for two polygons the canvas is the smallest
 * that holds both. Is not: RLE decoding or image-space masks from a segmentation model.
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

/** Polygon vertices [x, y]. */
export type Polygon = [number, number][];

const numberText = String.raw`[-+]?\d+(?:\.\d+)?`;
const vertex = String.raw`[([]\s*${numberText}\s*,\s*${numberText}\s*[)\]]`;
const polygonPattern = new RegExp(String.raw`\[\s*${vertex}(?:\s*,\s*${vertex}){2,}\s*\]`, 'g');
const vertexPattern = new RegExp(String.raw`[([]\s*(${numberText})\s*,\s*(${numberText})\s*[)\]]`, 'g');

/** The last polygon (≥ 3 vertices) written in `text` (its last `<answer>` when there is one), or null. */
export function extractPolygon(text: string): Polygon | null {
  const polygons = [...(tagContent(text, 'answer') ?? text).matchAll(polygonPattern)];
  const last = polygons[polygons.length - 1];
  if (!last) return null;
  return [...last[0].matchAll(vertexPattern)].map((match) => [Number(match[1]), Number(match[2])]);
}

/** Whether (x, y) is inside the polygon, even–odd rule (a ray to +x crossing edges). */
function inside(polygon: Polygon, x: number, y: number): boolean {
  let result = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xi, yi] = polygon[i]!;
    const [xj, yj] = polygon[j]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) result = !result;
  }
  return result;
}

/** The polygon's pixels on a width × height grid (row-major 0/1): pixel (x, y) counts when (x + ½, y + ½) is inside. */
export function rasterisePolygon(polygon: Polygon, width: number, height: number): Uint8Array {
  const pixels = new Uint8Array(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) pixels[y * width + x] = inside(polygon, x + 0.5, y + 0.5) ? 1 : 0;
  return pixels;
}

/** |A ∩ B| / |A ∪ B| of two 0/1 masks of one size; 0 when both are empty. */
export function maskIntersectionOverUnion(a: Uint8Array, b: Uint8Array): number {
  let intersection = 0;
  let union = 0;
  for (let i = 0; i < a.length; i++) {
    intersection += a[i]! & b[i]!;
    union += a[i]! | b[i]!;
  }
  return union > 0 ? intersection / union : 0;
}

type GoldMask = { grid: Uint8Array; width: number; height: number } | { polygon: Polygon };

/** The row's mask: a 0/1 grid (rows of equal length), a polygon as [x, y] pairs, or text holding one. */
function goldMask(value: unknown, column: string): GoldMask {
  const isPair = (item: unknown) =>
    Array.isArray(item) && item.length === 2 && item.every((n) => typeof n === 'number' && isFinite(n));
  if (Array.isArray(value) && value.length >= 3 && value.every(isPair)) return { polygon: value as Polygon };
  if (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((row) => Array.isArray(row) && row.length === value[0].length && row.every((v) => v === 0 || v === 1))
  ) {
    const rows = value as number[][];
    return { grid: Uint8Array.from(rows.flat()), width: rows[0]!.length, height: rows.length };
  }
  const polygon = typeof value === 'string' ? extractPolygon(value) : null;
  if (polygon) return { polygon };
  throw new Error(
    `mask-iou: column "${column}" must hold a polygon ([[x, y], …], ≥ 3 vertices) or a grid of 0/1 rows, got ${JSON.stringify(value)?.slice(0, 80)}`,
  );
}

/** Options of {@link maskIou}. */
export interface MaskIouOptions {
  /** Column with the gold mask (default `mask`). */
  maskColumn?: string;
  /** When set, 1 when IoU ≥ threshold, else 0. */
  threshold?: number;
}

/**
 * The IoU in [0, 1] of the answer's polygon with the row's mask (0 without a polygon); with `threshold`, 1/0.
 * @example maskIou()(makeRewardInput({ completion: '<answer>[[0,0],[4,0],[4,4],[0,4]]</answer>', row: { mask: [[0,0],[4,0],[4,2],[0,2]] } })) // 0.5
 */
export function maskIou({ maskColumn = 'mask', threshold }: MaskIouOptions = {}): RewardFn {
  if (threshold !== undefined && !(threshold > 0 && threshold <= 1))
    throw new Error(`mask-iou: threshold must be in (0, 1], got ${threshold}`);
  return ({ completion, row }) => {
    const gold = goldMask(row[maskColumn], maskColumn);
    const predicted = extractPolygon(completion);
    if (!predicted) return 0;
    let iou: number;
    if ('grid' in gold) {
      iou = maskIntersectionOverUnion(rasterisePolygon(predicted, gold.width, gold.height), gold.grid);
    } else {
      const extent = (axis: 0 | 1) => Math.ceil(Math.max(0, ...[...predicted, ...gold.polygon].map((p) => p[axis])));
      const [width, height] = [extent(0), extent(1)];
      // Vertices below 0 are outside every pixel; the canvas starts at 0 as the images do.
      iou = maskIntersectionOverUnion(
        rasterisePolygon(predicted, width, height),
        rasterisePolygon(gold.polygon, width, height),
      );
    }
    return threshold === undefined ? iou : iou >= threshold ? 1 : 0;
  };
}

export const maskIouFactory = define(
  'mask-iou',
  "IoU of the answer's polygon [[x, y], …] with the row's mask (polygon or 0/1 grid), rasterised at pixel centres, in [0, 1]; with threshold 1/0",
  'segmentation IoU (PASCAL VOC); the mask drawn from the answer’s polygon',
  z.object({ maskColumn: z.string().min(1).optional(), threshold: z.number().gt(0).max(1).optional() }).strict(),
  maskIou,
  { maskColumn: 'mask' },
);
