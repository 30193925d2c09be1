/**
 * A small parser and evaluator for the LaTeX-flavoured arithmetic found in final answers:
 * numbers, + − × ÷ ^, implicit multiplication, `\frac`, `\binom`, `\sqrt[n]{}`, `\pi`, `e`, `\infty`, `!`,
 * `|x|`, common functions, and single-letter or Greek variables. Answers with variables are
 * compared by evaluating both sides at random points (a probabilistic identity check).
 *
 * It is not a computer-algebra system: no simplification, no solving, no complex arithmetic
 * (`i` is treated as a variable, which is exact for polynomials in i with real coefficients).
 * Nor does it take unbounded input: an answer of more than MAX_TOKENS tokens or nested deeper
 * than MAX_DEPTH is "not an expression" (null), because parsing recurses per nesting level and
 * evaluation per term, and a completion can hold `\boxed{1+1+…}` with 200k terms.
 */

/** A parsed expression: evaluate it with values for its free variables. */
export interface Expression {
  evaluate(variables: ReadonlyMap<string, number>): number;
  variables: ReadonlySet<string>;
}

type Evaluator = (variables: ReadonlyMap<string, number>) => number;

const FUNCTIONS: Record<string, (x: number) => number> = {
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  sec: (x) => 1 / Math.cos(x),
  csc: (x) => 1 / Math.sin(x),
  cot: (x) => 1 / Math.tan(x),
  arcsin: Math.asin,
  arccos: Math.acos,
  arctan: Math.atan,
  ln: Math.log,
  log: Math.log10,
  exp: Math.exp,
  sinh: Math.sinh,
  cosh: Math.cosh,
  tanh: Math.tanh,
};
/** More tokens than any real final answer; past it the answer is not parsed (no stack to overflow). */
const MAX_TOKENS = 1000;
/** Nesting (brackets, signs, `\frac` arguments) allowed before the parser gives up. */
const MAX_DEPTH = 100;
const GREEK = new Set([
  'alpha',
  'beta',
  'gamma',
  'delta',
  'theta',
  'lambda',
  'mu',
  'sigma',
  'phi',
  'omega',
  'tau',
  'rho',
  'epsilon',
]);

interface Token {
  kind: 'number' | 'name' | 'command' | 'symbol';
  text: string;
}

/** Splits LaTeX-ish text into tokens; throws on characters it does not understand. */
function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < source.length) {
    if (tokens.length > MAX_TOKENS) throw new Error(`more than ${MAX_TOKENS} tokens`);
    const rest = source.slice(index);
    const space = /^\s+/.exec(rest);
    const number = /^(?:\d+(?:\.\d*)?|\.\d+)/.exec(rest);
    const command = /^\\([a-zA-Z]+)/.exec(rest);
    if (space) index += space[0].length;
    else if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      index += number[0].length;
    } else if (command) {
      tokens.push({ kind: 'command', text: command[1]! });
      index += command[0].length;
    } else if (/^[a-zA-Z]/.test(rest)) {
      const word = /^[a-zA-Z]+/.exec(rest)![0];
      const fn = Object.keys(FUNCTIONS).find((name) => word.startsWith(name) && name.length > 1);
      const taken = fn ?? word[0]!; // "sin" is a function; "xy" is x·y
      tokens.push({ kind: fn ? 'command' : 'name', text: taken });
      index += taken.length;
    } else if ('+-*/^()[]{}!|'.includes(rest[0]!)) {
      tokens.push({ kind: 'symbol', text: rest[0]! });
      index += 1;
    } else throw new Error(`unexpected "${rest[0]}"`);
  }
  return tokens;
}

/** Recursive-descent parser over the token list. */
class Parser {
  private position = 0;
  private depth = 0;
  readonly variables = new Set<string>();
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token | undefined {
    return this.tokens[this.position];
  }
  private isSymbol(text: string): boolean {
    const token = this.peek();
    return token?.kind === 'symbol' && token.text === text;
  }
  private expect(text: string): void {
    if (!this.isSymbol(text)) throw new Error(`expected "${text}"`);
    this.position++;
  }

  parseAll(): Evaluator {
    const result = this.expression();
    if (this.position !== this.tokens.length) throw new Error(`unexpected "${this.peek()!.text}"`);
    return result;
  }

  /** Runs `parse` one nesting level deeper, refusing past MAX_DEPTH before the stack can overflow. */
  private nested(parse: () => Evaluator): Evaluator {
    if (++this.depth > MAX_DEPTH) throw new Error(`nested deeper than ${MAX_DEPTH}`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private expression(): Evaluator {
    return this.nested(() => {
      let left = this.term();
      while (this.isSymbol('+') || this.isSymbol('-')) {
        const minus = this.tokens[this.position++]!.text === '-';
        const right = this.term();
        const previous = left;
        left = minus ? (v) => previous(v) - right(v) : (v) => previous(v) + right(v);
      }
      return left;
    });
  }

  private startsAtom(): boolean {
    const token = this.peek();
    if (!token) return false;
    if (token.kind !== 'symbol') return !(token.kind === 'command' && ['cdot', 'times', 'div'].includes(token.text));
    return token.text === '(' || token.text === '{' || token.text === '[';
  }

  private term(): Evaluator {
    let left = this.unary();
    for (;;) {
      const token = this.peek();
      let divide = false;
      if (token?.kind === 'symbol' && (token.text === '*' || token.text === '/')) divide = token.text === '/';
      else if (token?.kind === 'command' && ['cdot', 'times', 'div'].includes(token.text))
        divide = token.text === 'div';
      else if (!this.startsAtom()) return left;
      else {
        const right = this.power(); // implicit multiplication binds like ×, without a leading sign
        const previous = left;
        left = (v) => previous(v) * right(v);
        continue;
      }
      this.position++;
      const right = this.unary();
      const previous = left;
      left = divide ? (v) => previous(v) / right(v) : (v) => previous(v) * right(v);
    }
  }

  private unary(): Evaluator {
    if (this.isSymbol('-')) {
      this.position++;
      const operand = this.nested(() => this.unary());
      return (v) => -operand(v);
    }
    if (this.isSymbol('+')) {
      this.position++;
      return this.nested(() => this.unary());
    }
    return this.power();
  }

  private power(): Evaluator {
    const base = this.postfix();
    if (!this.isSymbol('^')) return base;
    this.position++;
    const exponent = this.isSymbol('-') ? this.unary() : this.postfix();
    return (v) => base(v) ** exponent(v);
  }

  private postfix(): Evaluator {
    let value = this.atom();
    while (this.isSymbol('!')) {
      this.position++;
      const inner = value;
      value = (v) => factorial(inner(v));
    }
    return value;
  }

  private group(open: string, close: string): Evaluator {
    this.expect(open);
    const inner = this.expression();
    this.expect(close);
    return inner;
  }

  private atom(): Evaluator {
    const token = this.peek();
    if (!token) throw new Error('unexpected end');
    if (token.kind === 'number') {
      this.position++;
      const value = Number(token.text);
      return () => value;
    }
    if (token.kind === 'name' && token.text === 'e') {
      this.position++;
      return () => Math.E; // Euler's number, as Math-Verify and every CAS read a lone e
    }
    if (token.kind === 'name') {
      this.position++;
      this.variables.add(token.text);
      return (v) => v.get(token.text) ?? Number.NaN;
    }
    if (token.kind === 'command') return this.nested(() => this.commandAtom(token.text)); // \frac\frac… nests without brackets
    if (token.text === '(') return this.group('(', ')');
    if (token.text === '{') return this.group('{', '}');
    if (token.text === '[') return this.group('[', ']');
    if (token.text === '|') {
      const inner = this.group('|', '|');
      return (v) => Math.abs(inner(v));
    }
    throw new Error(`unexpected "${token.text}"`);
  }

  private commandAtom(name: string): Evaluator {
    this.position++;
    if (name === 'frac') {
      const numerator = this.postfix();
      const denominator = this.postfix();
      return (v) => numerator(v) / denominator(v);
    }
    if (name === 'sqrt') {
      const degree = this.isSymbol('[') ? this.group('[', ']') : () => 2;
      const radicand = this.postfix();
      return (v) => root(radicand(v), degree(v));
    }
    if (name === 'binom') {
      const n = this.postfix();
      const k = this.postfix();
      return (v) => binomial(n(v), k(v));
    }
    if (name === 'pi') return () => Math.PI;
    if (name === 'infty') return () => Number.POSITIVE_INFINITY;
    if (GREEK.has(name)) {
      this.variables.add(name);
      return (v) => v.get(name) ?? Number.NaN;
    }
    const fn = FUNCTIONS[name];
    if (!fn) throw new Error(`unknown command \\${name}`);
    let exponent: Evaluator = () => 1;
    if (this.isSymbol('^')) {
      this.position++;
      exponent = this.postfix(); // \sin^2 x
    }
    const argument = this.power();
    return (v) => fn(argument(v)) ** exponent(v);
  }
}

function factorial(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 170) return Number.NaN;
  let product = 1;
  for (let k = 2; k <= n; k++) product *= k;
  return product;
}

/** n choose k for whole k (n may be any number), NaN otherwise; k past 170 overflows to NaN like a factorial. */
function binomial(n: number, k: number): number {
  if (!Number.isInteger(k) || k < 0 || k > 170) return Number.NaN;
  let product = 1;
  for (let index = 0; index < k; index++) product = (product * (n - index)) / (index + 1);
  return product;
}

function root(x: number, degree: number): number {
  if (x < 0 && Number.isInteger(degree) && degree % 2 === 1) return -((-x) ** (1 / degree));
  return x ** (1 / degree);
}

/** Parses an answer into an {@link Expression}; returns null when it is not arithmetic this parser knows. */
export function parseExpression(source: string): Expression | null {
  try {
    const tokens = tokenize(source);
    if (tokens.length === 0) return null;
    const parser = new Parser(tokens);
    const evaluate = parser.parseAll();
    return { evaluate, variables: parser.variables };
  } catch {
    return null;
  }
}

/** Relative-and-absolute closeness used for all numeric comparisons. */
export function numbersClose(a: number, b: number, relativeTolerance = 1e-6): boolean {
  if (a === b) return true; // includes equal infinities
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  // Two integers are equal only when they are the same integer: a relative tolerance would make
  // 1450001 equal 1450000 (a GSM8K answer off by one). Rounding noise never lands exactly on an integer.
  if (Number.isInteger(a) && Number.isInteger(b) && Math.abs(a) < 2 ** 53 && Math.abs(b) < 2 ** 53) return false;
  return Math.abs(a - b) <= relativeTolerance * Math.max(Math.abs(a), Math.abs(b)) || Math.abs(a - b) <= 1e-12;
}

/** A deterministic pseudo-random generator, so verification never depends on luck between runs. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * True when two expressions agree: equal values when closed, else equal at 6 random points
 * (variables drawn from [0.5, 2.5], where roots and logs are defined); points where both are
 * undefined are skipped, and at least 3 points must be defined.
 */
export function expressionsEqual(left: Expression, right: Expression, relativeTolerance = 1e-6): boolean {
  const names = [...new Set([...left.variables, ...right.variables])];
  if (names.length === 0) return numbersClose(left.evaluate(new Map()), right.evaluate(new Map()), relativeTolerance);
  const random = mulberry32(12345);
  let checked = 0;
  for (let trial = 0; trial < 6; trial++) {
    const point = new Map(names.map((name) => [name, 0.5 + 2 * random()] as const));
    const a = left.evaluate(point);
    const b = right.evaluate(point);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (!numbersClose(a, b, Math.min(relativeTolerance, 1e-8))) return false;
    checked++;
  }
  return checked >= 3;
}

/** The points every comparison with variables uses, drawn once from a fixed seed. */
function samplePoints(names: readonly string[], count: number): Array<Map<string, number>> {
  const random = mulberry32(12345);
  return Array.from({ length: count }, () => new Map(names.map((name) => [name, 0.5 + 2 * random()] as const)));
}

/**
 * The constant factor c with left = c · right, when two expressions in variables differ by one
 * (checked at 6 fixed points, at least 3 of them defined with right ≠ 0), else null. Two relations
 * `f ~ 0` and `g ~ 0` with f = c·g describe the same set (`2x+4y-3 = 0` and `y - (-x/2 + 3/4) = 0`).
 */
export function proportionality(leftSource: string, rightSource: string): number | null {
  const left = parseExpression(leftSource);
  const right = parseExpression(rightSource);
  if (!left || !right) return null;
  const names = [...new Set([...left.variables, ...right.variables])];
  if (names.length === 0) return null;
  let factor: number | null = null;
  let checked = 0;
  for (const point of samplePoints(names, 6)) {
    const a = left.evaluate(point);
    const b = right.evaluate(point);
    if (!Number.isFinite(a) || !Number.isFinite(b) || Math.abs(b) < 1e-12) continue;
    const ratio = a / b;
    if (factor === null) factor = ratio;
    else if (!numbersClose(ratio, factor, 1e-8)) return null;
    checked++;
  }
  return checked >= 3 && factor !== null && Math.abs(factor) > 1e-12 ? factor : null;
}
