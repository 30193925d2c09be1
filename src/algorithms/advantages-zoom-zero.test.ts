/**
 * Zoom-Zero's token-selective credit assignment (#148) against a float64 torch port of the authors'
 * code (scripts/reference/zoom_zero.py → test/fixtures/zoom-zero.json: custom.py's masks and
 * core_algos.py compute_grpo_select_outcome_advantage), a hand-worked group, and its refusals.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { zoomZeroAdvantage, zoomZeroAdvantagePart } from './advantages-zoom-zero.js';
import type { RunSettings } from './registry.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/zoom-zero.json', import.meta.url), 'utf8')) as {
  marker: number[];
  answerTokens: number;
  groupSizes: number[];
  completions: number[][];
  rewards: Record<'format' | 'iou' | 'answer' | 'zoom', number[]>;
  advantages: number[][];
  advantagesWithoutZoom: number[][];
};

const names = ['format', 'iou', 'answer', 'zoom'] as const;
const input = {
  rewards: fixture.completions.map(() => 1),
  groupSizes: fixture.groupSizes,
  completionIds: fixture.completions,
  rewardNames: [...names],
  rewardComponents: names.map((name) => fixture.rewards[name]),
};

const expectClose = (actual: ArrayLike<number>, expected: readonly number[]) => {
  expect(actual.length).toBe(expected.length);
  expected.forEach((value, t) => expect(actual[t]).toBeCloseTo(value, 5));
};

describe('zoom-zero advantage (token-selective credit assignment)', () => {
  it('equals the authors’ grpo_select on random groups (a group of one, completions without the marker)', () => {
    const result = zoomZeroAdvantage(input, { markerIds: fixture.marker, answerTokens: fixture.answerTokens });
    fixture.advantages.forEach((expected, i) => expectClose(result.tokenAdvantages![i], expected));
    expect(Array.from(result.keep)).toEqual(fixture.completions.map(() => 1));
  });

  it('without a zoom reward the zoom score is 0, as their zero-filled dict', () => {
    const result = zoomZeroAdvantage(input, { markerIds: fixture.marker, zoomReward: null });
    fixture.advantagesWithoutZoom.forEach((expected, i) => expectClose(result.tokenAdvantages![i], expected));
  });

  it('a hand-worked group: thinking and span tokens take the IoU, the answer tokens the answer reward', () => {
    // A: marker [7] at index 3, answerTokens 1, so token 2 is the answer token: scores
    // [0.6/3, 0.6/3, 1/3, 0.6/3] (iou 0.6, answer 1). B has no marker: its span starts at its last token
    // and its answer token is token 0: [0/3, 0/3] (iou 0, answer 0).
    const result = zoomZeroAdvantage(
      {
        rewards: [1, 1],
        groupSizes: 2,
        completionIds: [
          [1, 2, 3, 7],
          [4, 5],
        ],
        rewardNames: ['format', 'iou', 'answer'],
        rewardComponents: [
          [0, 0],
          [0.6, 0],
          [1, 0],
        ],
      },
      { markerIds: [7], answerTokens: 1, zoomReward: null, epsilon: 0 },
    );
    const scores = [0.2, 0.2, 1 / 3, 0.2, 0, 0];
    const mean = scores.reduce((a, b) => a + b, 0) / 6;
    const std = Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / 5);
    const expected = scores.map((s) => (s - mean) / std);
    expectClose(result.tokenAdvantages![0], expected.slice(0, 4));
    expectClose(result.tokenAdvantages![1], expected.slice(4));
    expect(result.advantages[0]).toBeCloseTo(expected.slice(0, 4).reduce((a, b) => a + b, 0) / 4, 5);
  });

  it('an unscored sample gets zeros and leaves its group’s statistics', () => {
    const result = zoomZeroAdvantage(
      {
        rewards: [1, null, 1],
        groupSizes: 3,
        completionIds: [[1], [1, 2], [3]],
        rewardNames: ['format', 'iou', 'answer'],
        rewardComponents: [
          [1, 1, 0],
          [0, 0, 0],
          [0, 0, 0],
        ],
      },
      { markerIds: [9], zoomReward: null },
    );
    expect(Array.from(result.keep)).toEqual([1, 0, 1]);
    expect(Array.from(result.tokenAdvantages![1])).toEqual([0, 0]);
    // Two scored tokens 1/3 and 0: mean 1/6, sample std √(1/18).
    expect(result.tokenAdvantages![0][0]).toBeCloseTo(1 / 6 / (Math.sqrt(1 / 18) + 1e-6), 5);
  });

  it('equal scores give zeros (no NaN); mis-sized completionIds are an error', () => {
    const equal = {
      rewards: [1, 1],
      groupSizes: 2,
      completionIds: [[1, 2], [3]],
      rewardNames: ['format', 'iou', 'answer'],
      rewardComponents: [
        [1, 1],
        [0.5, 0.5],
        [0.5, 0.5],
      ],
    };
    const result = zoomZeroAdvantage(equal, { markerIds: [9], zoomReward: null });
    expect(result.tokenAdvantages!.flatMap((row) => Array.from(row))).toEqual([0, 0, 0]);
    expect(Array.from(result.stdIsZero)).toEqual([1]);
    expect(() => zoomZeroAdvantage({ ...equal, completionIds: [[1]] }, { markerIds: [9], zoomReward: null })).toThrow(
      /completionIds has 1 entries but rewards has 2/,
    );
  });

  it('needs markerIds, and refuses reward names the run does not have, before compute', () => {
    expect(() => zoomZeroAdvantage(input, {})).toThrow(/markerIds/);
    const settings = { rewardNames: ['format', 'iou', 'answer'] } as unknown as RunSettings;
    expect(zoomZeroAdvantagePart.refuses!({ markerIds: [1] }, settings)).toEqual([
      expect.stringMatching(/^algorithm\.advantageOptions\.zoomReward: "zoom" is not a reward of this run/),
    ]);
    expect(zoomZeroAdvantagePart.refuses!({ markerIds: [1], zoomReward: null }, settings)).toEqual([]);
    expect(zoomZeroAdvantagePart.refuses!({}, settings)[0]).toMatch(/markerIds/);
  });
});
