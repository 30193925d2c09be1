/**
 * Math answer verification: normalise two final answers (LaTeX spacing, `\dfrac`, `\text{}`,
 * units, degrees, percentages, thousands separators, `x =` prefixes) and compare them by value,
 * element-wise for tuples, intervals and lists, symbolically (random-point evaluation) for
 * expressions with variables, and as normalised text otherwise.
 *
 * Not here: extracting the answer from a solution (`extract.ts`), the reward wrapper (`../math.ts`).
 */
import { expressionsEqual, numbersClose, parseExpression } from './expression.js';
import { readBraceGroup } from './extract.js';

/** Replaces `\name{content}` by `content` (unwrapping text/font commands), brace-balanced. */
function unwrapCommand(text: string, names: readonly string[]): string {
  const pattern = new RegExp(`\\\\(?:${names.join('|')})\\s*(?=\\{)`, 'g');
  let result = text;
  for (let match = pattern.exec(result); match; match = pattern.exec(result)) {
    const group = readBraceGroup(result, match.index + match[0].length);
    if (!group) break;
    result = result.slice(0, match.index) + group.content + result.slice(group.end);
    pattern.lastIndex = match.index;
  }
  return result;
}

/** A normalised answer plus whether it carried a percent sign. */
interface Normalised {
  text: string;
  percent: boolean;
}

const UNIT_WORD = /\s*(?:\\?[a-zA-Z]{2,}\.?(?:\^\{?\d\}?)?)$/;

/** Removes trailing unit words ("18 dollars", "5 cm^2", "3 \text{ inches}") when a number stays behind. */
function stripUnits(text: string): string {
  let result = text;
  for (let guard = 0; guard < 4; guard++) {
    const stripped = result.replace(UNIT_WORD, '');
    if (stripped === result || !/\d/.test(stripped) || /\\(?:frac|sqrt)$|[\^_]$/.test(stripped.trim())) break;
    if (/\\(?:pi|infty|sqrt|frac|circ)$/.test(result.match(UNIT_WORD)![0].trim())) break; // maths, not a unit
    result = stripped.trimEnd();
  }
  return result;
}

/** Canonical text of one answer. */
export function normaliseAnswer(raw: string): Normalised {
  let text = raw.trim().replace(/\u2212/g, '-').replace(/[×·]/g, '*').replace(/÷/g, '/');
  text = text.replace(/^\\\[|\\\]$/g, '').replace(/^\\\(|\\\)$/g, '').replace(/^\$+|\$+$/g, '');
  text = text.replace(/(\d)\s*\\(?:text|mbox|mathrm)\{\s*[a-zA-Z][a-zA-Z\s.]*\}(\^\{?\d\}?)?\s*$/, '$1'); // a unit after a number: "10\text{ m}"
  text = unwrapCommand(text, ['text', 'textbf', 'textit', 'mathrm', 'mathbf', 'mbox', 'operatorname', 'boxed']);
  text = text.replace(/\{\\rm\s+([^}]*)\}/g, '$1');
  text = text
    .replace(/\\(?:left|right|displaystyle|big|Big|bigg|Bigg)(?![a-zA-Z])/g, '')
    .replace(/\\[!,;:]|\\ |~/g, ' ')
    .replace(/\\[dt]frac/g, '\\frac')
    .replace(/\^\s*\{?\\circ\}?|°|\\degree/g, '')
    .replace(/\{,\}/g, '')
    .replace(/\\\$|\$/g, '')
    .replace(/\\le(?![a-zA-Z])/g, '\\leq')
    .replace(/\\ge(?![a-zA-Z])/g, '\\geq');
  const percent = /\\?%\s*$/.test(text);
  text = text.replace(/\\?%/g, '');
  text = text.replace(/\\(frac|sqrt)\s*(\d)(\d)?/g, (_, name: string, a: string, b?: string) =>
    name === 'frac' && b ? `\\frac{${a}}{${b}}` : `\\${name}{${a}}${b ?? ''}`,
  );
  text = text.replace(/\\frac\{([^{}]*)\}\s*(\d)/g, '\\frac{$1}{$2}');
  text = text.replace(/(\d) (?=\d{3}(?!\d))/g, '$1'); // "1 000" written with a thin space
  text = text.replace(/^[a-zA-Z]\s*\\in\s*/, '').replace(/^(?:[a-zA-Z]|\\[a-z]+)(?:_\{?\w+\}?)?\s*=\s*(?=[^=]*$)/, '');
  text = text.replace(/\s+/g, ' ').trim();
  text = stripUnits(text).replace(/[.\s]+$/, '');
  if (/^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) text = text.replace(/,/g, '');
  return { text, percent };
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
  if (!/^[([]/.test(text) || !/[)\]]$/.test(text)) return null;
  let depth = 0;
  for (let index = 0; index < text.length - 1; index++) {
    if ('([{'.includes(text[index]!)) depth++;
    else if (')]}'.includes(text[index]!)) depth--;
    if (depth === 0) return null; // the first bracket closes before the end: "(a)(b)"
  }
  return { open: text[0]!, close: text[text.length - 1]!, inner: text.slice(1, -1) };
}

/** Text comparison for non-numeric answers: case, spaces, braces and a few wrappers ignored. */
function textKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[{}\s]/g, '')
    .replace(/^\((.)\)$/, '$1')
    .replace(/\\(?:mathbf|mathrm|textbf|text)/g, '');
}

/** Compares two single (non-list) answers by value, then symbolically, then as text. */
function scalarsMatch(predicted: Normalised, gold: Normalised): boolean {
  if (textKey(predicted.text) === textKey(gold.text)) return true;
  const left = parseExpression(predicted.text);
  const right = parseExpression(gold.text);
  if (!left || !right) return false;
  if (expressionsEqual(left, right)) return true;
  if (left.variables.size === 0 && right.variables.size === 0 && predicted.percent !== gold.percent) {
    const a = left.evaluate(new Map());
    const b = right.evaluate(new Map());
    return predicted.percent ? numbersClose(a / 100, b) : numbersClose(a, b / 100); // 50% = 0.5
  }
  return false;
}

/** Matches two lists element-wise, in order or as multisets. */
function listsMatch(predicted: string[], gold: string[], ordered: boolean, depth: number): boolean {
  if (predicted.length !== gold.length) return false;
  if (ordered) return predicted.every((part, index) => structuredMatch(part, gold[index]!, depth + 1));
  const unused = [...gold];
  for (const part of predicted) {
    const found = unused.findIndex((candidate) => structuredMatch(part, candidate, depth + 1));
    if (found < 0) return false;
    unused.splice(found, 1);
  }
  return true;
}

/** Recursive comparison: unions, equations, enclosed tuples/intervals/sets, bare lists, scalars. */
function structuredMatch(predictedRaw: string, goldRaw: string, depth: number): boolean {
  if (depth > 8) return false;
  const predicted = normaliseAnswer(predictedRaw);
  const gold = normaliseAnswer(goldRaw);
  if (predicted.text === gold.text && predicted.text !== '') return true;
  for (const separator of ['\\cup', '=']) {
    const a = splitTopLevel(predicted.text, separator);
    const b = splitTopLevel(gold.text, separator);
    if (a.length > 1 || b.length > 1) return listsMatch(a, b, true, depth);
  }
  const a = enclosure(predicted.text);
  const b = enclosure(gold.text);
  const aParts = splitTopLevel(a ? a.inner : predicted.text, ',');
  const bParts = splitTopLevel(b ? b.inner : gold.text, ',');
  if (aParts.length > 1 || bParts.length > 1) {
    if (a && b) {
      if (a.open !== b.open || a.close !== b.close) return false; // (1, 2] is not [1, 2]
      return listsMatch(aParts, bParts, a.open !== '{', depth);
    }
    if (a || b) return false; // "(-2, 1)" (a point or an interval) is not the solution list "-2, 1"
    return listsMatch(aParts, bParts, false, depth);
  }
  if (a && b && (a.open !== b.open || a.close !== b.close) && !(a.open === '(' && b.open === '(')) return false;
  return scalarsMatch(predicted, gold);
}

/** True when a predicted final answer equals the gold answer by value or form. */
export function answersMatch(predicted: string, gold: string): boolean {
  if (predicted.trim() === '' || gold.trim() === '') return false;
  return structuredMatch(predicted, gold, 0);
}
