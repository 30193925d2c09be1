/**
 * Tests of the issue-31 reward-design entries: `refine-trust` (ReFIne #235) on values computed by
 * running the authors' `reward_fn` (train/grpo_ReFIne.py) with its correctness set per case, and
 * `outcome-gated-process` (Posterior-GRPO #234) on ALGORITHMS.md §5.7's vector and Eq. (1)'s format
 * term, and `masa` (MASA #253) on values computed by running the authors' `compute_score` and
 * `extract_last_json_object`; each also built by name from the registry.
 *
 * Not here: training with them (src/cli/train-paper-rewards-b.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { createReward, rewardFactories } from './factories.js';
import { extractMasaPrediction, masaMetaScore } from './masa.js';
import { outcomeGatedProcess } from './posterior-gated.js';
import { refineConfidence, refineReferences, refineStructure, refineTrust } from './refine-trust.js';
import { makeRewardInput, type BatchReward, type RewardFn, type RewardInput } from './types.js';

/** A step-scoped reward by name (createReward refuses those: they run only inside grpo train). */
const createRewardForStep = (name: string, options: unknown = {}) =>
  rewardFactories.get(name).create(options) as BatchReward;

const structured =
  '<understanding>u</understanding><facts>f</facts><plan>p</plan>' +
  '<think>From <understanding> and <facts>, following <plan>: 2+2=4</think>' +
  '<final_answer>\\boxed{4}</final_answer><self_assessment>Confidence: 8/10</self_assessment>';
const structuredWrong =
  '<understanding>u</understanding><facts>f</facts><plan>p</plan>' +
  '<think>by <FACTS> it is 5</think><final_answer>5</final_answer>' +
  '<self_assessment>Confidence: 9/10</self_assessment>';
const outOfOrder =
  '<facts>f</facts><understanding>u</understanding><plan>p</plan><think>x</think>' +
  '<final_answer>4</final_answer><self_assessment>Confidence: 3/10</self_assessment>';

describe('refine-trust (ReFIne reward_fn)', () => {
  // [completion, correct, the authors' reward_fn value]
  const cases: Array<[string, number, number]> = [
    [structured, 1, 0.99], // (1 + 1 + 1 + (1 − 0.2²)) / 4
    [structuredWrong, 0, 0.3808333333333333], // (0 + 1 + 1/3 + (1 − 0.9²)) / 4; <FACTS> counts lower-cased
    ['42', 1, 0.1875], // no confidence: p = 0.5, −1 penalty
    ['41', 0, -0.0625], // the minimum
    [outOfOrder, 1, 0.3775], // structure 0: <facts> before <understanding>
    ['<think><plan></think> Confidence: 100/10', 0, 0.02083333333333333], // three digits: no confidence
    ['</think> before <think> mentions <plan> and <facts> Confidence:10/10', 1, 0.6666666666666666],
    ['Confidence: 0/10 then Confidence: 9/10', 1, 0.25], // the first confidence counts
  ];
  it.each(cases)('%#: matches the authors’ value', async (completion, correct, expected) => {
    const reward = refineTrust({ correctness: () => correct });
    expect(await reward(makeRewardInput({ completion }))).toBeCloseTo(expected, 12);
  });

  it('scores each term as the authors do', () => {
    expect(refineStructure(structured)).toBe(1);
    expect(refineStructure(outOfOrder)).toBe(0);
    expect(refineStructure(structured.replace('</plan>', ''))).toBe(0);
    expect(refineReferences(structured)).toBe(1);
    expect(refineReferences(structuredWrong)).toBeCloseTo(1 / 3, 12);
    expect(refineReferences('<plan> outside <think>no reference</think>')).toBe(0);
    expect(refineConfidence('Confidence: 7/10', 0)).toBeCloseTo(1 - 0.49, 12);
    expect(refineConfidence('no confidence', 1)).toBe(-0.25);
  });

  it('by name: correctness defaults to math-answer on the answer column; a named check and bad options', async () => {
    const input = (completion: string) => makeRewardInput({ completion, row: { answer: '4' } });
    const reward = createReward('refine-trust') as RewardFn;
    expect(await reward(input(structured))).toBeCloseTo(0.99, 12);
    expect(await reward(input('\\boxed{5}'))).toBeCloseTo(-0.0625, 12);
    const exact = createReward('refine-trust', { correctness: { name: 'exact-match' } }) as RewardFn;
    expect(await exact(input('4'))).toBeCloseTo(0.1875, 12);
    expect(() => createReward('refine-trust', { correct: {} })).toThrow(/reward "refine-trust": bad options/);
    expect(() => createReward('refine-trust', { correctness: { name: 'length-among-correct' } })).toThrow(
      /correctness "length-among-correct" is a group reward/,
    );
  });
});

describe('outcome-gated-process (Posterior-GRPO Eq. (1))', () => {
  const outcome = ({ completion }: RewardInput) => (completion.startsWith('right') ? 1 : 0);
  const inputs = ['right 0.9', 'right 0.2', 'wrong 0.8', 'wrong 0.1'].map((completion) =>
    makeRewardInput({ completion }),
  );

  it('§5.7 vector with w = 0.5; the process reward asked only where the outcome is 1', async () => {
    let asked = 0;
    const process = ({ completion }: RewardInput) => {
      asked++;
      return Number(completion.split(' ')[1]);
    };
    const reward = outcomeGatedProcess({ outcome, process, processWeight: 0.5 });
    expect(await Promise.all(inputs.map(reward))).toEqual([1.45, 1.1, 0, 0]);
    expect(asked).toBe(2);
  });

  it('Eq. (1): R_fmt + R_out + 𝟙[R_out = 1]·R_proc, weight 1 by default', async () => {
    const process = ({ completion }: RewardInput) => Number(completion.split(' ')[1]);
    const format = ({ completion }: RewardInput) => (completion.endsWith('0.1') || completion.endsWith('0.9') ? 1 : 0);
    const reward = outcomeGatedProcess({ outcome, process, format });
    const scores = await Promise.all(inputs.map(reward));
    [2.9, 1.2, 0, 1].forEach((expected, index) => expect(scores[index]).toBeCloseTo(expected, 12));
  });

  it('by name: outcome defaults to math-answer, process and format by name; bad options name the field', async () => {
    // process: think-format scores the reasoning's form here, standing in for a reasoning reward model
    const reward = createReward('outcome-gated-process', {
      process: { name: 'think-format' },
      format: { name: 'tag-format' },
    }) as RewardFn;
    const input = (completion: string) => makeRewardInput({ completion, row: { answer: '4' } });
    expect(await reward(input('<think>2+2</think><answer>\\boxed{4}</answer>'))).toBe(3);
    expect(await reward(input('<think>2+2</think><answer>\\boxed{5}</answer>'))).toBe(1); // format only
    expect(await reward(input('\\boxed{4}'))).toBe(1); // outcome only
    expect(() => createReward('outcome-gated-process', {})).toThrow(
      /reward "outcome-gated-process": bad options: process/,
    );
    expect(() =>
      createReward('outcome-gated-process', { process: { name: 'think-format' }, processWeight: -1 }),
    ).toThrow(/processWeight/);
    expect(() => createReward('outcome-gated-process', { process: { name: 'length-among-correct' } })).toThrow(
      /process "length-among-correct" is a group reward/,
    );
  });
});

describe('masa (MASA meta-prediction reward)', () => {
  const problem = 'Predict for: Each of 3 boxes holds 12 apples; the boxes are filled with apples. How many apples?';
  const solutions = {
    responses: [
      '3 boxes times 12 is multiplication: 36',
      'adding 12+12+12 by addition = 36',
      'multiplication gives 35',
      'I guess 40',
      'multiplications and carries: 36',
      '36',
    ],
    scores: [1, 1, 0, 0, 1, 1],
    lengths: [40, 30, 25, 10, 33, 2],
  };
  // [meta completion, the authors' compute_score(extract_last_json_object(completion), stats) terms]
  const cases: Array<[string, { score: number; notion: number; passRate: number; length: number }]> = [
    [
      '<meta>think</meta>{"math_notion": ["multiplications", "addition", "apples", "carries"], "pass_rate": 5, "solution_length": 20}',
      { score: 0.8306902839782285, notion: 2 / 3, passRate: 0.8254041852680186, length: 1 },
    ],
    [
      '<meta>x</meta>{"math_notion": "multiplication, [addition]", "pass_rate": 8, "solution_length": 40}',
      { score: 0.4051478230010628, notion: 1, passRate: 0.21544346900318834, length: 0 },
    ],
    [
      '{"math_notion": ["boxes"], "pass_rate": 4.0, "solution_length": 31}',
      { score: 1 / 3, notion: 0, passRate: 0, length: 1 },
    ],
    [
      '{"math_notion": ["guess", "guess"], "pass_rate": true, "solution_length": 1e1}',
      { score: 0.027513472842267284, notion: 0, passRate: 0.08254041852680186, length: 0 },
    ],
    [
      'no json at all, math_notion: [division, "carry"] and solution_length: 35',
      { score: 0, notion: 0, passRate: 0, length: 0 },
    ],
    [
      '{"math_notion": [",", "addition"], "pass_rate": 0, "solution_length": 3}',
      { score: 0.34880529611204264, notion: 0, passRate: 0.046415888336127795, length: 1 },
    ],
    [
      '{"math_notion": ["a"], "pass_rate": 2} then {"math_notion": "series", "pass_rate": 6, "solution_length": 35}',
      { score: 0.5604306896859871, notion: 0, passRate: 0.6812920690579611, length: 1 },
    ],
    ["{'math_notion': ['x'], 'pass_rate': 3}", { score: 0, notion: 0, passRate: 0, length: 0 }],
    [
      '{"math_notion": ["identities", "boxes", "matches"], "pass_rate": 12, "solution_length": 39}',
      { score: 0.3405147823001063, notion: 0, passRate: 0.021544346900318832, length: 1 },
    ],
  ];
  it.each(cases)('%#: matches the authors’ compute_score', (completion, expected) => {
    const scored = masaMetaScore(extractMasaPrediction(completion), { ...solutions, problem });
    for (const key of ['score', 'notion', 'passRate', 'length'] as const)
      expect(scored[key], key).toBeCloseTo(expected[key], 12);
  });

  it('the fallback reads an unquoted math_notion list; its solution_length is always dropped', () => {
    expect(extractMasaPrediction('math_notion: [division, "carry"], solution_length: 35')).toEqual({
      math_notion: ['division', 'carry'],
      solution_length: null,
    });
    expect(extractMasaPrediction('{"math_notion": ["a"], "pass_rate": 4.0}')).toEqual({
      math_notion: ['a'],
      pass_rate: null,
    });
  });

  it('by name, over a step: solution rows score correctness, meta rows their prediction against their own problem', async () => {
    const reward = createRewardForStep('masa');
    const rows = (pair: string, role?: string) => ({
      pair_id: pair,
      answer: '36',
      ...(role ? { masa_role: role } : {}),
    });
    const group = (prompt: string, row: Record<string, unknown>, completions: string[]) =>
      completions.map((completion, indexInGroup) =>
        makeRewardInput({
          prompt,
          completion,
          completionIds: Array(completion.length).fill(1),
          row,
          group: completions,
          indexInGroup,
        }),
      );
    const inputs = [
      ...group(problem, rows('p1'), solutions.responses),
      ...group(problem, rows('p1', 'meta'), [cases[0]![0], cases[1]![0]]),
      ...group('other', rows('p2', 'meta'), [cases[0]![0]]), // its solutions are not in the step
      ...group('3+4=', rows('p3'), ['7', 'multiplication: 8']), // another problem's solutions
      ...group('?3+4=', rows('p3', 'meta'), [cases[0]![0]]),
    ];
    const scores = await reward.scoreBatch(inputs);
    // math-answer on the answer column: the last number equals 36
    expect(scores.slice(0, 6)).toEqual([1, 1, 0, 0, 1, 1]);
    // lengths are the completions' token counts (one id per character here)
    const lengths = solutions.responses.map((text) => text.length);
    const expected = [cases[0]![0], cases[1]![0]].map(
      (completion) => masaMetaScore(extractMasaPrediction(completion), { ...solutions, lengths, problem }).score,
    );
    expect(scores.slice(6, 8)).toEqual(expected);
    expect(scores[8]).toBeNull();
    // p3's meta row is scored against p3's solutions only, not p1's
    const p3 = { responses: ['7', 'multiplication: 8'], scores: [0, 0], lengths: [1, 17], problem: '?3+4=' };
    expect(scores.slice(9, 11)).toEqual([0, 0]); // answer column 36: both wrong
    expect(scores[11]).toBe(masaMetaScore(extractMasaPrediction(cases[0]![0]), p3).score);
    expect(scores[11]).not.toBe(scores[6]);
    expect(() => createRewardForStep('masa', { passRateScale: 0 })).toThrow(
      /reward "masa": bad options: passRateScale/,
    );
  });
});
