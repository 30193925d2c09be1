/**
 * Tests of GRPO-CARE's advantage (#24): bonus, answer likelihoods, rewards and advantages against the
 * float64 port of the authors' compute_loss (scripts/reference/grpo_care.py → test/fixtures/grpo-care.json),
 * the answer span found from token texts, the margin, the accuracy reward chosen by name, and the
 * errors and refusals that name what is missing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expectClose } from '../../test/helpers/numeric.js';
import { advantageEstimators } from './index.js';
import type { RunSettings } from './registry.js';
import {
  answerConfidences,
  answerTokenRange,
  careAdvantage,
  careAdvantagePart,
  careRewards,
} from './advantages-care.js';

interface Case {
  accuracy: number[];
  rewards: number[];
  refLogprobs: number[][];
  spans: [number, number][];
  expectedRewards: number[];
  expectedBonus: number[];
  expectedConfidence: number[];
  expectedAdvantages: number[];
}
const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/grpo-care.json', import.meta.url), 'utf8')) as {
  tokens: number;
  cases: Case[];
};

/** Token texts whose `<answer>` body is exactly tokens [first, end): the tag before, `</answer>` after. */
function textsWithSpan([first, end]: [number, number], tokens: number): string[] {
  const texts = Array.from({ length: tokens }, () => ' so');
  if (end === 0) return texts;
  texts[first - 1] = '<answer>';
  for (let t = first; t < end; t++) texts[t] = String(t);
  if (end < tokens) texts[end] = '</answer>';
  return texts;
}

/** A run whose rewards are accuracy and format, combined with weight 1 each (the authors' sum). */
function input(c: Case) {
  return {
    rewards: c.rewards,
    groupSizes: [c.rewards.length],
    rewardComponents: [c.accuracy, c.rewards.map((r, i) => r - c.accuracy[i])],
    rewardNames: ['accuracy', 'format'],
    rewardWeights: [1, 1],
    referenceLogprobs: c.refLogprobs,
    tokenTexts: c.spans.map((span) => textsWithSpan(span, fixture.tokens)),
  };
}

describe('grpo-care against the port of the authors’ compute_loss', () => {
  it.each(fixture.cases.map((c, k) => ({ ...c, k })))('group $k', (c) => {
    c.spans.forEach((span, i) =>
      expect(answerTokenRange(input(c).tokenTexts[i], ['<answer>', '</answer>'])).toEqual(span),
    );
    expectClose(
      answerConfidences(c.refLogprobs, input(c).tokenTexts, ['<answer>', '</answer>'], 0.95),
      c.expectedConfidence,
      1e-12,
    );
    expectClose(careRewards(input(c)), c.expectedRewards, 1e-12);
    expect(advantageEstimators.get('grpo-care')).toBe(careAdvantage);
    const result = careAdvantage(input(c));
    expectClose(result.advantages, c.expectedAdvantages, 1e-6);
    expect(Array.from(result.keep)).toEqual(c.rewards.map(() => 1));
  });

  it('the fixture exercises a bonus, no bonus for lack of accuracy, and one for lack of consistency', () => {
    const bonuses = fixture.cases.flatMap((c) => c.expectedBonus);
    expect(bonuses.some((b) => b > 0)).toBe(true);
    const accurateWithout = fixture.cases.some((c) => {
      const mean = c.accuracy.reduce((a, b) => a + b, 0) / c.accuracy.length;
      return c.accuracy.some((a, i) => a > 0.1 && a >= mean && c.expectedBonus[i] === 0);
    });
    expect(accurateWithout).toBe(true);
  });
});

describe('grpo-care', () => {
  const tags: [string, string] = ['<answer>', '</answer>'];

  it('finds the answer body by text across token boundaries, and the last <answer> of several', () => {
    expect(answerTokenRange(['<ans', 'wer>', '4', '2', '</', 'answer>'], tags)).toEqual([2, 4]);
    expect(answerTokenRange(['<answer>', '1', '</answer>', ' again <answer>', '7', '</answer>'], tags)).toEqual([4, 5]);
    // A token that holds part of a tag is not an answer token; no closing tag runs to the end.
    expect(answerTokenRange(['<answer>4', '2', '</answer>'], tags)).toEqual([1, 2]);
    expect(answerTokenRange(['<answer>', '4', '2'], tags)).toEqual([1, 3]);
    expect(answerTokenRange(['no', ' tags'], tags)).toEqual([0, 0]);
  });

  it('the margin lets a slightly less likely accurate answer share the bonus', () => {
    // Two accurate samples with answer likelihoods 0.5 and 0.505 (one answer token each), one wrong.
    const base = {
      rewards: [1, 1, 0],
      groupSizes: 3,
      rewardComponents: [[1, 1, 0]],
      rewardNames: ['accuracy'],
      referenceLogprobs: [
        [0, Math.log(0.5)],
        [0, Math.log(0.505)],
        [0, -3],
      ],
      tokenTexts: [0, 1, 2].map(() => ['<answer>', 'x', '</answer>']),
    };
    expect(Array.from(careRewards(base))).toEqual([1.5, 1.5, 0]);
    expect(Array.from(careRewards(base, { consistencyMargin: 0 }))).toEqual([1, 1.5, 0]);
    expect(Array.from(careRewards(base, { consistencyMargin: 0, bonusCoefficient: 1 }))).toEqual([1, 2, 0]);
  });

  it('reads the accuracy from the reward accuracyReward names, and leaves unscored samples out', () => {
    const base = {
      rewards: [1, 1, null],
      groupSizes: 3,
      rewardComponents: [
        [0, 0, 0],
        [1, 1, 1],
      ],
      rewardNames: ['format', 'correct'],
      referenceLogprobs: [[-0.1], [-0.1], [-0.1]],
      tokenTexts: [['x'], ['x'], ['x']],
    };
    // The first reward (format) scores 0 everywhere: no sample is accurate.
    expect(Array.from(careRewards(base))).toEqual([1, 1, Number.NaN]);
    // No <answer>: c = exp(0) clamped to 0.95 for both, so both are consistent.
    expect(Array.from(careRewards(base, { accuracyReward: 'correct' }))).toEqual([1.5, 1.5, Number.NaN]);
  });

  it('names what is missing', () => {
    const base = { rewards: [1, 0], groupSizes: 2, rewardComponents: [[1, 0]], rewardNames: ['accuracy'] };
    expect(() => careRewards(base)).toThrow(/needs input\.referenceLogprobs/);
    expect(() => careRewards({ ...base, referenceLogprobs: [[0], [0]] })).toThrow(/needs input\.tokenTexts/);
    expect(() => careRewards({ ...base, referenceLogprobs: [[0]], tokenTexts: [['x']] })).toThrow(
      /referenceLogprobs has 1 entries but rewards has 2/,
    );
    expect(() => careRewards(base, { accuracyReward: 'correct' })).toThrow(
      /"correct" is not among the rewards \(accuracy\)/,
    );
    const settings = { rewardNames: ['accuracy', 'format'] } as unknown as RunSettings;
    expect(careAdvantagePart.refuses!({ accuracyReward: 'correct' }, settings)).toEqual([
      'algorithm.advantageOptions.accuracyReward: "correct" is not a reward of this run (rewards: accuracy, format)',
    ]);
    expect(careAdvantagePart.refuses!({}, settings)).toEqual([]);
  });
});
