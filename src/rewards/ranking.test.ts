/**
 * The ranking rewards (GroupRank #51) against hand-computed values, and NDCG with ties against the
 * definition it implements: the mean DCG over every order of the tied documents, enumerated.
 */
import { describe, expect, it } from 'vitest';
import { parseScores, rankingNdcg, rankingRecall, scoreDistribution, tieAwareWeights } from './ranking.js';
import { rewardFactories } from './factories.js';
import { makeRewardInput, type RewardFn } from './types.js';

const score = (reward: RewardFn, completion: string, relevance: unknown) =>
  reward(makeRewardInput({ completion, row: { prompt: 'q', relevance } }));
const log2 = Math.log2;

describe('ranking-ndcg', () => {
  const ndcg = rankingNdcg();
  // relevance [2, 0, 1], exponential gains [3, 0, 1]; ideal DCG = 3/1 + 1/log2(3) = 3.63093
  const ideal = 3 + 1 / log2(3);
  const cases: Array<[string, unknown, number | null, string]> = [
    ['<answer>2, 0, 1</answer>', [2, 0, 1], 1, 'scores in the gold order'],
    ['<answer>9 1 5</answer>', [2, 0, 1], 1, 'any scale: only the order counts'],
    // order doc1 (rel 0), doc2 (rel 1), doc0 (rel 2): DCG = 0 + 1/log2(3) + 3/log2(4)
    ['<answer>0,2,1</answer>', [2, 0, 1], (1 / log2(3) + 3 / 2) / ideal, 'reversed best two: partial'],
    // every document tied: each gets the mean discount (1 + 1/log2 3 + 1/2) / 3
    ['<answer>1,1,1</answer>', [2, 0, 1], (4 * (1 + 1 / log2(3) + 0.5)) / 3 / ideal, 'all tied: a random order'],
    ['<answer>2,0</answer>', [2, 0, 1], 0, 'two scores for three documents: malformed'],
    ['<answer>2,0,x</answer>', [2, 0, 1], 0, 'a score that is not a number: malformed'],
    ['2,0,1', [2, 0, 1], 0, 'no <answer> tag: malformed'],
    ['<answer>1,0</answer>', [0, 0], null, 'no relevant document: not applicable'],
  ];
  it.each(cases)('%s vs %j → %s (%s)', async (completion, relevance, expected) => {
    const value = await score(ndcg, completion, relevance);
    if (expected === null) expect(value).toBeNull();
    else expect(value).toBeCloseTo(expected, 10);
  });

  it('k cuts the ranking; linear gains use rel itself', async () => {
    expect(await score(rankingNdcg({ k: 1 }), '<answer>0,2,1</answer>', [2, 0, 1])).toBe(0); // top-1 is irrelevant
    // linear gains [2, 0, 1]: DCG = 1/log2(3) + 2/2, ideal = 2 + 1/log2(3)
    const linear = await score(rankingNdcg({ gain: 'linear' }), '<answer>0,2,1</answer>', [2, 0, 1]);
    expect(linear).toBeCloseTo((1 / log2(3) + 1) / (2 + 1 / log2(3)), 10);
  });

  it('with ties equals the mean DCG over every order of the tied documents', async () => {
    const relevance = [3, 0, 2, 2, 1, 0];
    const scores = [5, 5, 4, 4, 4, 1]; // blocks {0,1}, {2,3,4}, {5}
    const gain = (grade: number) => 2 ** grade - 1;
    const dcg = (order: number[]) => order.reduce((sum, doc, rank) => sum + gain(relevance[doc]!) / log2(rank + 2), 0);
    const permutations = (items: number[]): number[][] =>
      items.length <= 1
        ? [items]
        : items.flatMap((item, i) => permutations(items.filter((_, j) => j !== i)).map((rest) => [item, ...rest]));
    const orders = permutations([0, 1]).flatMap((a) => permutations([2, 3, 4]).map((b) => [...a, ...b, 5]));
    const expected = orders.reduce((sum, order) => sum + dcg(order), 0) / orders.length / dcg([0, 2, 3, 4, 1, 5]);
    expect(await score(ndcg, `<answer>${scores.join(',')}</answer>`, relevance)).toBeCloseTo(expected, 10);
  });

  it('a malformed row is an error naming the column', () => {
    expect(() => score(ndcg, '<answer>1</answer>', undefined)).toThrow(/no column "relevance"/);
    expect(() => score(ndcg, '<answer>1 2</answer>', [1, -1])).toThrow(
      /column "relevance"\[1\] must be a non-negative number/,
    );
    expect(() => score(ndcg, '<answer>1 2</answer>', [1, '2'])).toThrow(/"relevance"\[1\]/);
  });
});

describe('ranking-recall', () => {
  // relevance [0, 2, 0, 1]: relevant docs 1 and 3; scores 3, 1, 1, 0 put doc0 first, docs 1 and 2 tied at ranks 2–3
  const cases: Array<[number | undefined, number, string]> = [
    [undefined, 0.5 / 2, 'k = R = 2: doc1 is in the top 2 half the time, doc3 never'],
    [3, 1 / 2, 'k = 3: doc1 always in, doc3 out'],
    [4, 1, 'k = every document'],
    [1, 0, 'k = 1: the top document is irrelevant'],
  ];
  it.each(cases)('k = %s → %s (%s)', async (k, expected) => {
    expect(await score(rankingRecall({ k }), '<answer>3 1 1 0</answer>', [0, 2, 0, 1])).toBeCloseTo(expected, 10);
  });
  it('relevantFrom raises the bar; no relevant document is not applicable', async () => {
    // only doc1 (grade 2) is relevant; k = R = 1: doc0 is first → 0
    expect(await score(rankingRecall({ relevantFrom: 2 }), '<answer>3 1 1 0</answer>', [0, 2, 0, 1])).toBe(0);
    expect(await score(rankingRecall(), '<answer>3 1</answer>', [0, 0])).toBeNull();
  });
});

describe('score-distribution', () => {
  const reward = scoreDistribution({ maxScore: 2 });
  const cases: Array<[string, number[], number, string]> = [
    ['<answer>2 0</answer>', [2, 0], 1, 'the gold grades exactly'],
    ['<answer>1 0</answer>', [2, 0], 1 - 0.5 / 2, 'one off by half the scale'],
    ['<answer>9 0</answer>', [2, 0], 1 - 1 / 2, 'an error is capped at the whole scale'],
    ['<answer>0 2</answer>', [2, 0], 0, 'both as far off as they can be'],
    ['<answer>2</answer>', [2, 0], 0, 'too few scores: malformed'],
  ];
  it.each(cases)('%s vs %j → %s (%s)', async (completion, relevance, expected) => {
    expect(await score(reward, completion, relevance)).toBeCloseTo(expected, 10);
  });
  it('needs a positive maxScore', () => {
    expect(() => scoreDistribution({ maxScore: 0 })).toThrow(/maxScore must be positive/);
    expect(() => rewardFactories.get('score-distribution').create({})).toThrow(/score-distribution.*maxScore/);
  });
});

describe('parsing and ties', () => {
  it('reads one number per document from the tag, or the whole text with tag ""', () => {
    expect(parseScores('<think>x</think><answer> 3, 1.5\n0 </answer>', 3)).toEqual([3, 1.5, 0]);
    expect(parseScores('3 1 0', 3, '')).toEqual([3, 1, 0]);
    expect(parseScores('<answer>3 1 0 4</answer>', 3)).toBeNull();
    expect(parseScores('<answer></answer>', 0)).toBeNull();
  });
  it('tie blocks share the mean weight of their positions', () => {
    expect(tieAwareWeights([1, 2, 1], (position) => position)).toEqual([1.5, 0, 1.5]);
  });
  it('the factories refuse bad options naming the field', () => {
    expect(() => rewardFactories.get('ranking-ndcg').create({ k: 0 })).toThrow(
      /reward "ranking-ndcg": bad options: k:/,
    );
    expect(() => rewardFactories.get('ranking-ndcg').create({ gain: 'cubic' })).toThrow(/gain:/);
    expect(() => rewardFactories.get('ranking-recall').create({ tag: '<answer>' })).toThrow(/tag:/);
    expect(() => rewardFactories.get('ranking-recall').create({ cutoff: 3 })).toThrow(/cutoff/);
  });
});
