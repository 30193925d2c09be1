/** Tests of the equation reward (Countdown / 24) from case tables: each case says why it passes or fails. */
import { describe, expect, it } from 'vitest';
import { checkEquation, equationAnswer, evaluateExpression } from './equation.js';
import { createReward } from './factories.js';
import { makeRewardInput } from './types.js';

const score = (completion: string, row: Record<string, unknown>) =>
  equationAnswer()(makeRewardInput({ completion, row }));

describe('equationAnswer', () => {
  const row = { numbers: [4, 6, 12], target: 24 };
  it.each([
    ['(6 - 4) * 12', 1], // every number once, equals 24
    ['12 * (6 - 4) = 24', 1], // "expr = target" is accepted
    ['24 = 12*(6-4)', 1], // either side
    ['<think>try 12*2</think>\n<answer>(6 − 4) × 12</answer>', 1], // unicode operators inside the answer block
    ['working...\n12 \\times (6 - 4)', 1], // LaTeX \times on the last line
    ['$(6-4)\\cdot 12$', 0], // \cdot is not one of the allowed tokens
    ['(6 - 4) * 12 = 25', 0], // a false claim: the expression is 24, not the stated 25
    ['(6 - 4) * 12 = 24 = 24', 1], // repeated true claims are still one expression
    ['6 * 4', 0], // 24, but 12 is not used
    ['(6 - 4) * 12 + 4 - 4', 0], // 4 used three times
    ['2 * 12', 0], // 2 is not a given number
    ['(6 - 4) * 12\nso the answer is above', 0], // the last line has no expression
    ['6 * 4 * 12 / 12', 0], // 12 used twice
    ['-(4 - 6) * 12', 0], // unary minus is not an allowed operator
    ['(6 - 4) ** 12', 0], // ** does not parse
    ['Math.max(6, 4, 12)', 0], // identifiers are refused before parsing
    ['(6 - 4 * 12', 0], // unbalanced parenthesis
    ['', 0], // nothing to check
  ])('%j scores %d', async (completion, expected) => {
    expect(await score(completion, row)).toBe(expected);
  });

  it('division is exact: 8 / (3 - 8/3) = 24, and 1/3*3 is 1, not 0.999…', async () => {
    expect(await score('8 / (3 - 8 / 3)', { numbers: '3 3 8 8', target: 24 })).toBe(1);
    expect(checkEquation('1 / 3 * 3', [1, 3, 3], 1)).toBe(true);
    expect(checkEquation('7 / 2', [7, 2], 3)).toBe(false); // 3.5 is not the integer 3
  });

  it('division by zero is a wrong answer, not an error or Infinity', async () => {
    expect(evaluateExpression('5 / (3 - 3)')).toBeNull();
    expect(await score('5 / (3 - 3)', { numbers: [5, 3, 3], target: 0 })).toBe(0);
  });

  it('bounds the input: an overlong expression or too many numbers scores 0 without parsing', () => {
    expect(evaluateExpression('1+'.repeat(150) + '1')).toBeNull();
    expect(evaluateExpression(Array.from({ length: 13 }, () => '1').join('+'))).toBeNull();
    expect(evaluateExpression(Array.from({ length: 12 }, () => '1').join('+'))?.value).toEqual({
      numerator: 12n,
      denominator: 1n,
    });
  });

  it('reads the Countdown text form of the numbers column and named columns', async () => {
    const reward = createReward('equation', { numbersColumn: 'input', targetColumn: 'output' });
    const input = (completion: string) => makeRewardInput({ completion, row: { input: '30,100,93', output: '23' } });
    expect(typeof reward === 'function' && (await reward(input('100 - 93 + 30 - 30 + 16')))).toBe(0); // 16 is not given, 30 twice
    expect(typeof reward === 'function' && (await reward(input('30 - (100 - 93)')))).toBe(1);
  });

  it('a row without the columns is an error naming them (the runner marks the sample invalid)', () => {
    expect(() => score('1+2', { target: 3 })).toThrow(/"numbers".*"target"/);
  });
});
