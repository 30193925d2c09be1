/**
 * Equation reward for Countdown and the Game of 24: the completion's final expression must use
 * exactly the row's numbers (each once), only + − × ÷ and parentheses, and equal the target.
 *
 * Safety: the expression is untrusted model output. It is tokenised and parsed by the small
 * recursive-descent parser below (numbers, four operators, parentheses, nothing else), never by
 * `eval` or `Function`, and its length is bounded. Arithmetic is exact: BigInt fractions, so
 * 8 / (3 − 8/3) = 24 holds exactly and division by zero is a wrong answer, not Infinity.
 *
 * Is not: a solver (the Countdown and 24 tasks have one for demonstrations) or a general calculator.
 */
import type { RewardFn } from './types.js';

/** A fraction numerator / denominator in lowest terms, denominator > 0. */
interface Fraction {
  numerator: bigint;
  denominator: bigint;
}

/** Longest expression considered; anything longer scores 0 (bounds parsing and BigInt growth). */
const MAX_EXPRESSION_LENGTH = 200;
const MAX_NUMBERS = 12;

const gcd = (a: bigint, b: bigint): bigint => {
  while (b !== 0n) [a, b] = [b, a % b];
  return a < 0n ? -a : a;
};

function fraction(numerator: bigint, denominator: bigint): Fraction {
  if (denominator === 0n) throw new Error('division by zero');
  const sign = denominator < 0n ? -1n : 1n;
  const divisor = gcd(numerator, denominator) || 1n;
  return { numerator: (sign * numerator) / divisor, denominator: (sign * denominator) / divisor };
}

function apply(operator: string, a: Fraction, b: Fraction): Fraction {
  if (operator === '+')
    return fraction(a.numerator * b.denominator + b.numerator * a.denominator, a.denominator * b.denominator);
  if (operator === '-')
    return fraction(a.numerator * b.denominator - b.numerator * a.denominator, a.denominator * b.denominator);
  if (operator === '*') return fraction(a.numerator * b.numerator, a.denominator * b.denominator);
  return fraction(a.numerator * b.denominator, a.denominator * b.numerator);
}

/** Integers, operators (ASCII or × ÷ − ·) and parentheses; null for any other character. */
function tokenize(text: string): string[] | null {
  const tokens: string[] = [];
  const normalised = text.replace(/[×·]/g, '*').replace(/÷/g, '/').replace(/[−–]/g, '-');
  for (const match of normalised.matchAll(/\s*(?:(\d+)|([-+*/()]))|\s*(\S)/g)) {
    if (match[3] !== undefined) return null;
    if (match[1] !== undefined || match[2] !== undefined) tokens.push((match[1] ?? match[2])!);
  }
  return tokens;
}

/** The value of an expression and the integers it used, or null when it does not parse. */
export function evaluateExpression(text: string): { value: Fraction; numbers: number[] } | null {
  if (text.length > MAX_EXPRESSION_LENGTH) return null;
  const tokens = tokenize(text);
  if (!tokens || tokens.length === 0) return null;
  const numbers: number[] = [];
  let position = 0;
  // expression := term (('+' | '-') term)*; term := factor (('*' | '/') factor)*; factor := integer | '(' expression ')'
  const expression = (): Fraction => {
    let value = term();
    while (tokens[position] === '+' || tokens[position] === '-') value = apply(tokens[position++]!, value, term());
    return value;
  };
  const term = (): Fraction => {
    let value = factor();
    while (tokens[position] === '*' || tokens[position] === '/') value = apply(tokens[position++]!, value, factor());
    return value;
  };
  const factor = (): Fraction => {
    const token = tokens[position++];
    if (token === '(') {
      const value = expression();
      if (tokens[position++] !== ')') throw new Error('missing )');
      return value;
    }
    if (token === undefined || !/^\d+$/.test(token)) throw new Error('expected a number');
    if (numbers.push(Number(token)) > MAX_NUMBERS) throw new Error('too many numbers');
    return fraction(BigInt(token), 1n);
  };
  try {
    const value = expression();
    return position === tokens.length ? { value, numbers } : null;
  } catch {
    return null; // a parse error or a division by zero: not a valid equation
  }
}

/**
 * The final equation of a completion: the last `<answer>` block, else the last non-empty line. Of
 * "(1 + 1) * 12 = 24" the expression is the side that does more than name a number; the sides that
 * only name a number are the claimed results, which must then equal the target too.
 */
function finalEquation(completion: string): { expression: string; claimed: number[] } | null {
  const answers = [...completion.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  const block = answers.length ? answers[answers.length - 1]![1]! : completion;
  const lines = block
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const last = lines[lines.length - 1];
  if (last === undefined) return null;
  const sides = last
    .replace(/\\times/g, '×')
    .replace(/\\div/g, '÷')
    .replace(/[$`]/g, '')
    .split('=')
    .map((side) => side.trim());
  const expressions = sides.filter((side) => !/^\d+$/.test(side));
  if (expressions.length === 1)
    return { expression: expressions[0]!, claimed: sides.filter((side) => /^\d+$/.test(side)).map(Number) };
  return sides.length === 1 ? { expression: sides[0]!, claimed: [] } : null;
}

/** Parses a numbers cell: an array of numbers, or a string like "3, 7, 12" or "1 1 4 6". */
function numbersOf(cell: unknown): number[] | null {
  if (Array.isArray(cell)) return cell.every((item) => Number.isInteger(Number(item))) ? cell.map(Number) : null;
  if (typeof cell === 'string' && /^[\d\s,]+$/.test(cell.trim()))
    return cell
      .trim()
      .split(/[\s,]+/)
      .map(Number);
  return null;
}

const sameMultiset = (a: number[], b: number[]): boolean => {
  const sortedA = [...a].sort((x, y) => x - y);
  const sortedB = [...b].sort((x, y) => x - y);
  return sortedA.length === sortedB.length && sortedA.every((value, i) => value === sortedB[i]);
};

/** True when `expression` uses exactly `numbers` (each once) and equals `target`. */
export function checkEquation(expression: string, numbers: readonly number[], target: number): boolean {
  const result = evaluateExpression(expression);
  if (!result || !sameMultiset(result.numbers, [...numbers])) return false;
  return result.value.denominator === 1n && result.value.numerator === BigInt(target);
}

/** Options of {@link equationAnswer}. */
export interface EquationOptions {
  /** Column with the numbers to use: an array, or text such as "3, 7, 12" (default `numbers`). */
  numbersColumn?: string;
  /** Column with the target (default `target`). */
  targetColumn?: string;
}

/**
 * 1 when the completion's final expression (last `<answer>` block, else last line; "expr = target"
 * accepted) uses exactly the row's numbers once each with + − × ÷ and parentheses and equals the
 * target, else 0.
 * @example
 * const reward = equationAnswer();
 * await reward(makeRewardInput({ completion: '<answer>(6 - 4) * 12</answer>', row: { numbers: [4, 6, 12], target: 24 } })); // 1
 */
export function equationAnswer({ numbersColumn = 'numbers', targetColumn = 'target' }: EquationOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const numbers = numbersOf(row[numbersColumn]);
    const target = Number(row[targetColumn]);
    if (!numbers || !Number.isInteger(target))
      throw new Error(`equationAnswer: row needs integer columns "${numbersColumn}" (a list) and "${targetColumn}"`);
    const equation = finalEquation(completion);
    if (!equation || equation.claimed.some((claimed) => claimed !== target)) return 0;
    return checkEquation(equation.expression, numbers, target) ? 1 : 0;
  };
}
