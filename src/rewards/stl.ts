/**
 * Signal temporal logic (STL) for RESTL (#145, "RESTL: Reinforcement Learning Guided by
 * Multi-Aspect Rewards for Signal Temporal Logic Transformation", arXiv 2511.08555): a small parser,
 * quantitative robustness on discrete-time traces, a templated English rendering, and the rewards
 * that compare a predicted formula with the gold one from RESTL's four perspectives plus a semantic
 * check on generated traces.
 *
 * Syntax (whitespace ignored): atoms `x>3`, `y<2.5` (a signal name other than G, F and U, `>` or
 * `<`, a non-negative number);
 * `!φ`; `φ & ψ`; `φ | ψ`; `φ -> ψ` (right-associative, weakest); `G[a,b] φ`, `F[a,b] φ` (always,
 * eventually on [t+a, t+b]); `φ U[a,b] ψ` (until); parentheses. Binding, strongest first: `!`, `G`,
 * `F`, then `U`, `&`, `|`, `->`.
 * Robustness (Donzé & Maler 2010): ρ(x>c,t) = x(t) − c, ρ(x<c,t) = c − x(t), ¬ → −ρ, ∧ → min,
 * ∨ → max, → as ¬φ ∨ ψ, G → min and F → max over the window, φ U[a,b] ψ →
 * max_{t'∈[t+a,t+b]} min(ρψ(t'), min_{t''∈[t,t')} ρφ(t'')). A window past the trace's end is cut
 * at the end (traces here are generated long enough: {@link formulaHorizon}).
 *
 * The rewards compute RESTL's metrics directly: RESTL trains four reward models (atomic proposition
 * alignment m_a, templated-NL similarity m_t, formula succinctness m_l, STL-level similarity m_s)
 * on preference pairs ranked by these metrics, with a curriculum, and sums their outputs with
 * weights 0.2, 0.25, 0.35, 0.2 for PPO (the paper, AAAI 2026 version: "Multi-aspect Metric",
 * "Implementation Details"); feeding the metrics themselves is its "metric supervision" variant
 * (its Figure 4). The options `score: 'gold-recall'`, `measure: 'characters'` and `measure: 'rouge-l'`
 * give its m_a, m_l and m_s exactly; m_t (a BERT-like encoder's cosine) is a ROUGE-L stand-in here.
 * Is not: a dense-time monitor (traces are integer-indexed) or an equivalence prover (the trace
 * check samples; two formulas that agree on every sampled trace may still differ).
 */
import { tagContent } from './format.js';
import type { RewardFn } from './types.js';

/** A parsed STL formula. */
export type StlFormula =
  | { kind: 'atom'; signal: string; comparison: '>' | '<'; threshold: number }
  | { kind: 'not'; operand: StlFormula }
  | { kind: 'and' | 'or' | 'implies'; left: StlFormula; right: StlFormula }
  | { kind: 'always' | 'eventually'; from: number; to: number; operand: StlFormula }
  | { kind: 'until'; from: number; to: number; left: StlFormula; right: StlFormula };

/** The formula's tokens: names, numbers, operators, brackets. Throws on a character outside the syntax. */
export function stlTokens(text: string): string[] {
  const tokens: string[] = [];
  const pattern = /\s*(->|[A-Za-z_]\w*|\d+(?:\.\d+)?|[!&|()<>[\],])/y;
  let position = 0;
  while (position < text.length) {
    if (/^\s*$/.test(text.slice(position))) break;
    pattern.lastIndex = position;
    const match = pattern.exec(text);
    if (!match)
      throw new Error(
        `STL: unexpected character at ${position}: ${JSON.stringify(text.slice(position, position + 8))}`,
      );
    tokens.push(match[1]!);
    position = pattern.lastIndex;
  }
  return tokens;
}

/** Parses an STL formula; throws a message naming what was expected where. */
export function parseStl(text: string): StlFormula {
  const tokens = stlTokens(text);
  let index = 0;
  const peek = () => tokens[index];
  const expect = (token: string) => {
    if (tokens[index] !== token)
      throw new Error(`STL: expected "${token}" at token ${index}, got ${tokens[index] ?? 'the end'}`);
    index++;
  };
  const number = () => {
    const token = tokens[index];
    if (token === undefined || !/^\d/.test(token)) throw new Error(`STL: expected a number at token ${index}`);
    index++;
    return Number(token);
  };
  const interval = () => {
    expect('[');
    const from = number();
    expect(',');
    const to = number();
    expect(']');
    if (to < from || !Number.isInteger(from) || !Number.isInteger(to))
      throw new Error(`STL: interval [${from},${to}] must be whole numbers with a ≤ b`);
    return { from, to };
  };
  const unary = (): StlFormula => {
    const token = peek();
    if (token === '!') {
      index++;
      return { kind: 'not', operand: unary() };
    }
    if (token === 'G' || token === 'F') {
      index++;
      const { from, to } = interval();
      return { kind: token === 'G' ? 'always' : 'eventually', from, to, operand: unary() };
    }
    if (token === '(') {
      index++;
      const inner = implication();
      expect(')');
      return inner;
    }
    if (token !== undefined && /^[A-Za-z_]/.test(token) && token !== 'U') {
      index++;
      const comparison = peek();
      if (comparison !== '>' && comparison !== '<') throw new Error(`STL: expected > or < after signal "${token}"`);
      index++;
      return { kind: 'atom', signal: token, comparison, threshold: number() };
    }
    throw new Error(`STL: expected a formula at token ${index}, got ${token ?? 'the end'}`);
  };
  const until = (): StlFormula => {
    const left = unary();
    if (peek() !== 'U') return left;
    index++;
    const { from, to } = interval();
    return { kind: 'until', from, to, left, right: unary() };
  };
  const binary = (kind: 'and' | 'or', symbol: string, next: () => StlFormula) => (): StlFormula => {
    let left = next();
    while (peek() === symbol) {
      index++;
      left = { kind, left, right: next() };
    }
    return left;
  };
  const conjunction = binary('and', '&', until);
  const disjunction = binary('or', '|', conjunction);
  const implication = (): StlFormula => {
    const left = disjunction();
    if (peek() !== '->') return left;
    index++;
    return { kind: 'implies', left, right: implication() };
  };
  const formula = implication();
  if (index !== tokens.length) throw new Error(`STL: unexpected "${tokens[index]}" at token ${index}`);
  return formula;
}

/** The formula parsed, or null when it does not parse. */
export function tryParseStl(text: string): StlFormula | null {
  try {
    return parseStl(text);
  } catch {
    return null;
  }
}

/** How many time steps past t the formula looks (the trace length it needs is horizon + 1). */
export function formulaHorizon(formula: StlFormula): number {
  switch (formula.kind) {
    case 'atom':
      return 0;
    case 'not':
      return formulaHorizon(formula.operand);
    case 'and':
    case 'or':
    case 'implies':
      return Math.max(formulaHorizon(formula.left), formulaHorizon(formula.right));
    case 'always':
    case 'eventually':
      return formula.to + formulaHorizon(formula.operand);
    case 'until':
      return formula.to + Math.max(formulaHorizon(formula.left), formulaHorizon(formula.right));
  }
}

/** A trace: each signal's values at t = 0, 1, 2, … */
export type StlTrace = Readonly<Record<string, readonly number[]>>;

/** Robustness ρ(φ, trace, t); positive means satisfied. Throws naming a signal the trace lacks. */
export function robustness(formula: StlFormula, trace: StlTrace, time = 0): number {
  const length = Math.min(...Object.values(trace).map((values) => values.length));
  const window = (from: number, to: number) => {
    const times: number[] = [];
    for (let step = time + from; step <= Math.min(time + to, length - 1); step++) times.push(step);
    return times;
  };
  switch (formula.kind) {
    case 'atom': {
      const values = trace[formula.signal];
      if (!values) throw new Error(`STL: the trace has no signal "${formula.signal}"`);
      const value = values[Math.min(time, values.length - 1)]!;
      return formula.comparison === '>' ? value - formula.threshold : formula.threshold - value;
    }
    case 'not':
      return -robustness(formula.operand, trace, time);
    case 'and':
      return Math.min(robustness(formula.left, trace, time), robustness(formula.right, trace, time));
    case 'or':
      return Math.max(robustness(formula.left, trace, time), robustness(formula.right, trace, time));
    case 'implies':
      return Math.max(-robustness(formula.left, trace, time), robustness(formula.right, trace, time));
    case 'always':
      return Math.min(...window(formula.from, formula.to).map((step) => robustness(formula.operand, trace, step)));
    case 'eventually':
      return Math.max(...window(formula.from, formula.to).map((step) => robustness(formula.operand, trace, step)));
    case 'until': {
      let best = -Infinity;
      for (const step of window(formula.from, formula.to)) {
        let holds = robustness(formula.right, trace, step);
        for (let before = time; before < step; before++)
          holds = Math.min(holds, robustness(formula.left, trace, before));
        best = Math.max(best, holds);
      }
      return best;
    }
  }
}

/** The formula written back in the syntax above, with parentheses only where binding needs them. */
export function printStl(formula: StlFormula): string {
  const strength = (node: StlFormula) =>
    ({ implies: 0, or: 1, and: 2, until: 3, not: 4, always: 4, eventually: 4, atom: 5 })[node.kind];
  const wrap = (node: StlFormula, least: number) => (strength(node) < least ? `(${printStl(node)})` : printStl(node));
  switch (formula.kind) {
    case 'atom':
      return `${formula.signal}${formula.comparison}${formula.threshold}`;
    case 'not':
      return `!${wrap(formula.operand, 4)}`;
    case 'always':
    case 'eventually':
      return `${formula.kind === 'always' ? 'G' : 'F'}[${formula.from},${formula.to}] ${wrap(formula.operand, 4)}`;
    case 'until':
      return `${wrap(formula.left, 4)} U[${formula.from},${formula.to}] ${wrap(formula.right, 4)}`;
    case 'and':
      return `${wrap(formula.left, 2)} & ${wrap(formula.right, 3)}`;
    case 'or':
      return `${wrap(formula.left, 1)} | ${wrap(formula.right, 2)}`;
    case 'implies':
      return `${wrap(formula.left, 1)} -> ${wrap(formula.right, 0)}`;
  }
}

/**
 * The templated English of a formula (RESTL's "templated NL"): one fixed phrase per operator, e.g.
 * `G[0,5] x>3` → "always in 0 to 5 x above 3". The task writes its prompts with it, so a correct
 * formula renders back to exactly the prompt's sentence.
 */
export function templatedEnglish(formula: StlFormula): string {
  switch (formula.kind) {
    case 'atom':
      return `${formula.signal} ${formula.comparison === '>' ? 'above' : 'below'} ${formula.threshold}`;
    case 'not':
      return `not ${templatedEnglish(formula.operand)}`;
    case 'and':
      return `${templatedEnglish(formula.left)} and ${templatedEnglish(formula.right)}`;
    case 'or':
      return `${templatedEnglish(formula.left)} or ${templatedEnglish(formula.right)}`;
    case 'implies':
      return `if ${templatedEnglish(formula.left)} then ${templatedEnglish(formula.right)}`;
    case 'always':
    case 'eventually':
      return `${formula.kind} in ${formula.from} to ${formula.to} ${templatedEnglish(formula.operand)}`;
    case 'until':
      return `${templatedEnglish(formula.left)} until in ${formula.from} to ${formula.to} ${templatedEnglish(formula.right)}`;
  }
}

/** The atomic propositions of a formula, as canonical strings (`x>3`). */
export function atomicPropositions(formula: StlFormula): Set<string> {
  switch (formula.kind) {
    case 'atom':
      return new Set([printStl(formula)]);
    case 'not':
    case 'always':
    case 'eventually':
      return atomicPropositions(formula.operand);
    default:
      return new Set([...atomicPropositions(formula.left), ...atomicPropositions(formula.right)]);
  }
}

/** How many operators and atoms the formula has (its size for succinctness). */
export function formulaSize(formula: StlFormula): number {
  switch (formula.kind) {
    case 'atom':
      return 1;
    case 'not':
    case 'always':
    case 'eventually':
      return 1 + formulaSize(formula.operand);
    default:
      return 1 + formulaSize(formula.left) + formulaSize(formula.right);
  }
}

/** Options every STL reward shares: where the predicted and gold formulas are. */
export interface StlInputOptions {
  /** Column with the gold formula (default `answer`). */
  goldColumn?: string;
  /** Read the formula from the last `<tag>…</tag>` (default `''`: the whole completion). */
  tag?: string;
}

/** The gold formula of a row (throws naming the column) and the predicted one (null when it does not parse). */
function formulas(
  completion: string,
  row: Readonly<Record<string, unknown>>,
  { goldColumn = 'answer', tag = '' }: StlInputOptions,
  rewardName: string,
): { gold: StlFormula; predicted: StlFormula | null; goldText: string; predictedText: string } {
  const goldText = row[goldColumn];
  if (typeof goldText !== 'string')
    throw new Error(`${rewardName}: dataset row has no column "${goldColumn}" holding the gold STL formula`);
  let gold: StlFormula;
  try {
    gold = parseStl(goldText);
  } catch (error) {
    throw new Error(`${rewardName}: column "${goldColumn}" is not an STL formula: ${(error as Error).message}`);
  }
  const text = tag === '' ? completion : tagContent(completion, tag);
  return { gold, predicted: text === null ? null : tryParseStl(text), goldText, predictedText: text?.trim() ?? '' };
}

const f1 = (predicted: ReadonlySet<string> | readonly string[], gold: ReadonlySet<string> | readonly string[]) => {
  const left = [...predicted];
  const right = [...gold];
  const pool = [...right];
  let overlap = 0;
  for (const item of left) {
    const at = pool.indexOf(item);
    if (at >= 0) {
      overlap++;
      pool.splice(at, 1);
    }
  }
  return left.length + right.length === 0 ? 1 : (2 * overlap) / (left.length + right.length);
};

/** Options of {@link stlPropositions}. */
export interface StlPropositionsOptions extends StlInputOptions {
  /** `f1` (default), or `gold-recall`: RESTL's m_a = |A(ŷ) ∩ A(y*)| / |A(y*)| (its eq. for m_a). */
  score?: 'f1' | 'gold-recall';
}

/**
 * Atomic proposition alignment: F1 between the predicted and gold formulas' sets of atomic
 * propositions (signal, comparison and threshold all must match), or with `score: 'gold-recall'`
 * RESTL's m_a, the share of the gold atoms the prediction has. 0 when the formula does not parse.
 * @example stlPropositions() // gold "G[0,5] x>3", "G[0,5] x>4" → 0; "F[0,5] x>3" → 1
 */
export function stlPropositions({ score = 'f1', ...options }: StlPropositionsOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const { gold, predicted } = formulas(completion, row, options, 'stl-propositions');
    if (!predicted) return 0;
    const [ours, theirs] = [atomicPropositions(predicted), atomicPropositions(gold)];
    return score === 'f1' ? f1(ours, theirs) : [...theirs].filter((atom) => ours.has(atom)).length / theirs.size;
  };
}

/** Longest common subsequence length of two token lists. */
function lcs(left: readonly string[], right: readonly string[]): number {
  const row = new Array<number>(right.length + 1).fill(0);
  for (const token of left) {
    let diagonal = 0;
    for (let column = 1; column <= right.length; column++) {
      const above = row[column]!;
      row[column] = token === right[column - 1] ? diagonal + 1 : Math.max(above, row[column - 1]!);
      diagonal = above;
    }
  }
  return row[right.length]!;
}

/** Options of {@link stlTemplatedNl}. */
export interface StlTemplatedNlOptions extends StlInputOptions {
  /** Column with the requirement's sentence (default `nl`). */
  textColumn?: string;
}

/**
 * Templated NL similarity: the predicted formula rendered to templated English
 * ({@link templatedEnglish}) against the row's sentence, ROUGE-L F1 over words. 0 when the formula
 * does not parse.
 */
export function stlTemplatedNl({ textColumn = 'nl', ...options }: StlTemplatedNlOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const sentence = row[textColumn];
    if (typeof sentence !== 'string')
      throw new Error(`stl-templated-nl: dataset row has no column "${textColumn}" holding the requirement's sentence`);
    const { predicted } = formulas(completion, row, options, 'stl-templated-nl');
    if (!predicted) return 0;
    const words = (text: string) => text.toLowerCase().split(/\s+/).filter(Boolean);
    const rendered = words(templatedEnglish(predicted));
    const reference = words(sentence);
    const common = lcs(rendered, reference);
    return common === 0 ? 0 : (2 * common) / (rendered.length + reference.length);
  };
}

/** Options of {@link stlSuccinctness}. */
export interface StlSuccinctnessOptions extends StlInputOptions {
  /** `size` (default): in operators and atoms; `characters`: RESTL's m_l = 1 − ||y*| − |ŷ|| / |y*|. */
  measure?: 'size' | 'characters';
}

/**
 * Formula succinctness: min(1, size(gold) / size(predicted)) in operators and atoms, so a formula
 * padded with redundant operators (`!!φ`, `φ & φ`) scores below 1; or with `measure: 'characters'`
 * RESTL's m_l = 1 − ||y*| − |ŷ|| / |y*| over the two formulas' characters as written (below 0 past
 * twice the gold length, as the formula gives). 0 when it does not parse.
 */
export function stlSuccinctness({ measure = 'size', ...options }: StlSuccinctnessOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const { gold, predicted, goldText, predictedText } = formulas(completion, row, options, 'stl-succinctness');
    if (!predicted) return 0;
    if (measure === 'size') return Math.min(1, formulaSize(gold) / formulaSize(predicted));
    const [reference, own] = [[...goldText.trim()].length, [...predictedText].length];
    return 1 - Math.abs(reference - own) / reference;
  };
}

/** Options of {@link stlSymbols}. */
export interface StlSymbolsOptions extends StlInputOptions {
  /** `token-f1` (default): F1 over canonical tokens; `rouge-l`: RESTL's m_s, ROUGE-L F1 over the tokens as written. */
  measure?: 'token-f1' | 'rouge-l';
}

/**
 * STL-level symbol matching: F1 over the multiset of the two formulas' tokens (operators, intervals,
 * atoms), as printed canonically; or with `measure: 'rouge-l'` RESTL's m_s = ROUGE-L(y*, ŷ), the F1
 * of the longest common subsequence of the two formulas' tokens as written: 2·LCS / (|ŷ| + |y*|).
 */
export function stlSymbols({ measure = 'token-f1', ...options }: StlSymbolsOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const { gold, predicted, goldText, predictedText } = formulas(completion, row, options, 'stl-symbols');
    if (!predicted) return 0;
    if (measure === 'token-f1') return f1(stlTokens(printStl(predicted)), stlTokens(printStl(gold)));
    const [ours, theirs] = [stlTokens(predictedText), stlTokens(goldText)];
    return (2 * lcs(ours, theirs)) / (ours.length + theirs.length);
  };
}

/** Options of {@link stlTraceAgreement}. */
export interface StlTraceAgreementOptions extends StlInputOptions {
  /** How many random traces to compare on (default 64). */
  traces?: number;
  /** Seed of the traces (default 1; the same traces for every completion of a row). */
  seed?: number;
}

/**
 * Semantic agreement on generated traces: the fraction of random traces on which the predicted and
 * gold formulas agree on satisfaction at t = 0 (robustness > 0). Traces: every signal of either
 * formula, a random walk of half-integers in [0.5, 9.5] (never equal to a whole-number threshold,
 * so robustness is never 0), as long as the longer horizon needs. 0 when the formula does not
 * parse. Our addition beside RESTL's four aspects: a check of meaning that needs no model.
 */
export function stlTraceAgreement({ traces = 64, seed = 1, ...options }: StlTraceAgreementOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const { gold, predicted } = formulas(completion, row, options, 'stl-traces');
    if (!predicted) return 0;
    const signals = [
      ...new Set([...atomicPropositions(gold), ...atomicPropositions(predicted)].map((atom) => atom.split(/[<>]/)[0]!)),
    ];
    const length = Math.max(formulaHorizon(gold), formulaHorizon(predicted)) + 1;
    let state = (seed * 2654435761) >>> 0 || 1;
    const next = (n: number) => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return (state >>> 8) % n;
    };
    let agree = 0;
    for (let draw = 0; draw < traces; draw++) {
      const trace: Record<string, number[]> = {};
      for (const signal of signals.sort()) {
        const values = [next(10)];
        while (values.length < length) values.push(Math.min(9, Math.max(0, values.at(-1)! + next(5) - 2)));
        trace[signal] = values.map((value) => value + 0.5);
      }
      if (robustness(gold, trace) > 0 === robustness(predicted, trace) > 0) agree++;
    }
    return agree / traces;
  };
}
