/**
 * Rows of a generated task, split for good into training and held-out rows: a seeded draw
 * (`seededPick` of rewards/stealthrl.ts, a linear-congruential generator read through its high bits) builds candidate rows,
 * and a row belongs to the held-out split when the FNV-1a hash of its key is 0 mod 8. So a held-out
 * row is never trained on, whatever the seeds, and the same (count, seed) always gives the same rows.
 *
 * Is not: any task's content (each task's `draw` builds its rows), or the split of a data file
 * (file tasks keep the file's own split).
 */
import { seededPick } from '../rewards/stealthrl.js'; // the same draw StealthRL's detectors train on
import type { Example } from './task.js';

/** A draw of integers in [0, n). */
export type Pick = (n: number) => number;

/** FNV-1a of a string's UTF-16 code units. */
export function textHash(text: string): number {
  let hash = 2166136261;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619) >>> 0;
  return hash;
}

/**
 * `count` rows of one split: rows drawn with the split's own seeded pick until `count` have a key
 * in that split (held out: hash 0 mod 8). Throws naming `task` after 1000 draws per row wanted (a
 * draw whose keys all fall in the other split).
 */
export function generatedSplit(
  task: string,
  count: number,
  seed: number,
  heldOut: boolean,
  draw: (pick: Pick) => Example,
  key: (row: Example) => string = (row) => String(row.prompt),
): Example[] {
  const pick = seededPick(seed * 2654435761 + (heldOut ? 17 : 0));
  const rows: Example[] = [];
  for (let tries = 0; rows.length < count; tries++) {
    if (tries > count * 1000) throw new Error(`${task}: could not draw enough rows`);
    const row = draw(pick);
    if ((textHash(key(row)) % 8 === 0) === heldOut) rows.push(row);
  }
  return rows;
}
