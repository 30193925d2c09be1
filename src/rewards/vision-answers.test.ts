/**
 * The small vision answer rewards, by name through the registry (as a config uses them), each with the
 * near misses that tell a right rule from a loose one: numeric-answer, point-in-box, mask-iou,
 * transformation-credit (STAR-R1's R_pos) and think-answer-consistency.
 */
import { describe, expect, it } from 'vitest';
import { createReward, rewardFactories } from './factories.js';
import { makeRewardInput, type RewardFn } from './types.js';

const score = async (name: string, options: unknown, completion: string, row: Record<string, unknown> = {}) =>
  (createReward(name, options) as RewardFn)(makeRewardInput({ completion, row }));

describe('numeric-answer', () => {
  it.each([
    ['<answer>10.4</answer>', 10, 1], // within 5%
    ['<answer>10.6</answer>', 10, 0], // 6% off
    ['<answer>9.5</answer>', 10, 1], // exactly 5%: inclusive
    ['The total is 1,204.5 dollars', 1204.5, 1], // thousands comma with decimals
    ['<think>maybe 3</think><answer>3/4</answer>', 0.75, 1], // a fraction, <answer> first
    ['<answer>-2</answer>', 2, 0], // the sign counts
    ['<answer>1.2e3</answer>', '1200', 1], // gold as text, exponent in the answer
    ['<answer>no idea</answer>', 5, 0],
  ])('%s vs %s → %s', async (completion, answer, expected) => {
    expect(await score('numeric-answer', {}, completion, { answer })).toBe(expected);
  });

  it('takes an absolute tolerance for golds near zero and a zero relative one for exact answers', async () => {
    expect(await score('numeric-answer', {}, '<answer>0.01</answer>', { answer: 0 })).toBe(0);
    expect(await score('numeric-answer', { absoluteTolerance: 0.02 }, '<answer>0.01</answer>', { answer: 0 })).toBe(1);
    expect(await score('numeric-answer', { relativeTolerance: 0 }, '<answer>10.01</answer>', { answer: 10 })).toBe(0);
    expect(() => createReward('numeric-answer', { tolerance: 1 })).toThrow(/numeric-answer.*tolerance/);
    await expect(score('numeric-answer', {}, '1', { answer: 'n/a' })).rejects.toThrow(
      /column "answer" must hold a number/,
    );
  });
});

describe('point-in-box', () => {
  const row = { box: [10, 20, 40, 50] };
  it.each([
    ['<answer>(12, 30)</answer>', 1],
    ['<answer>[40, 50]</answer>', 1], // the corner: edges included
    ['<answer>(40.5, 30)</answer>', 0], // half a pixel right of the edge
    ['<answer>(30, 19.9)</answer>', 0], // just above
    ['<answer>[20, 30, 30, 40]</answer>', 1], // a box: its centre (25, 35)
    ['<answer>[0, 0, 10, 10]</answer>', 0], // a box whose centre (5, 5) is outside
    ['click somewhere', 0],
  ])('%s → %s', async (completion, expected) => {
    expect(await score('point-in-box', {}, completion, row)).toBe(expected);
  });

  it('boxAsCentre false scores a box answer 0; a bad box column is named', async () => {
    expect(await score('point-in-box', { boxAsCentre: false }, '<answer>[20, 30, 30, 40]</answer>', row)).toBe(0);
    await expect(score('point-in-box', {}, '(1, 1)', { box: [5, 5, 1, 1] })).rejects.toThrow(
      /point-in-box: column "box"/,
    );
  });
});

describe('mask-iou', () => {
  const square = (x0: number, y0: number, x1: number, y1: number) =>
    `[[${x0},${y0}],[${x1},${y0}],[${x1},${y1}],[${x0},${y1}]]`;
  it('is the pixel IoU of two polygons', async () => {
    const gold = {
      mask: [
        [0, 0],
        [4, 0],
        [4, 2],
        [0, 2],
      ],
    }; // 8 pixels
    expect(await score('mask-iou', {}, `<answer>${square(0, 0, 4, 4)}</answer>`, gold)).toBe(0.5); // 8 / 16
    expect(await score('mask-iou', {}, `<answer>${square(0, 0, 4, 2)}</answer>`, gold)).toBe(1);
    expect(await score('mask-iou', {}, `<answer>${square(0, 2, 4, 4)}</answer>`, gold)).toBe(0); // touching, no overlap
    expect(await score('mask-iou', {}, '<answer>[[0,0],[4,0]]</answer>', gold)).toBe(0); // two vertices: no polygon
    // A triangle covering half of each pixel of the diagonal: pixel centres decide.
    expect(await score('mask-iou', {}, '<answer>[(0,0), (4,0), (0,4)]</answer>', { mask: square(0, 0, 4, 4) })).toBe(
      6 / 16,
    );
  });

  it('reads a 0/1 grid gold, whose size sets the canvas; threshold gives 1/0', async () => {
    const grid = {
      mask: [
        [1, 1, 0],
        [1, 1, 0],
        [0, 0, 0],
      ],
    };
    expect(await score('mask-iou', {}, `<answer>${square(0, 0, 2, 2)}</answer>`, grid)).toBe(1);
    expect(await score('mask-iou', {}, `<answer>${square(0, 0, 3, 2)}</answer>`, grid)).toBe(4 / 6);
    expect(await score('mask-iou', { threshold: 0.7 }, `<answer>${square(0, 0, 3, 2)}</answer>`, grid)).toBe(0);
    expect(await score('mask-iou', { threshold: 0.6 }, `<answer>${square(0, 0, 3, 2)}</answer>`, grid)).toBe(1);
    await expect(score('mask-iou', {}, 'x', { mask: [[1, 2]] })).rejects.toThrow(/mask-iou: column "mask"/);
  });
});

describe('transformation-credit (STAR-R1 R_pos)', () => {
  const row = {
    transformations: [
      [1, 'color', 'red'],
      [3, 'size', 'small'],
    ],
  };
  it.each([
    ['<answer>(1, color, red), (3, size, small)</answer>', 10], // both right: 5 + 5
    ['<answer>(1, color, blue)</answer>', 1.5], // index and attribute
    ['<answer>(1, shape, cube)</answer>', 0.5], // index only
    ['<answer>(2, color, red)</answer>', 0], // another object
    ['<answer>(1, Color, RED), (1, color, red)</answer>', 5], // the same triplet twice counts once
    ['<answer>(1, color, red), (1, size, big)</answer>', 5.5], // a right one and an index-only one
    ['<answer>no change</answer>', 0],
  ])('%s → %s', async (completion, expected) => {
    expect(await score('transformation-credit', {}, completion, row)).toBe(expected);
  });

  it('reads text golds and takes other credits', async () => {
    const text = { transformations: '(1, color, red)' };
    expect(await score('transformation-credit', { fullMatch: 1, attributeMatch: 0.3, indexMatch: 0.1 }, '(1, color, red)', text)).toBe(1); // prettier-ignore
    await expect(score('transformation-credit', {}, 'x', { transformations: 5 })).rejects.toThrow(
      /column "transformations"/,
    );
  });
});

describe('think-answer-consistency', () => {
  it.each([
    ['number', '<think>3 + 4 = 7</think><answer>7</answer>', 1],
    ['number', '<think>3 + 4 = 7, so 8</think><answer>7</answer>', 0], // the reasoning concluded 8
    ['number', '<answer>7</answer>', 0], // no think
    ['box', '<think>the cat is at [10, 10, 50, 50]</think><answer>[10, 10, 50, 50]</answer>', 1],
    ['box', '<think>the cat is at [10, 10, 50, 50]</think><answer>[30, 30, 70, 70]</answer>', 0],
    ['choice', '<think>so the answer is (B)</think><answer>B</answer>', 1],
    ['choice', '<think>so the answer is (B)</think><answer>C</answer>', 0],
  ])('%s: %s → %s', async (kind, completion, expected) => {
    expect(await score('think-answer-consistency', { kind }, completion)).toBe(expected);
  });

  it('times a correctness reward by name: consistent and right scores, consistent and wrong does not', async () => {
    const options = { correctness: { name: 'numeric-answer', options: { relativeTolerance: 0 } } };
    expect(await score('think-answer-consistency', options, '<think>so 7</think><answer>7</answer>', { answer: 7 })).toBe(1); // prettier-ignore
    expect(await score('think-answer-consistency', options, '<think>so 6</think><answer>6</answer>', { answer: 7 })).toBe(0); // prettier-ignore
    expect(await score('think-answer-consistency', options, '<think>so 6</think><answer>7</answer>', { answer: 7 })).toBe(0); // prettier-ignore
    expect(() => createReward('think-answer-consistency', { correctness: { name: 'majority-vote' } })).toThrow(
      /group reward/,
    );
  });

  it('is listed with the other rewards', () => {
    for (const name of [
      'numeric-answer',
      'point-in-box',
      'mask-iou',
      'transformation-credit',
      'think-answer-consistency',
    ])
      expect(rewardFactories.has(name), name).toBe(true);
  });
});
