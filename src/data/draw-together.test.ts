/**
 * `grpo.drawTogether` (draw-together.ts): the sets of rows sharing a column's value (distinct
 * prompts only, as the training list repeats rows), whole sets drawn per step and distinct within a
 * step while there are enough, and the refusals naming the field.
 */
import { describe, expect, it } from 'vitest';
import { Random } from '../tensor/random.js';
import type { Example } from './task.js';
import { drawSets, drawTogetherSets } from './draw-together.js';

const row = (prompt: string, pair: unknown): Example => ({ prompt, pair_id: pair });
// Three questions and their rephrasings, the list repeating a row as trainExamples does.
const examples = [
  row('1+2=', 'a'),
  row('2+1=', 'a'),
  row('3+4=', 'b'),
  row('1+2=', 'a'),
  row('4+3=', 'b'),
  row('5+6=', 'c'),
  row('6+5=', 'c'),
];

describe('drawTogetherSets', () => {
  it('groups the distinct rows of each value, first occurrences only', () => {
    expect(drawTogetherSets('pair_id', examples, 4, false)).toEqual([
      [0, 1],
      [2, 4],
      [5, 6],
    ]);
  });
  it('is null when unset', () => {
    expect(drawTogetherSets(null, examples, 3, true)).toBeNull();
  });
  it('refuses a missing column, uneven sets, no pairs, an odd promptsPerStep and a prompt selector', () => {
    expect(() => drawTogetherSets('question', examples, 4, false)).toThrow(
      'grpo.drawTogether: training row 0 has no "question" column',
    );
    expect(() => drawTogetherSets('pair_id', [...examples, row('9+9=', 'c')], 4, false)).toThrow(
      'grpo.drawTogether: "pair_id" = "c" has 3 distinct rows, others 2',
    );
    expect(() => drawTogetherSets('pair_id', [row('1+2=', 'a'), row('3+4=', 'b')], 4, false)).toThrow(
      'no two rows share',
    );
    expect(() => drawTogetherSets('pair_id', examples, 3, false)).toThrow(
      'grpo.promptsPerStep: 3 is not a multiple of 2',
    );
    expect(() => drawTogetherSets('pair_id', examples, 4, true)).toThrow('algorithm.promptSelector');
  });
});

describe('drawSets', () => {
  const sets = drawTogetherSets('pair_id', examples, 2, false)!;
  it('draws whole sets, distinct within a step while there are enough', () => {
    const random = new Random(3);
    for (let step = 0; step < 20; step++) {
      const indices = drawSets(sets, 6, random);
      expect(indices).toHaveLength(6);
      const drawn = [0, 2, 4].map((start) => indices.slice(start, start + 2));
      drawn.forEach((pair) => expect(sets).toContainEqual(pair));
      expect(new Set(drawn.map((pair) => pair[0])).size).toBe(3);
    }
  });
  it('repeats sets only when a step wants more than exist, and reaches every set', () => {
    const random = new Random(5);
    const indices = drawSets(sets, 8, random);
    expect(indices).toHaveLength(8);
    const seen = new Set<number>();
    for (let step = 0; step < 30; step++) drawSets(sets, 2, random).forEach((index) => seen.add(index));
    expect([...seen].sort()).toEqual([0, 1, 2, 4, 5, 6]);
  });
});
