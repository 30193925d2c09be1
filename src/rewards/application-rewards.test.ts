/**
 * The application-paper rewards of issue 33, by their registered names with options: right answers
 * score in full, and near misses score 0 or partial for the reason each case states. Guru's
 * `domain-router` (#108), WirelessMathLM's `wireless-math` (#221), RLPrompt's
 * `rlprompt-classification` (#105, on the `prompt-classification` task's frozen model).
 */
import { describe, expect, it } from 'vitest';
import { createReward } from './factories.js';
import { classProbabilities, labelGap } from './rlprompt.js';
import { bagOfWordsTaskModel } from '../data/tasks/prompt-classification.js';
import { isGroupReward, makeRewardInput, type Reward, type RewardFn } from './types.js';

const score = async (reward: Reward, completion: string, row: Record<string, unknown>) => {
  if (isGroupReward(reward)) return (await reward.scoreGroup([makeRewardInput({ completion, row })]))[0];
  return (reward as RewardFn)(makeRewardInput({ completion, row }));
};

describe('wireless-math', () => {
  const reward = createReward('wireless-math');
  const mcq = { type: 'multiple_choice', answer: 'C' };
  const one = { type: 'fill_blank', answer: '(1+\\gamma)' };
  const two = { type: 'fill_blank', answer: '\\log_2 ;; (1+\\gamma)' };
  const full = { type: 'full_equation', answer: 'B\\log_2(1+\\gamma)' };
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['\\boxed{C}', mcq, 1, 'the right letter'],
    ['so the answer is (C)', mcq, 1, 'the right letter, said in words'],
    ['\\boxed{B}', mcq, 0, 'a wrong letter'],
    ['\\boxed{A}\\boxed{C}', mcq, 1, 'the last letter counts'],
    ['no letter at all', mcq, 0, 'no letter'],
    ['\\boxed{(1+\\gamma)}', one, 1, 'the blank'],
    ['\\boxed{\\gamma+1}', one, 1, 'an equivalent rewriting of the blank'],
    ['\\boxed{(\\gamma)}', one, 0, 'the 1+ dropped'],
    ['(1+\\gamma)', one, 0, 'not boxed: no answer found'],
    ['\\boxed{}', one, 0, 'an empty box'],
    ['\\boxed{\\log_2}\\boxed{(1+\\gamma)}', two, 1, 'both blanks in order'],
    ['\\boxed{\\log_{10}}\\boxed{(1+\\gamma)}', two, 0, 'one of two blanks wrong: binary, no partial credit'],
    ['\\boxed{(1+\\gamma)}\\boxed{\\log_2}', two, 0, 'the blanks swapped'],
    ['\\boxed{(1+\\gamma)}', two, 0, 'one box for two blanks'],
    ['\\boxed{B\\log_{2}(1+\\gamma)}', full, 1, 'the whole side, braces differ'],
    ['\\boxed{B\\log_2(\\gamma)}', full, 0, 'the whole side with the 1+ dropped'],
  ];
  it.each(cases)('%s → %s (%s)', async (completion, row, expected) => {
    expect(await score(reward, completion, row)).toBe(expected);
  });

  it('refuses a row without the gold answer or with an unknown kind, naming the column', async () => {
    await expect(score(reward, '\\boxed{A}', { type: 'multiple_choice' })).rejects.toThrow(/"answer"/);
    expect(() =>
      (reward as RewardFn)(makeRewardInput({ completion: 'x', row: { type: 'essay', answer: 'x' } })),
    ).toThrow(/column "type" is "essay"/);
    expect(() => createReward('wireless-math', { answerColumn: 3 })).toThrow(
      /reward "wireless-math": bad options: answerColumn/,
    );
  });
});

describe('domain-router', () => {
  const reward = createReward('domain-router', {
    routes: {
      math: { name: 'math-answer' },
      mcq: { name: 'wireless-math' },
    },
  });
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['82', { domain: 'math', answer: '82' }, 1, "math row, math-answer's verdict"],
    ['28', { domain: 'math', answer: '82' }, 0, 'math row, wrong number'],
    ['\\boxed{82}', { domain: 'math__gsm8k', answer: '82' }, 1, 'a data source math__gsm8k routes by its prefix'],
    ['\\boxed{B}', { domain: 'mcq', type: 'multiple_choice', answer: 'B' }, 1, "mcq row: wireless-math's verdict"],
    // The same completion, another domain: "82" is not a letter, so the mcq route scores it 0.
    ['82', { domain: 'mcq', type: 'multiple_choice', answer: 'B' }, 0, 'a math answer on an mcq row'],
  ];
  it.each(cases)('%s on %j → %s (%s)', async (completion, row, expected) => {
    expect(await score(reward, completion, row)).toBe(expected);
  });

  it('a row of an unrouted domain, or without a domain, is an error naming it; unknownDomainScore scores it', async () => {
    await expect(async () => score(reward, '1', { domain: 'logic', answer: '1' })).rejects.toThrow(
      /no route for domain "logic" \(routes: math, mcq\)/,
    );
    await expect(async () => score(reward, '1', { answer: '1' })).rejects.toThrow(/no "domain" column/);
    const lenient = createReward('domain-router', { routes: { math: { name: 'math-answer' } }, unknownDomainScore: 0 });
    expect(await score(lenient, '1', { domain: 'logic', answer: '1' })).toBe(0);
  });

  it("checks each route's options when built, naming the route's reward", () => {
    expect(() => createReward('domain-router', { routes: {} })).toThrow(/reward "domain-router": bad options: routes/);
    expect(() => createReward('domain-router', { routes: { math: { name: 'nope' } } })).toThrow(/nope/);
    expect(() => createReward('domain-router', { routes: { sql: { name: 'sql-ngram', options: { n: 0 } } } })).toThrow(
      /reward "sql-ngram": bad options: n/,
    );
    expect(() => createReward('domain-router', { routes: { a: { name: 'domain-router' } } })).toThrow(/itself/);
  });
});

describe('rlprompt-classification', () => {
  const taskModel = bagOfWordsTaskModel;
  const negative = { examples: [{ text: 'the film was bad', label: 1 }], taskModel };
  const score = async (options: Record<string, unknown>, completions: string[], row = negative) => {
    const reward = createReward('rlprompt-classification', options);
    if (!isGroupReward(reward)) throw new Error('a group reward');
    return reward.scoreGroup(completions.map((completion) => makeRewardInput({ completion, row })));
  };
  // No prompt: mean vector (−1/4, 2.7/4); logits great 4.25, terrible 2.5; p_terrible − p_great = −tanh(0.875).
  const unprompted = -180 * Math.tanh(0.875);
  // "honestly" (0, −1): mean (−1/5, 1.7/5); logits great 1.4, terrible 2; gap +tanh(0.3).
  const honest = 200 * Math.tanh(0.3);

  it("the authors' piecewise gap: ×180 when the frozen model is wrong, ×200 when right", async () => {
    const [wrong, right] = await score({ zscore: false }, ['', 'honestly']);
    expect(wrong).toBeCloseTo(unprompted, 10); // near miss: the lean wins, a negative reward
    expect(right).toBeCloseTo(honest, 10);
    // "really" adds to the lean: further from right than no prompt at all.
    expect((await score({ zscore: false }, ['really']))[0]).toBeLessThan(unprompted);
    expect(
      (await score({ zscore: false, correctCoefficient: 1, incorrectCoefficient: 1 }, ['honestly']))[0],
    ).toBeCloseTo(Math.tanh(0.3), 10);
  });

  it('z-scores the prompts of one input: (R − mean) / (population std + 1e-4)', async () => {
    const half = (honest - unprompted) / 2;
    const [wrong, right] = await score({}, ['', 'honestly']);
    expect(wrong).toBeCloseTo(-half / (half + 1e-4), 10);
    expect(right).toBeCloseTo(half / (half + 1e-4), 10);
    expect(await score({}, ['honestly', 'honestly'])).toEqual([0, 0]); // equal prompts: no signal
  });

  it("ties: the authors mask every class whose probability equals the label's, so a tie gives p + 1", () => {
    expect(labelGap([0.5, 0.5], 0)).toBe(1.5);
    expect(labelGap([0.7, 0.2, 0.1], 0)).toBeCloseTo(0.5, 12);
    expect(classProbabilities(taskModel, 'unknown words only')).toEqual([0.5, 0.5]);
  });

  it('refuses a row without the frozen model or with a bad label, naming the column', async () => {
    await expect(score({}, ['x'], { examples: negative.examples } as never)).rejects.toThrow(/"taskModel" column/);
    await expect(score({}, ['x'], { examples: [{ text: 'a', label: 2 }], taskModel } as never)).rejects.toThrow(
      /"examples"\[0\] needs a text and a label from 0 to 1/,
    );
    expect(() => createReward('rlprompt-classification', { zscore: 'yes' })).toThrow(
      /reward "rlprompt-classification": bad options: zscore/,
    );
  });
});
