/**
 * The built-in calculator tool: evaluates an arithmetic expression the model wrote, exactly for
 * integers (BigInt), in double precision otherwise.
 *
 * Is: a small recursive-descent parser over a closed grammar — numbers, + − * / % ^ (or **),
 * parentheses, unary minus and the functions sqrt, abs, min, max, floor, ceil, round. Nothing the
 * model writes is ever executed: there is no `eval`, no identifiers beyond those functions.
 * Is not: a computer-algebra system. @cortex-js/compute-engine was tried first and rejected: it
 * parses LaTeX, so plain arithmetic comes out silently wrong ("12 % 5" → 12, a comment; "2^100" → 0;
 * "2**3" → 6·*), which a tool the model must trust cannot afford.
 */
import { z } from 'zod';
import type { Tool } from '../types.js';

/** An exact integer or a double. */
type Value = { kind: 'integer'; value: bigint } | { kind: 'real'; value: number };

/** Why an expression is refused; the message becomes the model's observation. */
class CalculatorError extends Error {}

const FUNCTIONS: Record<string, { arity: [number, number]; apply: (values: number[]) => number }> = {
  sqrt: { arity: [1, 1], apply: ([x]) => Math.sqrt(x) },
  abs: { arity: [1, 1], apply: ([x]) => Math.abs(x) },
  floor: { arity: [1, 1], apply: ([x]) => Math.floor(x) },
  ceil: { arity: [1, 1], apply: ([x]) => Math.ceil(x) },
  round: { arity: [1, 1], apply: ([x]) => Math.round(x) },
  min: { arity: [1, 16], apply: (values) => Math.min(...values) },
  max: { arity: [1, 16], apply: (values) => Math.max(...values) },
};

/** Integers beyond this many digits are refused (a power tower would otherwise eat memory). */
const MAX_DIGITS = 1000;
const MAX_DEPTH = 64;

function tokenize(expression: string): string[] {
  const tokens: string[] = [];
  const pattern = /\s*(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\*\*|[-+*/%^(),×÷]|[a-z]+)/y;
  let position = 0;
  while (position < expression.length) {
    if (/^\s*$/.test(expression.slice(position))) break;
    pattern.lastIndex = position;
    const match = pattern.exec(expression);
    if (match === null) {
      throw new CalculatorError(`unexpected character "${expression.slice(position).trim()[0]}" at ${position}`);
    }
    tokens.push(match[1] === '×' ? '*' : match[1] === '÷' ? '/' : match[1] === '**' ? '^' : match[1]);
    position = pattern.lastIndex;
  }
  return tokens;
}

function toNumber(value: Value): number {
  return value.kind === 'integer' ? Number(value.value) : value.value;
}

function integer(value: bigint): Value {
  if (value.toString().replace('-', '').length > MAX_DIGITS) {
    throw new CalculatorError(`result has more than ${MAX_DIGITS} digits`);
  }
  return { kind: 'integer', value };
}

function real(value: number): Extract<Value, { kind: 'real' }> {
  if (Number.isNaN(value)) throw new CalculatorError('result is not a number');
  if (!Number.isFinite(value)) throw new CalculatorError('result is infinite');
  return { kind: 'real', value };
}

function binary(operator: string, left: Value, right: Value): Value {
  if (left.kind === 'integer' && right.kind === 'integer') {
    const [a, b] = [left.value, right.value];
    if ((operator === '/' || operator === '%') && b === 0n) throw new CalculatorError('division by zero');
    if (operator === '+') return integer(a + b);
    if (operator === '-') return integer(a - b);
    if (operator === '*') return integer(a * b);
    if (operator === '%') return integer(a % b);
    if (operator === '/' && a % b === 0n) return integer(a / b);
    if (operator === '^' && b >= 0n) {
      // log10|a|·b bounds the digits before computing anything.
      const digits = a === 0n ? 0 : Math.log10(Math.abs(Number(a)) || 1) * Number(b);
      if (digits > MAX_DIGITS) throw new CalculatorError(`result has more than ${MAX_DIGITS} digits`);
      return integer(a ** b);
    }
  }
  const [x, y] = [toNumber(left), toNumber(right)];
  if ((operator === '/' || operator === '%') && y === 0) throw new CalculatorError('division by zero');
  const results: Record<string, number> = { '+': x + y, '-': x - y, '*': x * y, '/': x / y, '%': x % y, '^': x ** y };
  return real(results[operator]);
}

/** Parses and evaluates; grammar: sum := product (('+'|'-') product)*, product := unary (('*'|'/'|'%') unary)*, unary := '-' unary | power, power := atom ('^' unary)?. */
function evaluateTokens(tokens: string[]): Value {
  let index = 0;
  const peek = (): string | undefined => tokens[index];
  const expect = (token: string): void => {
    if (tokens[index] !== token)
      throw new CalculatorError(`expected "${token}" but found ${tokens[index] ?? 'the end'}`);
    index++;
  };
  const sum = (depth: number): Value => {
    if (depth > MAX_DEPTH) throw new CalculatorError('expression nested too deeply');
    let value = product(depth);
    while (peek() === '+' || peek() === '-') value = binary(tokens[index++], value, product(depth));
    return value;
  };
  const product = (depth: number): Value => {
    let value = unary(depth);
    while (peek() === '*' || peek() === '/' || peek() === '%') value = binary(tokens[index++], value, unary(depth));
    return value;
  };
  const unary = (depth: number): Value => {
    if (peek() === '-') {
      index++;
      return binary('-', integer(0n), unary(depth + 1));
    }
    if (peek() === '+') {
      index++;
      return unary(depth + 1);
    }
    const base = atom(depth);
    if (peek() !== '^') return base;
    index++;
    return binary('^', base, unary(depth + 1));
  };
  const atom = (depth: number): Value => {
    const token = tokens[index++];
    if (token === undefined) throw new CalculatorError('expression ends too early');
    if (token === '(') {
      const value = sum(depth + 1);
      expect(')');
      return value;
    }
    if (/^\d+$/.test(token)) return integer(BigInt(token));
    if (/^[\d.]/.test(token)) return real(Number(token));
    // Own keys only: "constructor" or "__proto__" must not reach Object.prototype.
    const fn = Object.hasOwn(FUNCTIONS, token) ? FUNCTIONS[token] : undefined;
    if (fn === undefined)
      throw new CalculatorError(`unknown name "${token}" (functions: ${Object.keys(FUNCTIONS).join(', ')})`);
    expect('(');
    const values = [toNumber(sum(depth + 1))];
    while (peek() === ',') {
      index++;
      values.push(toNumber(sum(depth + 1)));
    }
    expect(')');
    if (values.length < fn.arity[0] || values.length > fn.arity[1]) {
      throw new CalculatorError(`${token} takes ${fn.arity.join('–')} arguments, got ${values.length}`);
    }
    const result = real(fn.apply(values));
    return Number.isInteger(result.value) && Math.abs(result.value) <= Number.MAX_SAFE_INTEGER
      ? integer(BigInt(result.value))
      : result;
  };
  const value = sum(0);
  if (index < tokens.length) throw new CalculatorError(`unexpected "${tokens[index]}"`);
  return value;
}

/**
 * Evaluates an arithmetic expression: integers exactly ("123456789 * 987654321" → "121932631112635269"),
 * anything else to 12 significant digits. Throws a message meant for the model on bad input.
 */
export function evaluateArithmetic(expression: string): string {
  const tokens = tokenize(expression);
  if (tokens.length === 0) throw new CalculatorError('empty expression');
  const value = evaluateTokens(tokens);
  if (value.kind === 'integer') return value.value.toString();
  const rounded = Number(value.value.toPrecision(12));
  return Object.is(rounded, -0) ? '0' : String(rounded);
}

/** Options of {@link calculatorTool}. */
export interface CalculatorToolOptions {
  /** The name the model calls (default 'calculator'). */
  name?: string;
  /** Longest expression accepted, in characters (default 200). */
  maxLength?: number;
  /** Per-call limit in milliseconds (default 1000). */
  timeoutMs?: number;
}

/**
 * A calculator tool: `{"expression": "37 * 48"}` → "1776". Errors (a bad expression, division by
 * zero) are thrown, so the rollout shows them to the model as an error observation.
 * @example environment.tools = [calculatorTool()]
 */
export function calculatorTool({
  name = 'calculator',
  maxLength = 200,
  timeoutMs = 1000,
}: CalculatorToolOptions = {}): Tool {
  const parameters = z.object({
    expression: z.string().min(1).max(maxLength).describe('an arithmetic expression, e.g. "37 * (48 + 2) / 5"'),
  });
  return {
    name,
    description:
      'Evaluates an arithmetic expression (+ - * / % ^, parentheses, sqrt, abs, min, max, floor, ceil, round).',
    parameters,
    timeoutMs,
    run(args) {
      return evaluateArithmetic(parameters.parse(args).expression);
    },
  };
}
