/** Table-driven tests of length, repetition, truthfulness and group rewards (ALGORITHMS.md §5.3–5.5, §5.10). */
import { describe, expect, it } from 'vitest';
import { lengthAmongCorrect, outcomeGated, pairwiseWinRate, trustWeighted } from './group.js';
import {
  lengthBudget,
  overlongPenalty,
  repetitionPenalty,
  shrinkingBudget,
  softOverlongPunishment,
  ternaryTruthfulness,
} from './length.js';
import { createReward } from './factories.js';
import { mathAnswer } from './math.js';
import { annealedWeight } from './combine.js';
import { makeRewardInput, type RewardFn, type RewardInput } from './types.js';

describe('softOverlongPunishment (§5.4)', () => {
  it('L_max=10, L_cache=4: lengths [6,7,8,10,11] → [0, −0.25, −0.5, −1, −1]', () => {
    expect([6, 7, 8, 10, 11].map((length) => overlongPenalty(length, 10, 4))).toEqual([0, -0.25, -0.5, -1, -1]);
  });
  it('counts token ids, or characters when asked', () => {
    const tokens = softOverlongPunishment({ maxLength: 10, cacheLength: 4 });
    expect(tokens(makeRewardInput({ completion: 'x', completionIds: [1, 2, 3, 4, 5, 6, 7] }))).toBe(-0.25); // 7 ids
    const characters = softOverlongPunishment({ maxLength: 10, cacheLength: 4, unit: 'characters' });
    expect(characters(makeRewardInput({ completion: 'abcdefgh' }))).toBe(-0.5); // 8 characters
    expect(() => tokens(makeRewardInput({ completion: 'text without ids' }))).toThrow(/no completion token ids/);
  });
});

describe('lengthBudget', () => {
  it('fixed and step-decaying budgets', () => {
    const fixed = lengthBudget({ budget: 5, unit: 'characters' });
    expect(fixed(makeRewardInput({ completion: '12345' }))).toBe(1); // exactly at budget
    expect(fixed(makeRewardInput({ completion: '123456' }))).toBe(0); // one over
    const decaying = lengthBudget({ budget: annealedWeight({ from: 10, to: 4, steps: 6 }), unit: 'characters' });
    expect(decaying(makeRewardInput({ completion: '1234567', step: 0 }))).toBe(1); // budget 10 at step 0
    expect(decaying(makeRewardInput({ completion: '1234567', step: 6 }))).toBe(0); // budget 4 at step 6
  });

  it("Train-Long-Think-Short's shrinking budget max(1, B₀·γ^⌊t/T⌋), by name too", () => {
    const budget = shrinkingBudget(256, 0.5, 10);
    expect([0, 9, 10, 25, 79, 80, 200].map(budget)).toEqual([256, 256, 128, 64, 2, 1, 1]); // floor at 1 token
    const reward = createReward('length-budget', { budget: 8, decayFactor: 0.5, decayEvery: 2, unit: 'characters' });
    const sixChars = (step: number) => (reward as RewardFn)(makeRewardInput({ completion: '123456', step }));
    expect([0, 1, 2, 3, 4].map(sixChars)).toEqual([1, 1, 0, 0, 0]); // budgets 8, 8, 4, 4, 2
    expect(() => createReward('length-budget', { budget: 8, decayFactor: 0.5 })).toThrow(
      /decayFactor and decayEvery go together/,
    );
    expect(() => createReward('length-budget', { budget: 8, decayFactor: 1.5, decayEvery: 2 })).toThrow(/decayFactor/);
    expect(() => shrinkingBudget(8, 0.5, 0)).toThrow(/decay interval/);
  });
});

describe('repetitionPenalty (§5.5)', () => {
  const cases: Array<[string, number, number, string]> = [
    ['a b a b a b', 2, -0.6, '§5.5 vector: 2 distinct of 5 bigrams'],
    ['a b c d', 2, 0, 'no repeated bigram'],
    ['a', 3, 0, 'shorter than one n-gram'],
    ['x x x x', 1, -0.75, 'one distinct unigram of four'],
  ];
  it.each(cases)('%j with n=%d → %d (%s)', (completion, ngramSize, expected) => {
    expect(repetitionPenalty({ ngramSize })(makeRewardInput({ completion }))).toBeCloseTo(expected, 12);
  });
  it('works on token ids', () => {
    expect(
      repetitionPenalty({ ngramSize: 2, unit: 'tokens' })(
        makeRewardInput({ completion: '', completionIds: [1, 2, 1, 2, 1, 2] }),
      ),
    ).toBeCloseTo(-0.6, 12);
  });
});

describe('ternaryTruthfulness (§5.3)', () => {
  it('["42", "I don\'t know", "41"] with gold 42 → [1, 0, −1]', () => {
    const reward = ternaryTruthfulness();
    expect(
      ['42', "I don't know", '41'].map((completion) => reward(makeRewardInput({ completion, row: { answer: '42' } }))),
    ).toEqual([1, 0, -1]);
  });
});

function group(completions: string[], answer: string, ids?: number[][]): RewardInput[] {
  return completions.map((completion, index) =>
    makeRewardInput({
      completion,
      group: completions,
      indexInGroup: index,
      row: { answer },
      completionIds: ids?.[index],
    }),
  );
}

describe('pairwiseWinRate (§5.10)', () => {
  it('judgements consistent with scores [0.71, 0.70, 0.50, 0.20] → [1, 2/3, 1/3, 0]', async () => {
    const hidden = new Map([
      ['a', 0.71],
      ['b', 0.7],
      ['c', 0.5],
      ['d', 0.2],
    ]);
    const reward = pairwiseWinRate({ prefers: (x, y) => hidden.get(x.completion)! > hidden.get(y.completion)! });
    const scores = (await reward.scoreGroup(group(['a', 'b', 'c', 'd'], ''))) as number[];
    expect(scores.map((value) => Number(value.toFixed(4)))).toEqual([1, 0.6667, 0.3333, 0]);
  });
  it('a group of one has no peers: null', async () => {
    expect(await pairwiseWinRate({ prefers: () => true }).scoreGroup(group(['a'], ''))).toEqual([null]);
  });
});

describe('lengthAmongCorrect (GRPO-λ)', () => {
  it('shapes by length among correct peers once enough are correct', async () => {
    const reward = lengthAmongCorrect({ correctness: mathAnswer(), alpha: 0.5, unit: 'characters' });
    // 3 of 4 correct (≥ τ = 0.5); correct lengths 9, 12, 19 characters → ℓ = 0, 0.3, 1 → 1 − 0.5ℓ
    expect(
      await reward.scoreGroup(group(['\\boxed{4}', 'so \\boxed{4}', 'so we get \\boxed{4}', '\\boxed{5}'], '4')),
    ).toEqual([1, 0.85, 0.5, 0]);
    // 1 of 4 correct (< τ): plain 0/1
    expect(await reward.scoreGroup(group(['so we get \\boxed{4}', '1', '2', '3'], '4'))).toEqual([1, 0, 0, 0]);
  });
});

describe('trustWeighted and outcomeGated group rewards', () => {
  const outcome = ({ completion }: RewardInput) => (completion.startsWith('right') ? 1 : 0);
  const thinking = ({ completion }: RewardInput) => Number(completion.split(' ')[1]);
  const inputs = (step: number) =>
    ['right 0.3', 'right 0.4', 'wrong 0.8', 'wrong 0.6'].map((completion) => makeRewardInput({ completion, step }));
  it('Trust-GRPO §5.6 vector through the group form, step taken from the inputs', async () => {
    const reward = trustWeighted({ outcome, thinking });
    expect(((await reward.scoreGroup(inputs(0))) as number[]).map((value) => Number(value.toFixed(4)))).toEqual([
      1.0634, 1.0846, 0.1691, 0.1268,
    ]);
    expect(((await reward.scoreGroup(inputs(500))) as number[]).map((value) => Number(value.toFixed(4)))).toEqual([
      1.0233, 1.0311, 0.0622, 0.0467,
    ]);
  });
  it('Posterior-GRPO §5.7 vector, the process reward asked only for successes', async () => {
    let asked = 0;
    const process = ({ completion }: RewardInput) => {
      asked++;
      return Number(completion.split(' ')[1]);
    };
    const group = ['right 0.9', 'right 0.2', 'wrong 0.8', 'wrong 0.1'].map((completion) =>
      makeRewardInput({ completion }),
    );
    expect(await outcomeGated({ outcome, process, lambda: 0.5 }).scoreGroup(group)).toEqual([1.45, 1.1, 0, 0]);
    expect(asked).toBe(2);
  });
});
