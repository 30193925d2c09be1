/**
 * Tests of SmartSearch's composite reward (arXiv 2601.04888 Eq. 17) on hand-computed cases, among
 * them the paper's Table 5 episode (two searches, the second scored 0 for returning the politician
 * Kevin McCarthy instead of the actor), and of its registry entry.
 */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { smartSearchComposite, smartSearchReward } from './smartsearch.js';
import { makeRewardInput, type RewardEpisode, type RewardFn } from './types.js';

const numbers = { gamma: 0.1, phiMin: 0.5, phiMax: 0.3 };

/** An episode whose search calls carry the given scores (null = not scored). */
function episode(scores: (number | null)[]): RewardEpisode {
  const toolCalls = scores.map((reward, turn) => ({ name: 'search', arguments: {}, turn, result: '', reward }));
  return { messages: [], toolCalls, turns: scores.length + 1, turnRewards: [], stopReason: 'stop' };
}

const byCompletion: RewardFn = ({ completion }) => (completion === 'right' ? 1 : 0);

describe('smartSearchComposite (Eq. 17)', () => {
  it.each([
    [true, 3, 0, 1], // right, no low-quality query: the full 1
    [true, 1, 2, 0.8], // right: 1 − 0.1·2
    [true, 0, 7, 0.5], // right: 1 − 0.7 = 0.3, held at φ_min 0.5
    [false, 0, 3, 0], // wrong, no high-quality query: 0
    [false, 2, 1, 0.2], // wrong: 0 + 0.1·2
    [false, 5, 0, 0.3], // wrong: 0.5, held at φ_max 0.3
  ])('right=%s, n_correct=%i, n_wrong=%i → %f', (right, high, low, expected) => {
    expect(smartSearchComposite(right, high, low, numbers)).toBeCloseTo(expected, 12);
  });
});

describe('smartSearchReward', () => {
  it("scores the paper's Table 5 episode: S = (1, 0), wrong answer → min(γ·1, φ_max)", async () => {
    const reward = smartSearchReward({ correctness: byCompletion, ...numbers });
    expect(await reward(makeRewardInput({ completion: 'wrong', episode: episode([1, 0]) }))).toBeCloseTo(0.1, 12);
    // The refined trajectory of Table 6: both queries good and the answer right → 1.
    expect(await reward(makeRewardInput({ completion: 'right', episode: episode([1, 1]) }))).toBe(1);
    // Right after the bad query: 1 − γ.
    expect(await reward(makeRewardInput({ completion: 'right', episode: episode([1, 0]) }))).toBeCloseTo(0.9, 12);
  });

  it('counts only scored calls (null is neither good nor bad)', async () => {
    const reward = smartSearchReward({ correctness: byCompletion, ...numbers });
    expect(await reward(makeRewardInput({ completion: 'wrong', episode: episode([null, 1, null]) }))).toBeCloseTo(
      0.1,
      12,
    );
  });

  it('refuses an input without an episode, a score other than 0/1, and non-finite numbers', async () => {
    const reward = smartSearchReward({ correctness: byCompletion, ...numbers });
    await expect(async () => reward(makeRewardInput({ completion: 'right' }))).rejects.toThrow(/no episode/);
    await expect(async () => reward(makeRewardInput({ completion: 'right', episode: episode([0.5]) }))).rejects.toThrow(
      /must be 0 or 1, got 0.5/,
    );
    expect(() => smartSearchReward({ correctness: byCompletion, ...numbers, gamma: Number.NaN })).toThrow(/gamma/);
    // Calls never scored (an environment without scoreToolCalls) would silently give the bare outcome.
    const unscored: RewardEpisode = {
      ...episode([]),
      toolCalls: [{ name: 'search', arguments: {}, turn: 0, result: '' }],
    };
    await expect(async () => reward(makeRewardInput({ completion: 'right', episode: unscored }))).rejects.toThrow(
      /carry no scores/,
    );
    // An episode without calls is scored: the outcome alone.
    expect(await reward(makeRewardInput({ completion: 'right', episode: episode([]) }))).toBe(1);
  });
});

describe('the smartsearch registry entry', () => {
  it('requires gamma, phiMin and phiMax (no published values), naming the field', () => {
    expect(() => createReward('smartsearch', { phiMin: 0.5, phiMax: 0.3 })).toThrow(/gamma/);
    expect(() => createReward('smartsearch', { gamma: 0.1, phiMax: 0.3 })).toThrow(/phiMin/);
  });

  it('defaults the correctness to exact-match on <answer>', async () => {
    const reward = createReward('smartsearch', numbers) as RewardFn;
    const input = (completion: string) =>
      makeRewardInput({ completion, row: { answer: '1876' }, episode: episode([1, 0]) });
    expect(await reward(input('<answer>1876</answer>'))).toBeCloseTo(0.9, 12);
    expect(await reward(input('<answer>1914</answer>'))).toBeCloseTo(0.1, 12);
  });
});
