/**
 * Table-driven tests of the answer forms models really write (issue 15): each equivalent form must
 * score 1, each near miss 0, extraction must find the answer a careful grader would, the options
 * must change what they say, and cases built from Math-Verify's documented behaviour must agree.
 * The older, shorter tables stay in `../math.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { createReward } from '../factories.js';
import { answersMatch, extractFinalAnswer, goldAnswer, mathAnswer, type MathAnswerOptions } from '../math.js';
import { isGroupReward, makeRewardInput } from '../types.js';

const score = (completion: string, answer: string, options: MathAnswerOptions = {}) =>
  mathAnswer(options)(makeRewardInput({ completion, row: { answer } }));

describe('equivalent forms score 1', () => {
  const cases: Array<[string, string, string]> = [
    ['\\frac13', '1/3', '\\frac13 shorthand is \\frac{1}{3}'],
    ['\\dfrac{1}{3}', '1/3', '\\dfrac is display-style \\frac'],
    ['\\tfrac13', '\\frac{1}{3}', '\\tfrac is text-style \\frac, also with the shorthand'],
    ['\\cfrac{1}{3}', '0.3333333', '\\cfrac is continued-fraction \\frac; 0.3333333 agrees to 6 digits'],
    ['\\left( \\frac{1}{3} \\right)', '\\frac13', '\\left( … \\right) around a scalar is only grouping'],
    ['\\frac{1}{3}\\text{ meters}', '\\frac{1}{3}', 'a unit in \\text after a fraction is dropped'],
    ['\\textbf{7}', '7', 'font commands are unwrapped'],
    ['k = \\frac13', '\\frac{1}{3}', 'a single-variable assignment is its right-hand side'],
    ['\\sqrt3', '\\sqrt{3}', '\\sqrt3 shorthand is \\sqrt{3}'],
    ['\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}', 'equal surds in different forms'],
    ['[0,1)', '\\left[0, 1\\right)', 'the same half-open interval'],
    ['x \\in [0,1)', '[0,1)', '"x ∈" before an interval is dropped'],
    ['\\{3,1,2\\}', '\\{1,2,3\\}', 'sets are order-free'],
    ['\\{1,3\\} \\cup \\{2,4\\}', '\\{1,2,3,4\\}', 'a union of sets is one set'],
    ['(1,2,3)', '\\left(1, 2, 3\\right)', 'the same tuple'],
    [
      '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}',
      '\\begin{bmatrix}1 & 2 \\\\ 3 & 4\\end{bmatrix}',
      'the same matrix in other brackets',
    ],
    ['1 000', '1000', 'space as thousands separator'],
    ['1,000', '1000', 'comma as thousands separator'],
    ['1\\,000', '1000', 'LaTeX thin space as thousands separator'],
    ['1{,}000', '1000', 'LaTeX braced comma as thousands separator'],
    ["1'000", '1000', 'apostrophe (Swiss) as thousands separator'],
    ['1\u202f000\u202f000', '1000000', 'narrow no-break spaces (SI style)'],
    ['1.000.000', '1000000', 'dots with two groups can only be thousands'],
    ['1.234,5', '1234.5', 'dot thousands before a decimal comma (German style)'],
    ['3,75', '3.75', 'a decimal comma: two digits after it, and the gold is one number'],
    ['3,750', '3750', 'three digits after a comma are thousands'],
    ['25\\%', '\\frac14', 'a percentage is a fraction of 1'],
    ['25%', '25', 'a percentage also equals its number'],
    ['25 percent', '0.25', 'the word percent'],
    ['90^\\circ', '90', 'degrees with ^\\circ'],
    ['90°', '90', 'degrees with the ° sign'],
    ['1.5e3', '1500', 'scientific notation with e'],
    ['2E-4', '0.0002', 'scientific notation with E and a negative exponent'],
    ['1.5\\times 10^{3}', '1500', 'scientific notation in LaTeX'],
    ['3\\frac12', '3.5', 'a mixed number is 3 + 1/2, not 3 · 1/2'],
    ['3 1/2', '\\frac{7}{2}', 'a plain-text mixed number'],
    ['-2\\frac{1}{4}', '-\\frac{9}{4}', 'a negative mixed number is −(2 + 1/4)'],
    ['\\pi', '3.14159265', 'π by value'],
    ['2\\pi r', 'r \\cdot 2\\pi', 'π in a product, reordered'],
    ['e^{2}', '\\exp(2)', "a lone e is Euler's number"],
    ['e^{i\\pi}', '-1', 'complex powers through the Compute Engine'],
    ['\\log_2 8', '3', 'a logarithm to a base through the Compute Engine'],
    ['\\lfloor 2.7 \\rfloor', '2', 'floor through the Compute Engine; \\rfloor is not a unit word'],
    ['\\binom{5}{2}', '10', 'a binomial coefficient by value'],
    ['\\sin^2 x + \\cos^2 x', '1', 'an identity checked at fixed points'],
    ['(x+1)(x-1)', 'x^2-1', 'a factored polynomial'],
    ['x = 2', '2', 'an equation with a variable on the left is its value'],
    ['x > 2', '2 < x', 'the same inequality written the other way round'],
    ['\\$1,234.50', '1234.5', 'dollars, thousands separator and cents'],
    ['12 \\text{ cm}^2', '12', 'a unit with an exponent'],
    ['\\textbf{(C)}', 'C', 'a multiple-choice letter in bold and brackets'],
  ];
  it.each(cases)('%j ~ %j (%s)', (predicted, gold) => {
    expect(answersMatch(predicted, gold)).toBe(true);
  });
});

describe('near misses score 0', () => {
  const cases: Array<[string, string, string]> = [
    ['\\boxed{17}', '18', 'off by one'],
    [
      '#### 1450001',
      '1450000',
      'off by one in a large integer: integers compare exactly, the 6-digit tolerance is for decimals',
    ],
    ['\\boxed{1000001}', '1000000', 'off by one past six significant digits'],
    ['\\boxed{\\frac{1}{4}}', '\\frac13', 'a different fraction'],
    ['\\boxed{-\\frac13}', '\\frac13', 'wrong sign'],
    ['\\boxed{3\\frac12}', '1.5', 'a mixed number is not a product (3 · 1/2 = 1.5)'],
    ['\\boxed{[0,1]}', '[0,1)', 'wrong interval end (closed for open)'],
    ['\\boxed{(0,1)}', '[0,1)', 'wrong interval start (open for closed)'],
    ['\\boxed{(2,1)}', '(1,2)', 'swapped tuple'],
    [
      '\\boxed{\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}}',
      '\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}',
      'transposed matrix',
    ],
    ['\\boxed{\\{1,2\\}}', '\\{1,2,3\\}', 'a set missing an element'],
    ['\\boxed{3,74}', '3.75', 'decimal comma, different hundredths'],
    ['\\boxed{0.33}', '\\frac13', 'two digits do not make 1/3 at six-digit precision'],
    ['\\boxed{50\\%}', '0.05', '50% is 0.5, not 0.05'],
    ['\\boxed{\\log_2 8}', '4', 'an engine-evaluated value that differs'],
    ['\\boxed{e^{i\\pi}}', '1', 'e^{iπ} is −1, not 1'],
    ['\\boxed{x < 2}', 'x > 2', 'the inequality reversed'],
    ['\\boxed{x < 2}', 'x \\leq 2', 'strict is not non-strict'],
    ['\\boxed{\\sin^2 x}', '\\cos^2 x', 'different functions'],
    ['\\boxed{1\\,001}', '1000', 'thousands separators do not hide a wrong digit'],
    ['We asked GPT4o.', '4', 'a digit inside a name is not an answer'],
    ['Pick option B2 then.', '2', 'a digit glued to a letter is a label, not an answer'],
    ['It costs $5 and $6 in total.', '5', 'dollar signs are not a math span: the last number is 6'],
  ];
  it.each(cases)('%j vs %j → 0 (%s)', async (completion, gold) => {
    expect(await score(completion, gold)).toBe(0);
  });
});

describe('bounded work', () => {
  // The Compute Engine computes n! exactly (99999! takes seconds; 999999! minutes), so it never sees a factorial.
  it('an exact factorial the engine would grind through scores 0 at once', async () => {
    expect(await score('\\boxed{\\lfloor 999999! \\rfloor}', '1')).toBe(0);
    expect(await score('\\boxed{\\log_2 (99999!)}', '1516687.56428381')).toBe(0); // true, but past the bound
  }, 2000);
  it('answers longer or deeper than the bounds score 0 without reaching the engine', async () => {
    expect(await score(`\\boxed{\\lfloor ${'('.repeat(150)}2${')'.repeat(150)} \\rfloor}`, '2')).toBe(0); // nesting past 100
    expect(await score(`\\boxed{\\lfloor 2 \\rfloor${' + 0'.repeat(1000)}}`, '2')).toBe(0); // over 2000 characters
    expect(await score(`\\boxed{\\lfloor 2 \\rfloor${' + 0'.repeat(100)}}`, '2')).toBe(1); // the same shape within the bounds
  }, 2000);
});

describe('extraction', () => {
  const cases: Array<[string, string | null, string]> = [
    ['So $x = 5$.', '5', 'the last math span, right-hand side of its equation'],
    ['Therefore \\(\\frac{1}{3}\\)', '\\frac{1}{3}', 'an inline \\( … \\) span'],
    ['We get \\[ 2 + 3 = 5 \\]', '5', 'a display \\[ … \\] span: the result after ='],
    ['$$\\sqrt{2}$$ is the length', '\\sqrt{2}', 'a $$ … $$ span with no later number'],
    ['We find $x=3$ so after 2 steps', '2', 'a number after the last span is the later conclusion'],
    ['It costs $5 and $6 in total', '6', 'currency dollars are not a span (Pandoc rule)'],
    ['I used GPT4o and got B2', null, 'numbers glued to letters are names'],
    ['total 1 000 apples', '1 000', 'space-separated thousands are one number'],
    ['the result: 3,75 metres', '3,75', 'a decimal comma stays in the number'],
    ['$x=1$. The final answer is $\\frac{3}{4}$. I hope', '\\frac{3}{4}', 'a marker phrase beats a later span'],
    ['Answer: 7, not $\\boxed{8}$', '8', 'a box beats every marker'],
  ];
  it.each(cases)('%j → %j (%s)', (text, expected) => {
    expect(extractFinalAnswer(text)?.answer ?? null).toBe(expected);
  });
});

describe('gold answers are found like completion answers', () => {
  const cases: Array<[string, string, string]> = [
    ['Janet sells 9 eggs.\n#### 18', '18', 'the GSM8K marker line'],
    ['so $\\boxed{\\frac{14}{3}}$', '\\frac{14}{3}', 'a boxed reference answer'],
    ['We add them. The answer is $\\frac{1}{2}$.', '\\frac{1}{2}', 'an "answer is" sentence'],
    ['Answer: (C)', '(C)', 'an answer label'],
    ['x^2 + 3', 'x^2 + 3', 'a bare answer is the whole cell, not its last number'],
  ];
  it.each(cases)('%j → %j (%s)', (cell, expected) => {
    expect(goldAnswer(cell)).toBe(expected);
  });
});

describe('options', () => {
  it('requireBoxed: an unboxed answer scores 0, a boxed one 1', async () => {
    expect(await score('the answer is 5', '5', { requireBoxed: true })).toBe(0); // right value, no box
    expect(await score('so \\boxed{5}', '5', { requireBoxed: true })).toBe(1);
  });
  it('targets: only the listed kinds of answer are looked for', async () => {
    expect(await score('so $x = 5$', '5', { targets: ['boxed', 'marker'] })).toBe(0); // a span is not a target
    expect(await score('so $x = 5$', '5', { targets: ['latex'] })).toBe(1);
    expect(await score('so 5 apples', '5', { targets: ['latex'] })).toBe(0); // a bare number is not a span
    expect(await score('\\boxed{4} but 5', '5', { targets: ['number'] })).toBe(1); // the box is skipped
  });
  it('precision: significant digits of a numeric comparison', async () => {
    expect(await score('\\boxed{3.1416}', '\\pi')).toBe(0); // 2e-6 relative error fails six digits
    expect(await score('\\boxed{3.1416}', '\\pi', { precision: 3 })).toBe(1);
    expect(await score('\\boxed{3.2}', '\\pi', { precision: 3 })).toBe(0); // still not π at three digits
  });
  it('percentAsFraction: 50% = 0.5 only when allowed; 50% = 50 always', async () => {
    expect(await score('\\boxed{50\\%}', '0.5')).toBe(1);
    expect(await score('\\boxed{50\\%}', '0.5', { percentAsFraction: false })).toBe(0);
    expect(await score('\\boxed{50\\%}', '50', { percentAsFraction: false })).toBe(1);
  });
  it('the math-answer factory takes the options and rejects bad ones', async () => {
    const strict = createReward('math-answer', {
      requireBoxed: true,
      targets: ['boxed'],
      precision: 3,
      percentAsFraction: false,
    });
    if (isGroupReward(strict)) throw new Error('math-answer scores one completion at a time');
    expect(await strict(makeRewardInput({ completion: 'it is 3.1416', row: { answer: '\\pi' } }))).toBe(0);
    expect(await strict(makeRewardInput({ completion: '\\boxed{3.1416}', row: { answer: '\\pi' } }))).toBe(1);
    expect(() => createReward('math-answer', { targets: ['words'] })).toThrow(/targets/);
    expect(() => createReward('math-answer', { precision: 0 })).toThrow(/precision/);
    expect(() => createReward('math-answer', { targets: [] })).toThrow(/targets/);
  });
});

describe('agreement with Math-Verify on cases built from its documented behaviour', () => {
  // [gold, prediction, Math-Verify's verdict, what the case exercises]
  const cases: Array<[string, string, boolean, string]> = [
    ['${1,3} \\cup {2,4}$', '${1,2,3,4}$', true, 'its README example: a union of sets equals the merged set'],
    ['$\\frac{1}{2}$', '0.5', true, 'fractions and decimals by value'],
    ['$\\frac{1}{3}$', '$0.3333333$', true, 'float rounding to 6 digits'],
    ['$\\frac{1}{3}$', '$0.333$', false, 'three digits are not enough at that rounding'],
    ['$2\\pi$', '$6.283185$', true, 'π by value'],
    ['$(1,2]$', '$(1,2]$', true, 'intervals with their ends'],
    ['$(1,2]$', '$[1,2]$', false, 'a different end is a different interval'],
    ['$\\{1,2\\}$', '$\\{2,1\\}$', true, 'sets are order-free'],
    ['$(1,2)$', '$(2,1)$', false, 'tuples are ordered'],
    ['$x = 1$', '$1$', true, 'an equation with a symbol on the left compares its right-hand side'],
    ['$x^2+2x+1$', '$(x+1)^2$', true, 'symbolic equality (sympy simplify)'],
    ['$10\\%$', '$0.1$', true, 'percentages as fractions'],
    ['$10 \\text{ meters}$', '$10$', true, 'units removed'],
    ['$a < b$', '$b > a$', true, 'a relation flipped'],
    [
      '$\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}$',
      '$\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}$',
      true,
      'matrices element-wise',
    ],
    ['$e^{i\\pi}$', '$-1$', true, 'complex numbers through sympy'],
    ['$\\sqrt{8}$', '$2\\sqrt{2}$', true, 'radicals simplified'],
  ];
  it.each(cases)('%j vs %j: Math-Verify %s (%s)', (gold, prediction, mathVerify) => {
    expect(answersMatch(prediction, gold)).toBe(mathVerify);
  });
});
