/**
 * Pref-GRPO's win-rate image reward (#5, ALGORITHMS.md §5.10): the spec's vector, the authors' tie and
 * rounding rules (cal_win_rate in CodeGoat24/Pref-GRPO), comparisons only within a group, the built-in
 * entry judged by the digit classifier, and the group z-score the flow trainer makes of it.
 */
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from '../algorithms/index.js';
import { classProbabilities, trainClassifier } from './digit-classifier.js';
import { loadDigits } from './digits.js';
import { promptGroups } from './flow-grpo.js';
import { scoreImages } from './image-rewards.js';
import { pairwiseWinRates } from './image-rewards/win-rate.js';

/** A judge consistent with hidden scores: the higher wins, equal ties. */
const byScore = (scores: readonly number[]) => (first: number, second: number) =>
  scores[first] > scores[second]
    ? ('first' as const)
    : scores[second] > scores[first]
      ? ('second' as const)
      : ('tie' as const);

describe('pairwiseWinRates', () => {
  it('§5.10: judgements consistent with [0.71, 0.70, 0.50, 0.20] give [1, 0.667, 0.333, 0], z-scores ±1.16, ±0.39', () => {
    const rates = pairwiseWinRates([0, 0, 0, 0], byScore([0.71, 0.7, 0.5, 0.2]));
    expect(Array.from(rates)).toEqual([1, 0.667, 0.333, 0].map(Math.fround)); // round(·, 3) as the code
    const { advantages } = advantageEstimators.get('grpo')({ rewards: rates, groupSizes: 4 });
    const expected = [1.1616, 0.3872, -0.3872, -1.1616]; // the spec's, from the unrounded rates
    Array.from(advantages).forEach((value, index) => expect(value).toBeCloseTo(expected[index], 2));
  });

  it('judges each unordered pair once, first before second; a tie gives each one half', () => {
    const calls: string[] = [];
    const rates = pairwiseWinRates([0, 0, 0], (first, second) => {
      calls.push(`${first}-${second}`);
      return first === 0 ? 'tie' : 'second';
    });
    expect(calls).toEqual(['0-1', '0-2', '1-2']);
    expect(Array.from(rates)).toEqual([0.5, 0.25, 0.75]); // 0: ½+½ of 2; 1: ½ of 2; 2: ½+1 of 2
  });

  it('compares only images of one group; an image alone scores 0', () => {
    const scores = [3, 1, 2, 0, 5];
    const rates = pairwiseWinRates([0, 0, 1, 1, 2], byScore(scores));
    expect(Array.from(rates)).toEqual([1, 0, 1, 0, 0]);
    // One group instead: image 2 (score 2) beats 1 and 3 of its 4 rivals.
    expect(pairwiseWinRates([0, 0, 0, 0, 0], byScore(scores))[2]).toBe(0.5);
  });

  it("refuses a verdict that is not 'first', 'second' or 'tie'", () => {
    expect(() => pairwiseWinRates([0, 0], () => 'both' as never)).toThrow(/verdict both is not/);
  });
});

describe('image reward win-rate', () => {
  it("ranks each group's images by the classifier's probability of the asked digit, groups apart", () => {
    const digits = loadDigits(14, 'training', 300);
    const classifier = trainClassifier(digits, { epochs: 1, batchSize: 50, learningRate: 3e-3, seed: 1 });
    const images = digits.images.slice(0, 8);
    const labels = Array<number>(8).fill(3); // every image asked to be a 3, so the judge has work to do
    const groups = promptGroups(8, 4);
    const { components } = scoreImages(images, labels, 14, { 'win-rate': 1 }, classifier, groups);
    const asked = classProbabilities(classifier, images).map((row) => row[3]);
    for (let i = 0; i < 8; i++) {
      const rivals = [0, 1, 2, 3].map((k) => 4 * groups[i] + k).filter((j) => j !== i);
      const wins = rivals.reduce((sum, j) => sum + (asked[i] > asked[j] ? 1 : asked[i] === asked[j] ? 0.5 : 0), 0);
      expect(components['win-rate'][i]).toBeCloseTo(Math.round((wins / 3) * 1000) / 1000, 6);
    }
    // Win rates of a group of G sum to G/2: each comparison hands out exactly one win.
    expect(components['win-rate'].slice(0, 4).reduce((a, b) => a + b, 0)).toBeCloseTo(2, 2);
    expect(() => scoreImages(images, labels, 14, { 'win-rate': 1 }, null, groups)).toThrow(
      /rewards.win-rate: needs a digit classifier/,
    );
    expect(() => scoreImages(images, labels, 14, { 'win-rate': 1 }, classifier, [0])).toThrow(
      /1 group ids for 8 images/,
    );
  });
});
