/**
 * StealthRL's `stealthrl` reward (#34) by its registered name: the paper's α·z(1 − p_ens) + β·sim
 * with the authors' validity check and running z-score, on the task's generated sentences and the
 * detector ensemble made here. Near misses: a copy of the source keeps its meaning but stays flagged;
 * a fluent rewrite with another meaning evades but loses similarity; too short or too long is −0.5.
 */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import {
  ensembleProbability,
  machineSentence,
  plainSentence,
  runningZscore,
  seededPick,
  stealthDetectors,
  stealthMeaning,
} from './stealthrl.js';
import { makeRewardInput, type RewardFn } from './types.js';

const meaning = { subject: 'farmer', verb: 'repairs', object: 'fence', place: 'river', time: 'morning' };
// 16 words: opener, adverb and a 4-word closer around the 10-word plain sentence.
const source =
  'furthermore the farmer meticulously repairs the fence near the river every morning to ensure optimal outcomes';
const plain = plainSentence(meaning); // the farmer repairs the fence near the river every morning
const otherMeaning = 'the pilot opens the gate near the harbor every evening';
const reward = (options: Record<string, unknown> = {}) => createReward('stealthrl', options) as RewardFn;
const score = (fn: RewardFn, completion: string, row: Record<string, unknown> = { source }) =>
  fn(makeRewardInput({ completion, row })) as number;

describe('stealthrl', () => {
  it('the detectors made here flag the machine register and pass the plain one (fresh sentences)', () => {
    const pick = seededPick(987654);
    let right = 0;
    for (let i = 0; i < 50; i++) {
      const fresh = stealthMeaning(pick);
      if (ensembleProbability(machineSentence(fresh, pick)) > 0.5) right++;
      if (ensembleProbability(plainSentence(fresh)) < 0.5) right++;
    }
    expect(right).toBe(100);
    expect(stealthDetectors(0)).toBe(stealthDetectors(0)); // trained once per seed
  });

  it("without the z-score: (1 − p_ens) + 0.1·ROUGE-L, the paper's α = 1, β = 0.1", () => {
    const fn = reward({ detectorZscore: false });
    // The plain rewrite keeps all 10 of its words in order within the 16 of the source: F1 = 20/26.
    expect(score(fn, plain)).toBeCloseTo(1 - ensembleProbability(plain) + 0.1 * (10 / 13), 12);
    // Near miss: the copy has similarity 1 but the detectors still flag it: evasion below 0.5.
    const copy = score(fn, source);
    expect(1 - ensembleProbability(source)).toBeLessThan(0.5);
    expect(copy).toBeCloseTo(1 - ensembleProbability(source) + 0.1, 12);
    expect(copy).toBeLessThan(score(fn, plain) - 0.3);
    // Near miss: fluent and evading, but only "the … the near the every" (5 words) in common: F1 = 10/26.
    const changed = score(fn, otherMeaning);
    expect(changed).toBeCloseTo(1 - ensembleProbability(otherMeaning) + 0.1 * (10 / 26), 12);
    expect(1 - ensembleProbability(otherMeaning)).toBeGreaterThan(0.5);
    // α and β are options; the word detector alone with weight 1.
    expect(score(reward({ detectorZscore: false, semanticWeight: 1 }), otherMeaning)).toBeCloseTo(
      1 - ensembleProbability(otherMeaning) + 10 / 26,
      12,
    );
    expect(
      score(reward({ detectorZscore: false, semanticWeight: 0, ensembleWeights: { word: 1, char: 0 } }), plain),
    ).toBeCloseTo(1 - stealthDetectors(0).word.probability(plain), 12);
  });

  it("the authors' code's semantic rescaling min(1, sim / (1 − m)) is an option", () => {
    const fn = reward({ detectorZscore: false, semanticNormalizeMin: 0.9 });
    expect(score(fn, otherMeaning)).toBeCloseTo(1 - ensembleProbability(otherMeaning) + 0.1, 12); // 0.385/0.1 → 1
  });

  it("invalid paraphrases score −0.5 whatever the detector says: under 10 words, over 3× the source's", () => {
    const fn = reward();
    expect(score(fn, 'the farmer repairs the fence near the river')).toBe(-0.5); // 8 words
    expect(score(fn, '')).toBe(-0.5);
    expect(score(fn, Array.from({ length: 49 }, () => 'word').join(' '))).toBe(-0.5); // 49 > 3 × 16
    expect(score(fn, Array.from({ length: 48 }, () => 'word').join(' '))).not.toBe(-0.5);
    expect(score(reward({ minWords: 5, invalidScore: -1 }), 'too short')).toBe(-1);
  });

  it('the running z-score: Welford from mean 0.5, std 0.15; raw while std ≤ 1e-6; clipped to ±3', () => {
    const z = runningZscore();
    expect(z(0.2)).toBe(0.2); // count 1: the mean becomes the score and the std 0, so the raw score
    // count 2: mean 0.5, std √((0 + 0.6·0.3)/2) = 0.3, so (0.8 − 0.5)/(0.3 + 1e-6).
    expect(z(0.8)).toBeCloseTo(0.3 / (0.3 + 1e-6), 12);
    const clipped = runningZscore();
    for (let i = 0; i < 10; i++) clipped(0.5);
    expect(clipped(1)).toBe(3); // (1 − 6/11) / (√10/22) = 3.16, clipped
    // Through the reward: the first paraphrase gets its raw evasion, a later better one a positive z.
    const fn = reward();
    expect(score(fn, source)).toBeCloseTo(1 - ensembleProbability(source) + 0.1, 12);
    expect(score(fn, plain)).toBeGreaterThan(0.9);
  });

  it('refuses a row without the source and bad options, naming them', () => {
    expect(() => score(reward(), plain, {})).toThrow(/"source"/);
    expect(() => createReward('stealthrl', { semanticWeight: 'high' })).toThrow(
      /reward "stealthrl": bad options: semanticWeight/,
    );
    expect(() => createReward('stealthrl', { ensembleWeights: { word: 1 } })).toThrow(/ensembleWeights/);
  });
});
