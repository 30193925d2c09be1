/**
 * STL for RESTL (#145): the parser (binding, errors), robustness against hand-computed values on
 * small traces, the templated English, and the five rewards on near misses that must score 0 or
 * partial, each with its reason; the `nl-to-stl` task's rows (round trip, held out, options).
 */
import { describe, expect, it } from 'vitest';
import { nlToStlTask } from '../data/tasks/nl-to-stl.js';
import { rewardFactories } from './factories.js';
import {
  formulaHorizon,
  parseStl,
  printStl,
  robustness,
  stlPropositions,
  stlSuccinctness,
  stlSymbols,
  stlTemplatedNl,
  stlTraceAgreement,
  templatedEnglish,
} from './stl.js';
import { makeRewardInput, type RewardFn } from './types.js';

const run = (reward: RewardFn, completion: string, row: Record<string, unknown>) =>
  reward(makeRewardInput({ prompt: '', completion, row })) as number;

describe('STL parser and robustness', () => {
  it('parses with the documented binding and prints back canonically', () => {
    expect(printStl(parseStl('G[0,5](x>3->F[0,2]y<1)'))).toBe('G[0,5] (x>3 -> F[0,2] y<1)');
    expect(parseStl('x>1 & y<2 | z>3').kind).toBe('or'); // & binds tighter than |
    expect(parseStl('!x>1 & y<2').kind).toBe('and'); // ! binds tightest
    expect(parseStl('a>1 -> b>1 -> c>1')).toEqual(parseStl('a>1 -> (b>1 -> c>1)')); // -> is right-associative
    expect(printStl(parseStl('x>1 U[0,3] (y<2 & z>1)'))).toBe('x>1 U[0,3] (y<2 & z>1)');
    expect(() => parseStl('G[3,1] x>1')).toThrow(/interval \[3,1\]/);
    expect(() => parseStl('G x>1')).toThrow(/expected "\["/);
    expect(() => parseStl('x>1 y<2')).toThrow(/unexpected "y"/);
    expect(() => parseStl('x=1')).toThrow(/unexpected character/);
  });

  it('robustness matches hand-computed values', () => {
    const trace = { x: [1, 4, 6, 2], y: [5, 5, 0, 0] };
    expect(robustness(parseStl('x>3'), trace)).toBe(-2); // 1 − 3
    expect(robustness(parseStl('G[0,2] x>0'), trace)).toBe(1); // min(1, 4, 6)
    expect(robustness(parseStl('F[1,3] x>3'), trace)).toBe(3); // max(1, 3, −1)
    expect(robustness(parseStl('x>3 -> y<2'), trace)).toBe(2); // max(−(−2), −3)
    // y>1 U[1,3] x>5: t'=1: min(x−5=−1, y(0)−1=4) = −1; t'=2: min(1, 4, 4) = 1; t'=3: min(−3, …) → max 1
    expect(robustness(parseStl('y>1 U[1,3] x>5'), trace)).toBe(1);
    expect(robustness(parseStl('!(x>3)'), trace)).toBe(2);
    expect(formulaHorizon(parseStl('F[1,3] G[0,2] x>1'))).toBe(5);
    expect(() => robustness(parseStl('w>1'), trace)).toThrow(/no signal "w"/);
  });

  it('renders templated English', () => {
    expect(templatedEnglish(parseStl('G[0,5] (x>3 -> F[0,2] y<1)'))).toBe(
      'always in 0 to 5 if x above 3 then eventually in 0 to 2 y below 1',
    );
  });
});

describe('RESTL rewards', () => {
  const row = {
    answer: 'G[0,5] (x>3 -> F[0,2] y<1)',
    nl: 'always in 0 to 5 if x above 3 then eventually in 0 to 2 y below 1',
  };
  const gold = row.answer;
  const rewards = {
    propositions: stlPropositions(),
    templated: stlTemplatedNl(),
    succinct: stlSuccinctness(),
    symbols: stlSymbols(),
    traces: stlTraceAgreement(),
  };
  const all = (completion: string) => Object.values(rewards).map((reward) => run(reward, completion, row));

  it('the gold formula, however spaced, earns every aspect in full', () => {
    expect(all(gold)).toEqual([1, 1, 1, 1, 1]);
    expect(all('G[0,5](x>3->F[0,2]y<1)')).toEqual([1, 1, 1, 1, 1]);
  });

  it('near misses: 0 or partial, each for its reason', () => {
    // Not a formula at all: every aspect 0.
    expect(all('G[0,5] (x>3 ->')).toEqual([0, 0, 0, 0, 0]);
    // Flipped comparison x<3: one of two atoms wrong → propositions 0.5; a different meaning.
    const flipped = all('G[0,5] (x<3 -> F[0,2] y<1)');
    expect(flipped[0]).toBe(0.5);
    expect(flipped[4]).toBeLessThan(1);
    // Redundant double negation: same meaning (traces 1, propositions 1) but less succinct: 5 of 7 nodes.
    const padded = all('!!G[0,5] (x>3 -> F[0,2] y<1)');
    expect([padded[0], padded[2], padded[4]]).toEqual([1, 5 / 7, 1]);
    expect(padded[1]).toBeLessThan(1); // renders as "not not always …"
    // Always/eventually swapped at the top: atoms all right, symbols partial, meaning differs.
    const swapped = all('F[0,5] (x>3 -> F[0,2] y<1)');
    expect(swapped[0]).toBe(1);
    expect(swapped[3]).toBeGreaterThan(0.8);
    expect(swapped[3]).toBeLessThan(1);
    expect(swapped[4]).toBeLessThan(1);
    // A different but equivalent way to write it (¬a ∨ b for a → b): meaning kept, succinctness 5/6.
    const rewritten = all('G[0,5] (!x>3 | F[0,2] y<1)');
    expect(rewritten[4]).toBe(1);
    expect(rewritten[2]).toBe(5 / 6);
  });

  it('templated NL similarity is ROUGE-L F1 over words (hand count)', () => {
    // "always in 0 to 5 x above 3" against the 18-word sentence: LCS 8 words → 2·8/(8+18)
    expect(run(rewards.templated, 'G[0,5] x>3', row)).toBe((2 * 8) / 26);
  });

  it("the paper's metrics (m_a gold recall, m_l over characters, m_s ROUGE-L over tokens), hand-computed", () => {
    const paper = {
      propositions: stlPropositions({ score: 'gold-recall' }),
      succinct: stlSuccinctness({ measure: 'characters' }),
      symbols: stlSymbols({ measure: 'rouge-l' }),
    };
    const metrics = (completion: string) => Object.values(paper).map((reward) => run(reward, completion, row));
    // gold: 26 characters, 21 tokens (G [ 0 , 5 ] ( x > 3 -> F [ 0 , 2 ] y < 1 )).
    expect(gold.length).toBe(26);
    expect(metrics(gold)).toEqual([1, 1, 1]);
    // One of the two gold atoms (y<1 kept, x>3 → x<3); 26 characters; 20 of 21 tokens in common.
    expect(metrics('G[0,5] (x<3 -> F[0,2] y<1)')).toEqual([0.5, 1, (2 * 20) / 42]);
    // An extra atom costs nothing in m_a (a recall), unlike F1 (0.8); 32 characters: 1 − 6/26;
    // tokens: the gold's 21 are a subsequence of its 25.
    const extra = 'G[0,5] (x>3 & z>1 -> F[0,2] y<1)';
    expect(run(rewards.propositions, extra, row)).toBeCloseTo(0.8, 12);
    expect(metrics(extra)).toEqual([1, 1 - 6 / 26, (2 * 21) / 46]);
    // Spacing counts in m_l, as the paper counts characters: 22 characters written without spaces.
    expect(run(paper.succinct, 'G[0,5](x>3->F[0,2]y<1)', row)).toBe(1 - 4 / 26);
    // Past twice the gold's length m_l goes below 0, as the formula gives.
    expect(run(paper.succinct, `!!!!!!!!!!!!!!!!!!!!!!!!!!!!${gold}`, row)).toBe(1 - 28 / 26);
    expect(metrics('G[0,5] (x>3 ->')).toEqual([0, 0, 0]); // does not parse
  });

  it('registered with options; bad options and rows are refused by name', () => {
    for (const name of ['stl-propositions', 'stl-templated-nl', 'stl-succinctness', 'stl-symbols', 'stl-traces'])
      expect(rewardFactories.get(name).citation).toMatch(/RESTL \(#145\)/);
    const tagged = rewardFactories.get('stl-propositions').create({ tag: 'answer' }) as RewardFn;
    expect(run(tagged, `<answer>${gold}</answer>`, row)).toBe(1);
    expect(run(tagged, gold, row)).toBe(0); // no tag
    expect(() => rewardFactories.get('stl-traces').create({ traces: 0 })).toThrow(
      /reward "stl-traces": bad options: traces/,
    );
    expect(() => run(rewards.propositions, gold, { answer: 'G[0,5' })).toThrow(/column "answer" is not an STL formula/);
    expect(() => run(rewards.templated, gold, { answer: gold })).toThrow(/column "nl"/);
  });
});

describe('nl-to-stl task', () => {
  const task = nlToStlTask();
  it('each sentence is the templated English of its gold formula, which parses and prints back as written', () => {
    for (const row of task.trainExamples(60, 5)) {
      const formula = parseStl(String(row.answer));
      expect(printStl(formula)).toBe(row.answer);
      expect(templatedEnglish(formula)).toBe(row.nl);
      expect(task.isCorrect(row, String(row.answer))).toBe(true);
      expect(task.isCorrect(row, String(row.nearMiss))).toBe(false);
    }
  });
  it('is deterministic and holds its evaluation sentences out', () => {
    expect(task.trainExamples(10, 2)).toEqual(task.trainExamples(10, 2));
    const train = new Set(task.trainExamples(600, 1).map((row) => row.nl));
    expect(task.evalExamples(60, 1).filter((row) => train.has(row.nl))).toEqual([]);
  });
  it('refuses bad options naming the field', () => {
    expect(() => nlToStlTask({ teacherErrorRate: 2 })).toThrow(/taskOptions\.teacherErrorRate/);
    expect(() => nlToStlTask({ signals: 4 })).toThrow(/taskOptions\.signals: not an option/);
  });
});
