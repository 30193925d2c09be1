/**
 * Math answer verification: compare two normalised final answers (`normalise.ts`) by value,
 * element-wise for tuples, intervals, matrices and lists (sets and unions of sets order-free),
 * symbolically for expressions with variables, and as normalised text otherwise. Scalars go to
 * our small evaluator first (`expression.ts`, microseconds) and to the Compute Engine
 * (`symbolic.ts`) only when ours cannot read one side.
 *
 * Not here: extracting the answer from a solution (`extract.ts`), the reward wrapper (`../math.ts`).
 */
import { expressionsEqual, numbersClose, parseExpression } from './expression.js';
import { normaliseAnswer, type Normalised } from './normalise.js';
import { engineEqual } from './symbolic.js';

export { normaliseAnswer } from './normalise.js';

/** How two answers are compared; every field has the default that `answersMatch` uses without options. */
export interface VerifyOptions {
  /** Significant digits that must agree in a numeric comparison (default 6: 3.14159 ≠ 3.1416, 1/3 = 0.333333). */
  precision?: number;
  /** Whether 50% also equals 0.5 (default true); 50% always equals 50. */
  percentAsFraction?: boolean;
}

interface Settings {
  tolerance: number;
  percentAsFraction: boolean;
}

/** Splits on `separator` at bracket depth 0. */
function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if ('([{'.includes(char)) depth++;
    else if (')]}'.includes(char)) depth--;
    else if (depth === 0 && text.startsWith(separator, index)) {
      parts.push(text.slice(start, index).trim());
      start = index + separator.length;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

/** The enclosing bracket pair of a tuple/interval/set, or null when the text is not wholly enclosed. */
function enclosure(text: string): { open: string; close: string; inner: string } | null {
  const set = /^\\\{(.*)\\\}$/.exec(text);
  if (set) return { open: '{', close: '}', inner: set[1]! };
  if (!/^[([{]/.test(text) || !/[)\]}]$/.test(text)) return null;
  if ((text[0] === '{') !== text.endsWith('}')) return null; // "{" pairs only with "}"; ( and [ mix in intervals
  let depth = 0;
  for (let index = 0; index < text.length - 1; index++) {
    if ('([{'.includes(text[index]!)) depth++;
    else if (')]}'.includes(text[index]!)) depth--;
    if (depth === 0) return null; // the first bracket closes before the end: "(a)(b)"
  }
  const inner = text.slice(1, -1);
  if (text[0] === '{' && splitTopLevel(inner, ',').length < 2) return null; // "{x}" is a TeX group, "{1,2}" a set
  return { open: text[0]!, close: text[text.length - 1]!, inner };
}

/** A union of sets, "\{1,3\} \cup \{2,4\}", as the one set "\{1,3,2,4\}" (duplicates kept once); other text unchanged. */
function mergeSetUnion(text: string): string {
  const parts = splitTopLevel(text, '\\cup');
  if (parts.length < 2) return text;
  const sets = parts.map(enclosure);
  if (!sets.every((set) => set?.open === '{')) return text;
  const elements = new Map<string, string>();
  for (const set of sets) for (const element of splitTopLevel(set!.inner, ',')) elements.set(textKey(element), element);
  return `\\{${[...elements.values()].join(',')}\\}`;
}

/** Text comparison for non-numeric answers: case, spaces, braces and a few wrappers ignored. */
function textKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[{}\s]/g, '')
    .replace(/^\((.)\)$/, '$1')
    .replace(/\\(?:mathbf|mathrm|textbf|text)/g, '');
}

/** A decimal comma: one comma, then other than three digits (those are thousands, "3,750"). */
const DECIMAL_COMMA = /^-?\d+,(?:\d{1,2}|\d{4,})$/;

/** "3,75" read as 3.75 when the other answer is one number, so the comma cannot separate two elements. */
function readDecimalComma(text: string, other: string): string {
  return DECIMAL_COMMA.test(text) && !other.includes(',') && enclosure(other) === null ? text.replace(',', '.') : text;
}

/** Compares two single (non-list) answers as text, then by value or symbolically. */
function scalarsMatch(predicted: Normalised, gold: Normalised, settings: Settings): boolean {
  if (textKey(predicted.text) === textKey(gold.text)) return true;
  const left = parseExpression(predicted.text);
  const right = parseExpression(gold.text);
  if (!left || !right) return engineEqual(predicted.text, gold.text, settings.tolerance) === true; // LaTeX ours does not read
  if (expressionsEqual(left, right, settings.tolerance)) return true;
  // Ours reads i as a variable, exact only for polynomials in i; the engine knows i² = −1 (e^{iπ} = −1).
  if (left.variables.has('i') || right.variables.has('i'))
    return engineEqual(predicted.text, gold.text, settings.tolerance) === true;
  if (
    settings.percentAsFraction &&
    left.variables.size === 0 &&
    right.variables.size === 0 &&
    predicted.percent !== gold.percent
  ) {
    const a = left.evaluate(new Map());
    const b = right.evaluate(new Map());
    return predicted.percent
      ? numbersClose(a / 100, b, settings.tolerance)
      : numbersClose(a, b / 100, settings.tolerance); // 50% = 0.5
  }
  return false;
}

/** Matches two lists element-wise, in order or as multisets. */
function listsMatch(predicted: string[], gold: string[], ordered: boolean, depth: number, settings: Settings): boolean {
  if (predicted.length !== gold.length) return false;
  if (ordered) return predicted.every((part, index) => structuredMatch(part, gold[index]!, depth + 1, settings));
  const unused = [...gold];
  for (const part of predicted) {
    const found = unused.findIndex((candidate) => structuredMatch(part, candidate, depth + 1, settings));
    if (found < 0) return false;
    unused.splice(found, 1);
  }
  return true;
}

/** Recursive comparison: unions, equations, enclosed tuples/intervals/sets, bare lists, scalars. */
function structuredMatch(predictedRaw: string, goldRaw: string, depth: number, settings: Settings): boolean {
  if (depth > 8) return false;
  const predicted = normaliseAnswer(predictedRaw);
  const gold = normaliseAnswer(goldRaw);
  predicted.text = readDecimalComma(mergeSetUnion(predicted.text), gold.text);
  gold.text = readDecimalComma(mergeSetUnion(gold.text), predicted.text);
  if (predicted.text === gold.text && predicted.text !== '') return true;
  for (const separator of ['\\cup', '=']) {
    const a = splitTopLevel(predicted.text, separator);
    const b = splitTopLevel(gold.text, separator);
    if (a.length > 1 || b.length > 1) return listsMatch(a, b, true, depth, settings);
  }
  const a = enclosure(predicted.text);
  const b = enclosure(gold.text);
  const aParts = splitTopLevel(a ? a.inner : predicted.text, ',');
  const bParts = splitTopLevel(b ? b.inner : gold.text, ',');
  if (aParts.length > 1 || bParts.length > 1) {
    if (a && b) {
      if (a.open !== b.open || a.close !== b.close) return false; // (1, 2] is not [1, 2]
      return listsMatch(aParts, bParts, a.open !== '{', depth, settings);
    }
    if (a || b) return false; // "(-2, 1)" (a point or an interval) is not the solution list "-2, 1"
    return listsMatch(aParts, bParts, false, depth, settings);
  }
  if (a && b && (a.open !== b.open || a.close !== b.close) && !(a.open === '(' && b.open === '(')) return false;
  return scalarsMatch(predicted, gold, settings);
}

/** True when a predicted final answer equals the gold answer by value or form. */
export function answersMatch(predicted: string, gold: string, options: VerifyOptions = {}): boolean {
  if (predicted.trim() === '' || gold.trim() === '') return false;
  const settings = { tolerance: 10 ** -(options.precision ?? 6), percentAsFraction: options.percentAsFraction ?? true };
  return structuredMatch(predicted, gold, 0, settings);
}
