/**
 * Math answer verification with Math-Verify's semantics: first relations (`relations.ts`), with
 * its asymmetric rules (a predicted equation against a gold value counts by its right-hand side;
 * a gold assignment `x = 5` against a predicted value by its value; a gold inequality against a
 * predicted interval as the interval it describes, and the other way round only when asked);
 * then two normalised answers (`normalise.ts`) by value, element-wise for tuples, intervals,
 * matrices and lists (sets and unions of sets order-free, a tuple against a set of the same
 * elements sorted), symbolically for expressions with variables, and as normalised text
 * otherwise. Scalars go to our small evaluator first (`expression.ts`, microseconds) and to the
 * Compute Engine (`symbolic.ts`) only when ours cannot read one side.
 *
 * Every answer is held to `limits.ts`'s bounds before any of this: past them it matches nothing;
 * and the comparison itself to its work budget (`VERIFY_BUDGET`: structural comparisons and engine
 * calls, counted in `currentWork`), past which it matches nothing either.
 *
 * Not here: extracting the answer from a solution (`extract.ts`), the reward wrapper (`../math.ts`).
 */
import { expressionsEqual, numbersClose, parseExpression } from './expression.js';
import { answerRefusal, currentWork, VERIFY_BUDGET } from './limits.js';
import { normaliseAnswer, type Normalised } from './normalise.js';
import {
  asAssignment,
  isEquation,
  lastSideIfUnreadable,
  parseRelation,
  relationAsInterval,
  relationsMatch,
  type Relation,
} from './relations.js';
import { engineEqual } from './symbolic.js';

export { normaliseAnswer } from './normalise.js';

/** How two answers are compared; every field has the default that `answersMatch` uses without options. */
export interface VerifyOptions {
  /** Significant digits that must agree in a numeric comparison (default 6: 3.14159 ≠ 3.1416, 1/3 = 0.333333). */
  precision?: number;
  /** Whether 50% also equals 0.5 (default true); 50% always equals 50. */
  percentAsFraction?: boolean;
  /**
   * Whether a predicted inequality may equal a gold interval, `-2 \le x \le 7` ~ `[-2,7]`
   * (default false, Math-Verify's `allow_set_relation_comp`); a predicted interval always equals a gold inequality.
   */
  allowSetRelationComparison?: boolean;
}

interface Settings {
  tolerance: number;
  percentAsFraction: boolean;
  allowSetRelationComparison: boolean;
}

/** Most elements of two unordered lists compared pair by pair once equal texts have been paired off. */
const MAX_PAIRWISE = 16;

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

/** A decimal comma: one comma, then other than three digits (those are thousands, "3,750"), or after a lone 0 ("0,111"). */
const DECIMAL_COMMA = /^-?\d+,(?:\d{1,2}|\d{4,})$|^-?0,\d+$/;

/** "3,75" read as 3.75 when the other answer is one number, so the comma cannot separate two elements. */
function readDecimalComma(text: string, other: string): string {
  return DECIMAL_COMMA.test(text) && !other.includes(',') && enclosure(other) === null ? text.replace(',', '.') : text;
}

/** Counts the texts handed to a parser (see limits.ts's VerifyWork). */
function parsing(...texts: string[]): void {
  for (const text of texts) currentWork.longestParsed = Math.max(currentWork.longestParsed, text.length);
}

/** The engine's verdict, within the comparison's budget of engine calls (past it: no match). */
function engineSays(predicted: string, gold: string, settings: Settings): boolean {
  if (currentWork.engineCalls >= VERIFY_BUDGET.engineCalls) return false;
  currentWork.engineCalls++;
  parsing(predicted, gold);
  return engineEqual(predicted, gold, settings.tolerance) === true;
}

/** Compares two single (non-list) answers as text, then by value or symbolically. */
function scalarsMatch(predicted: Normalised, gold: Normalised, settings: Settings): boolean {
  if (textKey(predicted.text) === textKey(gold.text)) return true;
  parsing(predicted.text, gold.text);
  const left = parseExpression(predicted.text);
  const right = parseExpression(gold.text);
  if (!left || !right) return engineSays(predicted.text, gold.text, settings); // LaTeX ours does not read
  if (expressionsEqual(left, right, settings.tolerance)) return true;
  // Ours reads i as a variable, exact only for polynomials in i; the engine knows i² = −1 (e^{iπ} = −1).
  if (left.variables.has('i') || right.variables.has('i')) return engineSays(predicted.text, gold.text, settings);
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

/** Matches two lists element-wise, in order or as multisets (equal texts paired first, the rest pair by pair up to MAX_PAIRWISE). */
function listsMatch(predicted: string[], gold: string[], ordered: boolean, depth: number, settings: Settings): boolean {
  if (predicted.length !== gold.length) return false;
  if (ordered) return predicted.every((part, index) => structuredMatch(part, gold[index]!, depth + 1, settings));
  const unused = new Map<string, number>();
  for (const part of gold) unused.set(textKey(part), (unused.get(textKey(part)) ?? 0) + 1);
  const leftover: string[] = [];
  for (const part of predicted) {
    const count = unused.get(textKey(part)) ?? 0;
    if (count > 0) unused.set(textKey(part), count - 1);
    else leftover.push(part);
  }
  if (leftover.length > MAX_PAIRWISE) return false;
  const remaining = gold.filter((part) => {
    const count = unused.get(textKey(part)) ?? 0;
    if (count > 0) unused.set(textKey(part), count - 1);
    return count > 0;
  });
  for (const part of leftover) {
    const found = remaining.findIndex((candidate) => structuredMatch(part, candidate, depth + 1, settings));
    if (found < 0) return false;
    remaining.splice(found, 1);
  }
  return true;
}

/**
 * A list's elements with repeats dropped, equal texts first and then equal values (up to
 * MAX_PAIRWISE elements): a list of solutions is a set, as Math-Verify's sympy `FiniteSet` is.
 */
function distinctElements(parts: string[], depth: number, settings: Settings): string[] {
  const byText = [...new Map(parts.map((part) => [textKey(part), part] as const)).values()];
  if (byText.length > MAX_PAIRWISE) return byText;
  const kept: string[] = [];
  for (const part of byText)
    if (!kept.some((other) => structuredMatch(part, other, depth + 1, settings))) kept.push(part);
  return kept;
}

/** Set elements in increasing order of value when every one is a number (Math-Verify sorts a set it compares with a tuple), else null. */
function sortedByValue(parts: string[]): string[] | null {
  const values = parts.map((part) => {
    const parsed = parseExpression(normaliseAnswer(part).text);
    return parsed && parsed.variables.size === 0 ? parsed.evaluate(new Map()) : Number.NaN;
  });
  if (values.some((value) => Number.isNaN(value))) return null;
  return parts
    .map((part, index) => ({ part, value: values[index]! }))
    .sort((a, b) => a.value - b.value)
    .map(({ part }) => part);
}

/** "((a),(b))" written inside one more pair of brackets, "(((a),(b)))" or "[((a),(b))]", without them: the outer pair only groups. */
function withoutGroupingBrackets(text: string): string {
  let result = text;
  for (let guard = 0; guard < 4; guard++) {
    const outer = enclosure(result);
    if (!outer || outer.open === '{' || splitTopLevel(outer.inner, ',').length > 1 || !enclosure(outer.inner)) break;
    result = outer.inner;
  }
  return result;
}

/** Recursive comparison: unions, equations, enclosed tuples/intervals/sets, bare lists, scalars. */
function structuredMatch(predictedRaw: string, goldRaw: string, depth: number, settings: Settings): boolean {
  if (depth > 8) return false;
  if (currentWork.comparisons >= VERIFY_BUDGET.comparisons) return false; // see VERIFY_BUDGET
  currentWork.comparisons++;
  const predicted = normaliseAnswer(predictedRaw);
  const gold = normaliseAnswer(goldRaw);
  predicted.text = readDecimalComma(mergeSetUnion(withoutGroupingBrackets(predicted.text)), gold.text);
  gold.text = readDecimalComma(mergeSetUnion(withoutGroupingBrackets(gold.text)), predicted.text);
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
      const tupleAndSet = (a.open === '(' && a.close === ')') !== (b.open === '(' && b.close === ')');
      if (tupleAndSet && (a.open === '{' || b.open === '{')) {
        // A tuple against a set: the set's elements in increasing order, as Math-Verify compares them.
        const sorted = sortedByValue(a.open === '{' ? aParts : bParts);
        if (!sorted) return false;
        return a.open === '{'
          ? listsMatch(sorted, bParts, true, depth, settings)
          : listsMatch(aParts, sorted, true, depth, settings);
      }
      if (a.open !== b.open || a.close !== b.close) return false; // (1, 2] is not [1, 2]
      return listsMatch(aParts, bParts, a.open !== '{', depth, settings);
    }
    if (a || b) return false; // "(-2, 1)" (a point or an interval) is not the solution list "-2, 1"
    const aDistinct = distinctElements(aParts, depth, settings);
    const bDistinct = distinctElements(bParts, depth, settings);
    if (aDistinct.length === 1 && bDistinct.length === 1)
      return structuredMatch(aDistinct[0]!, bDistinct[0]!, depth + 1, settings); // "15\frac{39}{40}, \frac{639}{40}" is one value
    return listsMatch(aDistinct, bDistinct, false, depth, settings);
  }
  if (a && b && (a.open !== b.open || a.close !== b.close) && !(a.open === '(' && b.open === '(')) return false;
  return scalarsMatch(predicted, gold, settings);
}

/** Math-Verify's light cleaning before relations are read: wrappers, `\left`/`\right`, doubled backslashes. */
function relationText(raw: string): string {
  let text = raw.trim();
  if (!text.includes('matrix')) text = text.replace(/\\\\(?=[a-zA-Z])/g, '\\');
  return text
    .replace(/^\$+|\$+$/g, '')
    .replace(/^\\\[|\\\]$/g, '')
    .replace(/^\\\(|\\\)$/g, '')
    .replace(/\\(?:left|right|displaystyle)(?![a-zA-Z])/g, '')
    .trim();
}

/** A relation chain reduced as Math-Verify parses it: an unreadable `=` chain to its last side (a string), an assignment to `x = last`. */
function readStatement(text: string): { relation: Relation | null; text: string } {
  const relation = parseRelation(text);
  if (!relation) return { relation: null, text };
  if (relation.signs.length === 0) return { relation: null, text: relation.parts[0]! }; // "x \approx 11" is 11
  const last = lastSideIfUnreadable(relation);
  if (last !== null) return { relation: null, text: last };
  return { relation: asAssignment(relation) ?? relation, text };
}

/** Whether a normalised answer is a set: an interval, a set or a union of them. */
function isSetLike(text: string): boolean {
  const normalised = normaliseAnswer(text).text;
  return enclosure(normalised) !== null || splitTopLevel(normalised, '\\cup').length > 1;
}

/** Math-Verify's top-level comparison: relations by its rules, everything else structurally. */
function statementsMatch(predictedRaw: string, goldRaw: string, settings: Settings): boolean {
  let predicted = readStatement(relationText(predictedRaw));
  let gold = readStatement(relationText(goldRaw));
  const predictedEquation = predicted.relation !== null && isEquation(predicted.relation);
  const goldEquation = gold.relation !== null && isEquation(gold.relation);
  const goldAssignment = gold.relation !== null && asAssignment(gold.relation) !== null;
  if (predictedEquation && !goldEquation) {
    predicted = { relation: null, text: predicted.relation!.parts[predicted.relation!.parts.length - 1]! }; // "k = 1/3" against "1/3"
  } else if (goldAssignment && !predictedEquation) {
    gold = { relation: null, text: gold.relation!.parts[gold.relation!.parts.length - 1]! }; // "k = 1" against "1"
  }
  const same = (a: string, b: string) => structuredMatch(a, b, 1, settings);
  if (predicted.relation && gold.relation) return relationsMatch(predicted.relation, gold.relation, same);
  if (gold.relation && isSetLike(predicted.text)) {
    const interval = relationAsInterval(gold.relation); // "-2 \le x \le 7" against "x \in [-2,7]"
    return interval !== null && structuredMatch(predicted.text, interval, 0, settings);
  }
  if (predicted.relation && settings.allowSetRelationComparison && isSetLike(gold.text)) {
    const interval = relationAsInterval(predicted.relation);
    return interval !== null && structuredMatch(interval, gold.text, 0, settings);
  }
  if (predicted.relation || gold.relation) return false; // a relation is not a value
  return structuredMatch(predicted.text, gold.text, 0, settings);
}

/** True when a predicted final answer equals the gold answer by value or form (false for any answer past `limits.ts`'s bounds). */
export function answersMatch(predicted: string, gold: string, options: VerifyOptions = {}): boolean {
  Object.assign(currentWork, { comparisons: 0, engineCalls: 0, longestParsed: 0 });
  if (predicted.trim() === '' || gold.trim() === '') return false;
  if (answerRefusal(predicted) !== null || answerRefusal(gold) !== null) return false;
  const settings = {
    tolerance: 10 ** -(options.precision ?? 6),
    percentAsFraction: options.percentAsFraction ?? true,
    allowSetRelationComparison: options.allowSetRelationComparison ?? false,
  };
  return statementsMatch(predicted, gold, settings);
}
