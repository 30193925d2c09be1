/**
 * `transformation-credit`: STAR-R1's partial-credit accuracy reward for Transformation-Driven Visual
 * Reasoning (TVR; Li et al. 2025, "STAR-R1: Spatial TrAnsformation Reasoning by Reinforcing Multimodal
 * LLMs", arXiv 2505.15804). The answer lists transformations as (object index, attribute, new value)
 * triplets, "(1, color, red), (3, size, small)"; each predicted triplet earns R_pos by its best match
 * with the row's triplets: 5.0 when index, attribute and value match, 1.5 when index and attribute
 * match, 0.5 when only the index matches, 0 otherwise; the reward is the sum over the predicted triplets.
 *
 * Source: the R_pos values as given for arXiv 2505.15804 v1 §3 (read through a summary of the paper; the
 * authors' repository, github.com/zongzhao23/STAR-R1, has no code). Not built: the paper's punishment
 * term R_pun for excessive enumeration and for answering nothing — its exact form was not reachable
 * here, so it is not guessed. Ours: repeated identical triplets count once (otherwise repeating one
 * right triplet would farm 5.0 per copy); attribute and value compare case-insensitively.
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

/** One transformation: the object's index, the attribute changed and its new value. */
export type Transformation = [index: number, attribute: string, value: string];

const tripletPattern = /\(\s*(\d+)\s*,\s*([A-Za-z][\w-]*)\s*,\s*([A-Za-z][\w-]*)\s*\)/g;

/** The distinct (index, attribute, value) triplets written in `text` (its last `<answer>` when there is one). */
export function extractTransformations(text: string): Transformation[] {
  const seen = new Map<string, Transformation>();
  for (const match of (tagContent(text, 'answer') ?? text).matchAll(tripletPattern)) {
    const triplet: Transformation = [Number(match[1]), match[2]!.toLowerCase(), match[3]!.toLowerCase()];
    seen.set(triplet.join('\u0000'), triplet);
  }
  return [...seen.values()];
}

/** The row's triplets: an array of [index, attribute, value] or text holding "(i, a, v)" triplets. */
function goldTransformations(value: unknown, column: string): Transformation[] {
  if (
    Array.isArray(value) &&
    value.every(
      (item) =>
        Array.isArray(item) &&
        item.length === 3 &&
        Number.isInteger(item[0]) &&
        typeof item[1] === 'string' &&
        typeof item[2] === 'string',
    )
  )
    return (value as Transformation[]).map(([index, attribute, next]) => [
      index,
      attribute.toLowerCase(),
      next.toLowerCase(),
    ]);
  if (typeof value === 'string') return extractTransformations(value);
  throw new Error(
    `transformation-credit: column "${column}" must hold [index, attribute, value] triplets or text "(1, color, red)", got ${JSON.stringify(value)?.slice(0, 80)}`,
  );
}

/** Options of {@link transformationCredit}; the credits default to STAR-R1's. */
export interface TransformationCreditOptions {
  /** Column with the gold transformations (default `transformations`). */
  transformationsColumn?: string;
  /** Index, attribute and value match (default 5.0). */
  fullMatch?: number;
  /** Index and attribute match (default 1.5). */
  attributeMatch?: number;
  /** Only the index matches (default 0.5). */
  indexMatch?: number;
}

/**
 * Σ over the distinct predicted triplets of max over the gold triplets of the match credit (STAR-R1's R_pos).
 * @example transformationCredit()(makeRewardInput({ completion: '<answer>(1, color, red), (2, size, big)</answer>', row: { transformations: [[1, 'color', 'red'], [2, 'size', 'small']] } })) // 5 + 1.5
 */
export function transformationCredit({
  transformationsColumn = 'transformations',
  fullMatch = 5,
  attributeMatch = 1.5,
  indexMatch = 0.5,
}: TransformationCreditOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const gold = goldTransformations(row[transformationsColumn], transformationsColumn);
    let total = 0;
    for (const [index, attribute, value] of extractTransformations(completion)) {
      let best = 0;
      for (const [goldIndex, goldAttribute, goldValue] of gold) {
        if (goldIndex !== index) continue;
        const credit = goldAttribute !== attribute ? indexMatch : goldValue === value ? fullMatch : attributeMatch;
        best = Math.max(best, credit);
      }
      total += best;
    }
    return total;
  };
}

export const transformationCreditFactory = define(
  'transformation-credit',
  "STAR-R1 partial credit: Σ over the answer's distinct (index, attribute, value) triplets of 5 (all match), 1.5 (index + attribute), 0.5 (index only), 0; no penalty term",
  'STAR-R1, Li et al. 2025, arXiv 2505.15804 §3 R_pos (R_pun not built)',
  z
    .object({
      transformationsColumn: z.string().min(1).optional(),
      fullMatch: z.number().optional(),
      attributeMatch: z.number().optional(),
      indexMatch: z.number().optional(),
    })
    .strict(),
  transformationCredit,
  { transformationsColumn: 'transformations' },
);
