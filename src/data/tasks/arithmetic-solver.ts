/**
 * A brute-force solver for Countdown and the Game of 24: combine the numbers pairwise with + − × ÷
 * (exact fractions) until one value is left; the first expression reaching the target wins. It
 * writes the gold demonstrations of those tasks and decides which puzzles are solvable.
 *
 * Why brute force: puzzles have 3–4 small numbers, a few thousand combinations each. Is not: a
 * general solver (use at most ~6 numbers) or the reward (`rewards/equation.ts` checks answers).
 */

interface Term {
  numerator: number;
  denominator: number;
  expression: string;
}

const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b));

function term(numerator: number, denominator: number, expression: string): Term | null {
  if (denominator === 0) return null;
  const sign = denominator < 0 ? -1 : 1;
  const divisor = gcd(numerator, denominator) || 1;
  return { numerator: (sign * numerator) / divisor, denominator: (sign * denominator) / divisor, expression };
}

/** Every way to combine two terms into one (both orders for − and ÷). */
function combinations(a: Term, b: Term): Term[] {
  const candidates = [
    term(
      a.numerator * b.denominator + b.numerator * a.denominator,
      a.denominator * b.denominator,
      `(${a.expression} + ${b.expression})`,
    ),
    term(
      a.numerator * b.denominator - b.numerator * a.denominator,
      a.denominator * b.denominator,
      `(${a.expression} - ${b.expression})`,
    ),
    term(
      b.numerator * a.denominator - a.numerator * b.denominator,
      a.denominator * b.denominator,
      `(${b.expression} - ${a.expression})`,
    ),
    term(a.numerator * b.numerator, a.denominator * b.denominator, `(${a.expression} * ${b.expression})`),
    term(a.numerator * b.denominator, a.denominator * b.numerator, `(${a.expression} / ${b.expression})`),
    term(b.numerator * a.denominator, b.denominator * a.numerator, `(${b.expression} / ${a.expression})`),
  ];
  return candidates.filter((candidate): candidate is Term => candidate !== null);
}

function search(terms: Term[], target: number): string | null {
  if (terms.length === 1)
    return terms[0]!.denominator === 1 && terms[0]!.numerator === target ? terms[0]!.expression : null;
  for (let i = 0; i < terms.length; i++) {
    for (let j = i + 1; j < terms.length; j++) {
      const rest = terms.filter((_, index) => index !== i && index !== j);
      for (const combined of combinations(terms[i]!, terms[j]!)) {
        const found = search([...rest, combined], target);
        if (found !== null) return found;
      }
    }
  }
  return null;
}

/** An expression using every number once with + − × ÷ that equals `target`, outer parentheses dropped; null when none exists. */
export function solveArithmetic(numbers: readonly number[], target: number): string | null {
  if (numbers.length === 0 || numbers.length > 6)
    throw new Error(`solveArithmetic: 1 to 6 numbers, got ${numbers.length}`);
  const found = search(
    numbers.map((value) => ({ numerator: value, denominator: 1, expression: String(value) })),
    target,
  );
  return found !== null && found.startsWith('(') && found.endsWith(')') && numbers.length > 1
    ? found.slice(1, -1)
    : found;
}
