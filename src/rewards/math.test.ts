/** Table-driven tests of math answer extraction and verification, plus a real-data smoke check. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { answersMatch, extractBoxed, extractFinalAnswer, goldAnswer, mathAnswer, verifyMathAnswer } from './math.js';
import { makeRewardInput } from './types.js';
import { sharedDataFile } from '../../test/helpers/fixtures.js';

describe('extractFinalAnswer', () => {
  const cases: Array<[string, string | null, string]> = [
    ['so \\boxed{\\frac{1}{2}}.', '\\frac{1}{2}', 'boxed content with nested braces'],
    ['\\boxed{1} then \\boxed{2}', '2', 'the last box wins'],
    ['we get \\boxed 7 here', '7', '"\\boxed 7" without braces'],
    ['\\fbox{x+1}', 'x+1', '\\fbox counts as a box'],
    ['Janet has 9 eggs.\n#### 18', '18', 'GSM8K marker'],
    ['So the answer is 42.', '42', 'sentence full stop is not part of the answer'],
    ['The final answer is $3.14$.', '3.14', 'decimal point kept, $ wrappers dropped'],
    ['Answer: 7', '7', 'answer label'],
    ['**Answer:** 7', '7', 'markdown bold label'],
    ['Final Answer: The final answer is $5$. I hope it is correct.', '5', 'Minerva format'],
    ['first 3 then 3.5 apples', '3.5', 'falls back to the last number'],
    ['9 * 2 = $<<9*2=18>>18', '18', 'calculator annotations ignored'],
    ['no numbers here', null, 'nothing looks like an answer'],
  ];
  it.each(cases)('%j → %j (%s)', (text, expected) => {
    expect(extractFinalAnswer(text)?.answer ?? null).toBe(expected);
  });
  it('unbalanced box yields nothing from the box', () => {
    expect(extractBoxed('\\boxed{1')).toBeNull(); // no closing brace: not a box
  });
});

describe('answersMatch', () => {
  const cases: Array<[string, string, boolean, string]> = [
    ['1/2', '\\frac{1}{2}', true, 'fraction written two ways'],
    ['0.5', '\\frac12', true, 'decimal vs \\frac12 shorthand'],
    ['\\dfrac{3}{4}', '0.75', true, '\\dfrac is \\frac'],
    ['50\\%', '0.5', true, 'percent as fraction of 1'],
    ['50%', '50', true, 'percent sign dropped'],
    ['1,000', '1000', true, 'thousands separator'],
    ['1{,}000', '1000', true, 'LaTeX thousands separator'],
    ['-3', '-3.0', true, 'negative integer vs decimal'],
    ['1.5', '15', false, 'decimal point matters'],
    ['41', '42', false, 'different integers'],
    ['-7', '7', false, 'sign matters'],
    ['2\\sqrt{2}', '\\sqrt{8}', true, 'equal surds'],
    ['3\\sqrt{13}', '\\sqrt{117}', true, 'equal surds, larger'],
    ['\\frac{\\sqrt{3}}{2}', '\\frac{1}{2}\\sqrt3', true, 'implicit multiplication with \\sqrt3'],
    ['\\pi/2', '\\frac{\\pi}{2}', true, '\\pi as a constant'],
    ['10^{10}', '10000000000', true, 'powers evaluate'],
    ['x^2+2x+1', '(x+1)^2', true, 'symbolic identity by random evaluation'],
    ['x^2+2x+1', '(x-1)^2', false, 'different polynomials'],
    ['2x', 'x', false, 'different linear expressions'],
    ['6-5i', '-5i+6', true, 'complex number terms reordered'],
    ['(1,2)', '(2,1)', false, 'tuples are ordered'],
    ['(3, \\frac{\\pi}{2})', '\\left( 3, \\frac{\\pi}{2} \\right)', true, 'tuple with \\left/\\right'],
    ['[1,2)', '[1,2]', false, 'interval ends matter'],
    ['(-\\infty, 2) \\cup (3, \\infty)', '(-\\infty,2)\\cup(3,\\infty)', true, 'union of intervals'],
    ['-\\infty', '\\infty', false, 'infinities of different sign'],
    ['3, 5', '5,3', true, 'bare lists of solutions are unordered'],
    ['3, 5', '3, 6', false, 'lists with a different element'],
    ['(-2,1)', '-2,1', false, 'an interval or point is not a list of solutions'],
    ['\\{1,2\\}', '\\{2,1\\}', true, 'sets are unordered'],
    ['18 dollars', '18', true, 'unit words dropped'],
    ['\\$18.00', '18', true, 'dollar sign and cents'],
    ['5 \\text{ cm}^2', '5', true, 'unit with exponent'],
    ['90^\\circ', '90', true, 'degrees'],
    ['10\\text{ m}', '10', true, 'single-letter unit in \\text after a number'],
    ['10m', '10', false, 'a bare letter is a variable, not a unit'],
    ['\u22125', '-5', true, 'Unicode minus sign'],
    ['2\\pi', '6.283185307', true, '\\pi is maths, not a unit word'],
    ['x = 5', '5', true, 'variable assignment prefix'],
    ['y = 2x + 3', 'y=3+2x', true, 'equations compared side by side'],
    ['\\text{(C)}', 'C', true, 'multiple-choice letter'],
    ['(C)', '\\text{(B)}', false, 'different letters'],
    ['\\text{Evelyn}', 'evelyn', true, 'text answers ignore case'],
    ['Evelyn', 'Evan', false, 'different names'],
    ['', '0', false, 'empty answer never matches'],
  ];
  it.each(cases)('%j vs %j → %s (%s)', (predicted, gold, expected) => {
    expect(answersMatch(predicted, gold)).toBe(expected);
  });
});

describe('mathAnswer reward', () => {
  it('scores GSM8K and MATH-style rows', async () => {
    const reward = mathAnswer();
    const score = (completion: string, answer: string) => reward(makeRewardInput({ completion, row: { answer } }));
    expect(await score('so \\boxed{18}', 'Janet sells 9.\n#### 18')).toBe(1); // gold taken from the GSM8K #### line
    expect(await score('so \\boxed{17}', 'Janet sells 9.\n#### 18')).toBe(0); // wrong value
    expect(await score('I do not know', '18')).toBe(0); // no answer at all scores wrong, not null
    expect(await score('$\\boxed{\\dfrac{14}{3}}$', '\\frac{14}{3}')).toBe(1); // MATH gold as a bare answer
  });
  it('scores oversized or deeply nested answers as wrong instead of overflowing the stack', async () => {
    const reward = mathAnswer();
    const score = (completion: string, answer: string) => reward(makeRewardInput({ completion, row: { answer } }));
    const terms = (count: number, term: string, join: string) => Array(count).fill(term).join(join);
    // 200k terms: each one a closure calling the previous, so evaluating them used to throw RangeError.
    expect(await score(`\\boxed{${terms(200_000, '1', '+')}}`, '200000')).toBe(0);
    expect(await score(`\\boxed{${terms(200_000, '2', '*')}}`, '1')).toBe(0);
    expect(await score(`\\boxed{${'-'.repeat(200_000)}1}`, '1')).toBe(0);
    expect(await score(`\\boxed{${'('.repeat(5_000)}1${')'.repeat(5_000)}}`, '1')).toBe(0);
    expect(await score(`\\boxed{${'\\sqrt'.repeat(900)}1}`, '1')).toBe(0); // 900 levels without brackets
    // Within the limits the same shapes still verify by value.
    expect(await score(`\\boxed{${terms(500, '1', '+')}}`, '500')).toBe(1);
    expect(await score(`\\boxed{${'('.repeat(50)}7${')'.repeat(50)}}`, '7')).toBe(1);
  });
  it('names the missing column', () => {
    expect(() => mathAnswer({ answerColumn: 'gold' })(makeRewardInput({ completion: '1', row: {} }))).toThrow(
      /column "gold"/,
    );
  });
  it('gold answers verify against their own solutions on a slice of the real datasets', () => {
    const read = (path: string) =>
      readFileSync(sharedDataFile(path), 'utf8')
        .trim()
        .split('\n')
        .slice(0, 100)
        .map((line) => JSON.parse(line));
    const gsm8k = read('gsm8k/test.jsonl') as Array<{ answer: string }>;
    const math500 = read('math500/test.jsonl') as Array<{ solution: string; answer: string }>;
    expect(gsm8k.filter((row) => verifyMathAnswer(row.answer, goldAnswer(row.answer))).length).toBe(100);
    expect(math500.filter((row) => verifyMathAnswer(row.solution, row.answer)).length).toBeGreaterThanOrEqual(95);
    // wrong answers built by bumping the first digit (or appending a letter) must not verify
    const perturb = (answer: string) => {
      const digit = /\d/.exec(answer);
      return digit
        ? answer.slice(0, digit.index) + String((Number(digit[0]) + 1) % 10) + answer.slice(digit.index + 1)
        : `${answer}q`;
    };
    const falsePositives = math500.filter((row) => verifyMathAnswer(`\\boxed{${perturb(row.answer)}}`, row.answer));
    expect(falsePositives).toEqual([]);
  });
});
