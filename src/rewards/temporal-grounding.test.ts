/**
 * TempSamp-R1's temporal grounding rewards against scripts/reference/tempsamp_rewards.py (their
 * timelens_reward.py restated): the span parser's fallbacks, IoU, the shaping at two settings, the
 * loose and strict formats, and near misses that must score 0 or in part.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { parseSpan, shapeIou, temporalIou } from './temporal-grounding.js';
import { makeRewardInput, type RewardFn } from './types.js';

interface Case {
  completion: string;
  iou: number;
  shaped: number;
  shaped_t05_a3: number;
  format: number;
  strict_format: number;
  overall: number;
}
const reference = JSON.parse(readFileSync('test/fixtures/tempsamp-rewards.json', 'utf8')) as {
  truth: string;
  cases: Case[];
};
const score = (reward: unknown, completion: string, answer: unknown = reference.truth) =>
  (reward as RewardFn)(makeRewardInput({ completion, row: { answer } })) as number;

describe('temporal-iou and temporal-format (TempSamp-R1, timelens_reward.py)', () => {
  const iou = createReward('temporal-iou');
  const shaped = createReward('temporal-iou', { shaping: true });
  const shapedOther = createReward('temporal-iou', { shaping: true, threshold: 0.5, alpha: 3 });
  const format = createReward('temporal-format');
  const strict = createReward('temporal-format', { strict: true });

  it.each(reference.cases.map((c) => [JSON.stringify(c.completion), c] as const))('%s', (_, c) => {
    expect(score(iou, c.completion)).toBeCloseTo(c.iou, 12);
    expect(score(shaped, c.completion)).toBeCloseTo(c.shaped, 12);
    expect(score(shapedOther, c.completion)).toBeCloseTo(c.shaped_t05_a3, 12);
    expect(score(format, c.completion)).toBe(c.format);
    expect(score(strict, c.completion)).toBe(c.strict_format);
    expect(score(shaped, c.completion) + 0.1 * score(format, c.completion)).toBeCloseTo(c.overall, 12);
  });

  it('near misses: a reversed, disjoint or missing span scores 0; a partial overlap scores in part', () => {
    expect(score(iou, '<answer> 11 to 7 </answer>')).toBe(0); // not sorted, as theirs: union 4, overlap 0
    expect(score(iou, '<answer> 12 to 20 </answer>')).toBe(0); // disjoint
    expect(score(iou, '<answer> no span </answer>')).toBe(0);
    expect(score(iou, '<answer> 9 to 11 </answer>')).toBeCloseTo(0.5, 12);
    expect(shapeIou(0, 0.8, 1)).toBeCloseTo(0.8 - (Math.exp(0.8) - 1) / (Math.E - 1), 12); // the floor a miss gets
    expect(shapeIou(1, 0.8, 1) - shapeIou(0.8, 0.8, 1)).toBeLessThan(0.002); // the plateau above τ
  });

  it('the parser: last "to"/"and" match, then "-", then the first two numbers', () => {
    expect(parseSpan('<answer> 1 to 2, 3 and 4 </answer>')).toEqual([3, 4]);
    expect(parseSpan('2 - 5')).toEqual([2, 5]);
    expect(parseSpan('at 3 until 8 or 9')).toEqual([3, 8]);
    expect(parseSpan('at 3')).toBeNull();
    expect(temporalIou([0, 0], [0, 0])).toBe(0); // empty union
  });

  it('a ground truth with no span is an error naming the column', () => {
    expect(() => score(iou, '<answer> 1 to 2 </answer>', 'soon')).toThrow(/column "answer" must hold a span/);
    expect(() => score(iou, '<answer> 1 to 2 </answer>', 3)).toThrow(/column "answer"/);
    expect(() => createReward('temporal-iou', { threshold: 2 })).toThrow(/threshold/);
  });
});
