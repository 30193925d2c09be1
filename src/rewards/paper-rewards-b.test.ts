/**
 * Tests of the issue-31 reward-design entries: `refine-trust` (ReFIne #235) on values computed by
 * running the authors' `reward_fn` (train/grpo_ReFIne.py) with its correctness set per case, and
 * `outcome-gated-process` (Posterior-GRPO #234) on ALGORITHMS.md §5.7's vector and Eq. (1)'s format
 * term, both also built by name from the registry.
 *
 * Not here: training with them (src/cli/train-paper-rewards-b.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { outcomeGatedProcess } from './posterior-gated.js';
import { refineConfidence, refineReferences, refineStructure, refineTrust } from './refine-trust.js';
import { makeRewardInput, type RewardFn, type RewardInput } from './types.js';

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
