/** Tests of BLEU (§5.9 vectors, smoothing, loop-vs-vectorised equivalence), ROUGE-L and character F1. */
import { describe, expect, it } from 'vitest';
import { bleu, bleuScores, charF1Score, rougeL, rougeLScore } from './similarity.js';
import { makeRewardInput } from './types.js';

/** A plain per-sentence BLEU with no smoothing: the loop oracle for the vectorised version. */
function loopBleu(candidate: number[], references: number[][]): number {
  let logSum = 0;
  for (let n = 1; n <= 4; n++) {
    const grams = (sequence: number[]) => {
      const counts = new Map<string, number>();
      for (let i = 0; i + n <= sequence.length; i++)
        counts.set(sequence.slice(i, i + n).join(), (counts.get(sequence.slice(i, i + n).join()) ?? 0) + 1);
      return counts;
    };
    const candidateCounts = grams(candidate);
    let matched = 0;
    let total = 0;
    for (const [gram, count] of candidateCounts) {
      total += count;
      matched += Math.min(count, Math.max(...references.map((reference) => grams(reference).get(gram) ?? 0)));
    }
    if (matched === 0) return 0;
    logSum += Math.log(matched / total) / 4;
  }
  const lengths = references.map((reference) => reference.length);
  const r = lengths.reduce((best, length) =>
    Math.abs(length - candidate.length) < Math.abs(best - candidate.length) ||
    (Math.abs(length - candidate.length) === Math.abs(best - candidate.length) && length < best)
      ? length
      : best,
  );
  return (candidate.length > r ? 1 : Math.exp(1 - r / candidate.length)) * Math.exp(logSum);
}

describe('bleuScores (§5.9)', () => {
  it('matches the spec vectors', () => {
    const scores = bleuScores(
      [
        [1, 2, 3, 4, 5],
        [1, 2, 3, 4],
        [1, 1, 1, 1],
      ],
      [[[1, 2, 3, 4, 6]], [[1, 2, 3, 4, 5, 6]], [[1, 2, 3, 4]]],
    );
    expect(scores[0]).toBeCloseTo(0.66874, 5); // p = [4/5, 3/4, 2/3, 1/2], BP = 1
    expect(scores[1]).toBeCloseTo(Math.exp(-0.5), 10); // all p_n = 1, BP = e^{−0.5}
    expect(scores[2]).toBe(0); // p2 = 0 and no smoothing
  });
  it('smoothing variants on [1,1,1,1] vs [1,2,3,4] (p1 = 1/4, no higher-order match, BP = 1)', () => {
    const run = (smoothing: 'floor' | 'add-k' | 'exp') =>
      bleuScores([[1, 1, 1, 1]], [[[1, 2, 3, 4]]], { smoothing })[0]!;
    expect(run('floor')).toBeCloseTo((0.25 * (0.1 / 3) * (0.1 / 2) * (0.1 / 1)) ** 0.25, 12); // ε / count for zero matches
    expect(run('add-k')).toBeCloseTo((0.25 * (1 / 4) * (1 / 3) * (1 / 2)) ** 0.25, 12); // (0+1)/(count+1) for n ≥ 2
    expect(run('exp')).toBeCloseTo((0.25 * (1 / (2 * 3)) * (1 / (4 * 2)) * (1 / (8 * 1))) ** 0.25, 12); // 1/(2^k · count)
  });
  it('the vectorised batch equals the per-sentence loop on random data with several references', () => {
    let seed = 7;
    const random = (limit: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % limit;
    const sequence = () => Array.from({ length: 4 + random(12) }, () => random(6));
    const candidates = Array.from({ length: 40 }, sequence);
    const references = candidates.map(() => Array.from({ length: 1 + random(3) }, sequence));
    const batch = bleuScores(candidates, references);
    expect(batch.filter((value) => value > 0).length).toBeGreaterThan(5); // the data is not all zeros
    candidates.forEach((candidate, index) =>
      expect(batch[index]).toBeCloseTo(loopBleu(candidate, references[index]!), 12),
    );
  });
  it('checks its input', () => {
    expect(() => bleuScores([[1]], [])).toThrow(/1 candidates but 0/);
    expect(() => bleuScores([[1]], [[]])).toThrow(/candidate 0 has no reference/);
  });
});

describe('bleu reward', () => {
  it('scores a group on words or on ids', async () => {
    const words = bleu({ smoothing: 'none' });
    const inputs = ['the cat sat on the mat', 'a dog'].map((completion) =>
      makeRewardInput({ completion, row: { reference: 'the cat sat on the mat' } }),
    );
    expect(await words.scoreGroup(inputs)).toEqual([1, 0]); // identical sentence 1; no shared word 0
    const ids = bleu({ unit: 'ids' });
    const idInputs = [
      makeRewardInput({ completion: '', completionIds: [1, 2, 3, 4, 5], row: { reference: [[1, 2, 3, 4, 6]] } }),
    ];
    expect((await ids.scoreGroup(idInputs))[0]).toBeCloseTo(0.66874, 5);
    expect(() => ids.scoreGroup([makeRewardInput({ completion: '', row: { reference: 'text' } })])).toThrow(
      /array of integer ids/,
    );
  });
});

describe('rougeL and charF1', () => {
  const cases: Array<[string, string, number, string]> = [
    ['the cat sat', 'the cat sat down', 6 / 7, 'LCS 3: P = 1, R = 3/4'],
    ['cat the', 'the cat', 0.5, 'LCS 1 of 2 words'],
    ['dog', 'the cat', 0, 'nothing shared'],
  ];
  it.each(cases)('ROUGE-L %j vs %j → %d (%s)', (candidate, reference, expected) =>
    expect(rougeLScore(candidate, reference)).toBeCloseTo(expected, 12),
  );
  it('reward form reads the reference column', () => {
    expect(rougeL()(makeRewardInput({ completion: 'The cat', row: { reference: 'the cat' } }))).toBe(1);
  });
  it('character F1 counts a multiset overlap', () => {
    expect(charF1Score('abc', 'abd')).toBeCloseTo(2 / 3, 12); // a, b shared of 3 + 3
    expect(charF1Score('aab', 'ab')).toBeCloseTo(0.8, 12); // 2 shared, (2·2)/(3+2)
    expect(charF1Score('', 'ab')).toBe(0);
  });
});
