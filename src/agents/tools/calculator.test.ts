/**
 * Tests of the calculator tool: a case table of expressions (exact integers, precedence, errors
 * meant for the model) and the tool's argument check.
 */
import { describe, expect, it } from 'vitest';
import { calculatorTool, evaluateArithmetic } from './calculator.js';

const signal = new AbortController().signal;

describe('evaluateArithmetic', () => {
  it.each([
    ['123456789 * 987654321', '121932631112635269'], // beyond 2^53: exact BigInt
    ['2 + 3 * 4', '14'], // * binds tighter than +
    ['(2 + 3) * 4', '20'],
    ['2 ^ 3 ^ 2', '512'], // ^ is right-associative
    ['2 ** 10', '1024'],
    ['-2 ^ 2', '-4'], // unary minus below ^
    ['2 ^ 100', '1267650600228229401496703205376'],
    ['7 / 2', '3.5'], // inexact division leaves the integers
    ['84 / 12', '7'], // exact division stays an integer
    ['12 % 5', '2'],
    ['0.1 + 0.2', '0.3'], // 12 significant digits
    ['2 ^ -1', '0.5'],
    ['sqrt(16) + abs(-3)', '7'],
    ['max(3, 9, 4) - min(5, 2)', '7'],
    ['17 × 3 ÷ 3', '17'], // the signs models copy from text
    ['1e3 + 1', '1001'],
  ])('%s = %s', (expression, expected) => {
    expect(evaluateArithmetic(expression)).toBe(expected);
  });
  it.each([
    ['1 / 0', /division by zero/],
    ['2 +', /ends too early/],
    ['(1 + 2', /expected "\)"/],
    ['process.exit()', /unexpected character "\."/], // no member access in the grammar
    ['process', /unknown name "process"/], // no identifiers beyond the functions
    ['constructor(1)', /unknown name "constructor"/], // not Object.prototype's
    ['__proto__(1)', /unexpected character "_"/],
    ['1; 2', /unexpected character ";"/],
    ['9 ^ 9999', /more than 1000 digits/],
    ['sqrt(-1)', /not a number/],
    ['', /empty expression/],
    ['sqrt(1, 2)', /sqrt takes 1–1 arguments, got 2/],
    ['('.repeat(100) + '1' + ')'.repeat(100), /nested too deeply/],
  ])('%s is refused', (expression, message) => {
    expect(() => evaluateArithmetic(expression)).toThrow(message);
  });
});

describe('calculatorTool', () => {
  it('runs with checked arguments', async () => {
    const tool = calculatorTool();
    expect(tool.name).toBe('calculator');
    expect(await tool.run({ expression: '37 * 48' }, { signal })).toBe('1776');
    expect(() => tool.run({ expr: '1' }, { signal })).toThrow(/expression/);
    expect(() => tool.run({ expression: '1+'.repeat(200) + '1' }, { signal })).toThrow(/200/);
  });
});
