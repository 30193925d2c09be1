/** Table-driven tests of the visual rewards (box IoU / grounding accuracy, counting, multiple choice in <answer>); each case says why. */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { extractChoice, multipleChoice } from './format.js';
import { makeRewardInput, type RewardFn } from './types.js';
import { boxIntersectionOverUnion, boxIou, countAnswer, extractBox, extractCount } from './visual.js';

const score = (reward: RewardFn, completion: string, row: Record<string, unknown>) =>
  reward(makeRewardInput({ completion, row }));

describe('boxIou', () => {
  const row = { box: [10, 10, 50, 50] }; // area 1600
  const cases: Array<[string, number, string]> = [
    ['<answer>[10, 10, 50, 50]</answer>', 1, 'the same box'],
    ['<answer>[30, 10, 70, 50]</answer>', 800 / 2400, 'shifted half a width: 800 shared of 2400'],
    ['<answer>[50, 10, 90, 50]</answer>', 0, 'touching edges share no area'],
    ['<answer>[60, 60, 90, 90]</answer>', 0, 'disjoint'],
    ['<answer>[50, 50, 10, 10]</answer>', 0, 'corners swapped: an empty box'],
    ['<think>maybe [10,10,50,50]</think><answer>[0, 0, 20, 20]</answer>', 100 / 1900, 'only the <answer> counts'],
    ['first [0,0,5,5] then [10.0, 10, 50, 50.0]', 1, 'no tag: the last box, decimals read'],
    ['<answer>10, 10, 50, 50</answer>', 0, 'no brackets: no box'],
    ['<answer>[10, 10, 50]</answer>', 0, 'three numbers are not a box'],
  ];
  it.each(cases)('%j → %d (%s)', (completion, expected) =>
    expect(score(boxIou(), completion, row)).toBeCloseTo(expected, 12),
  );

  it('with a threshold it is grounding accuracy; a near miss just under the threshold scores 0', () => {
    const accuracy = boxIou({ threshold: 0.5 });
    // [10,10,50,50] vs [10,10,50,30]: IoU 800/1600 = 0.5 exactly → counts.
    expect(score(accuracy, '<answer>[10, 10, 50, 30]</answer>', row)).toBe(1);
    // [10,10,50,29.9]: IoU 0.4975 → 0.
    expect(score(accuracy, '<answer>[10, 10, 50, 29.9]</answer>', row)).toBe(0);
    expect(boxIntersectionOverUnion([10, 10, 50, 29.9], [10, 10, 50, 50])).toBeCloseTo(0.4975, 10);
  });

  it('reads the gold box from a list or text (CSV), and names the column when it is missing or bad', () => {
    expect(score(boxIou({ boxColumn: 'bbox' }), '[1,2,3,4]', { bbox: '[1, 2, 3, 4]' })).toBe(1);
    expect(() => score(boxIou(), '[1,2,3,4]', {})).toThrow(/column "box" must hold a box/);
    expect(() => score(boxIou(), '[1,2,3,4]', { box: [3, 2, 1, 4] })).toThrow(/x2 > x1/);
    expect(() => boxIou({ threshold: 1.5 })).toThrow(/threshold/);
    expect(extractBox('[ -1 , 2.5,3,4 ]')).toEqual([-1, 2.5, 3, 4]);
  });
});

describe('countAnswer', () => {
  const cases: Array<[string, unknown, number, string]> = [
    ['<think>two red, one blue</think><answer>3</answer>', 3, 1, 'the tagged count'],
    ['<answer> 3 </answer>', '<answer> 3 </answer>', 1, "R1-V's gold cell form"],
    ['There are three circles.', '3', 1, 'a number word, no tag'],
    ['I see 2 squares and 1 circle, so 3 shapes in all', 3, 1, 'the final number'],
    ['<answer>13</answer>', 3, 0, 'near miss: 13 is not 3'],
    ['<answer>3.5</answer>', 3, 0, 'near miss: 3.5 is not a whole number'],
    ['<answer>-3</answer>', 3, 0, 'near miss: −3'],
    ['<answer>4</answer> (3 were hidden)', 3, 0, 'text after the tag does not count'],
    ['<think>3</think><answer>many</answer>', 3, 0, 'no number in the answer'],
    ['3 objects... no wait, 4', 3, 0, 'the final number is 4'],
  ];
  it.each(cases)('%j vs %j → %d (%s)', (completion, answer, expected) =>
    expect(score(countAnswer(), completion, { answer })).toBe(expected),
  );
  it('names the column when the gold count is missing or not whole', () => {
    expect(() => score(countAnswer({ answerColumn: 'count' }), '3', {})).toThrow(/column "count" must hold a whole/);
    expect(() => score(countAnswer(), '3', { answer: 2.5 })).toThrow(/whole number/);
    expect(extractCount('Twenty.')).toBe(20);
  });
});

describe('multipleChoice on VLM-style answers', () => {
  const cases: Array<[string, string | null, string]> = [
    ['<think>it looks red</think><answer>B</answer>', 'B', 'a tagged letter'],
    ['<answer>(C) a dog</answer>', 'C', 'tagged letter with its option text'],
    ['<answer>D. four</answer>', 'D', 'letter and dot'],
    ['<think>A?</think><answer>The answer is E</answer>', 'E', 'a sentence in the tag'],
    [
      '<think>(A)</think><answer>none of them</answer>',
      null,
      'no letter inside the tag: the think text does not count',
    ],
    ['<answer>b</answer>', 'B', 'a lone lower-case letter in the tag'],
    ['<answer>a dog</answer>', null, 'near miss: the article "a" in the tag is not option A'],
    ['<answer>AB</answer>', null, 'near miss: two letters are no choice'],
    ['The answer is a cat', null, 'near miss: the article "a" is not option A'],
  ];
  it.each(cases)('%j → %j (%s)', (completion, expected) => expect(extractChoice(completion)).toBe(expected));
  it('scores 1 only for the row letter', () => {
    expect(score(multipleChoice(), '<answer>B</answer>', { answer: 'B' })).toBe(1);
    expect(score(multipleChoice(), '<answer>C</answer>', { answer: 'B' })).toBe(0);
  });
});

describe('by name', () => {
  it('box-iou, count-answer and multiple-choice build from JSON options', () => {
    const grounding = createReward('box-iou', { boxColumn: 'bbox', threshold: 0.5 }) as RewardFn;
    expect(score(grounding, '<answer>[0,0,10,10]</answer>', { bbox: [0, 0, 10, 9] })).toBe(1);
    expect(score(createReward('count-answer') as RewardFn, '<answer>7</answer>', { answer: '7' })).toBe(1);
    expect(() => createReward('box-iou', { threshold: 2 })).toThrow(/reward "box-iou": bad options: threshold/);
  });
});
