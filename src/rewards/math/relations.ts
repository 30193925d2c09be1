/**
 * Relations in final answers, read as Math-Verify reads them: a chain such as `x = 5+5+1 = 11` or
 * `-2 \le x \le 7` split at its top-level relation signs (every spelling: `\geq`, `\ge`, `>=`, `≥`,
 * `\neq`, `!=`, `\lt`, …); `a \approx b` is `b` when `a` is a bare name and `a` otherwise (the value
 * before an approximation counts); two relations are equal when each link has equal sides (or
 * swapped sides and the converse sign), or when their `lhs − rhs` differ by a constant factor: any
 * non-zero factor for `=` and `≠` (`2x+4y-3=0` ≡ `y=-\frac12x+\frac34`), a positive one for the
 * same inequality and a negative one for the converse (`-x > -1` ≡ `x < 1`). A one-variable
 * inequality also reads as the interval it describes (`-2 \le x \le 7` is `[-2,7]`).
 *
 * Not here: which of gold and prediction is unwrapped to its right-hand side (`verify.ts`, which
 * follows Math-Verify's asymmetric rules), and comparing the sides themselves (`verify.ts` passes it in).
 */
import { parseExpression, proportionality } from './expression.js';

/** A relation sign in canonical spelling. */
export type RelationSign = '=' | '\\neq' | '<' | '\\leq' | '>' | '\\geq';

/** A chain of relations: `parts[i] signs[i] parts[i + 1]`; no signs when an approximation left one value (`x \approx 11`). */
export interface Relation {
  parts: string[];
  signs: RelationSign[];
}

/** Every spelling of each sign, longest first so that `\leq` is not read as `\le` + `q`. */
const SIGNS: ReadonlyArray<[RegExp, RelationSign | 'approx']> = [
  [/^(?:\\approx|≈|~=)/, 'approx'],
  [/^(?:\\neq|\\ne(?![a-zA-Z])|!=|≠)/, '\\neq'],
  [/^(?:\\leqslant|\\leq|\\le(?![a-zA-Z])|<=|≤)/, '\\leq'],
  [/^(?:\\geqslant|\\geq|\\ge(?![a-zA-Z])|>=|≥)/, '\\geq'],
  [/^(?:\\lt(?![a-zA-Z])|<)/, '<'],
  [/^(?:\\gt(?![a-zA-Z])|>)/, '>'],
  [/^=/, '='],
];

const CONVERSE: Record<RelationSign, RelationSign> = {
  '=': '=',
  '\\neq': '\\neq',
  '<': '>',
  '\\leq': '\\geq',
  '>': '<',
  '\\geq': '\\leq',
};

/** A bare name (`x`, `k`, `A`, `x_1`, `\alpha`): the left side of an assignment. */
const NAME = /^(?:[a-zA-Z]{1,3}|\\(?:alpha|beta|gamma|delta|theta|lambda|mu|sigma|phi|omega|tau|rho))(?:_\{?\w+\}?)?$/;

/** Whether a side is a bare name, so that `name = value` (or `name \approx value`) assigns a value. */
export function isName(text: string): boolean {
  return NAME.test(text.trim());
}

/**
 * The relation chain of an answer, or null when it has no top-level relation sign, or when it is a
 * list (a top-level `,` or `;`: "x=1, y=2" is a list of assignments, not one relation).
 */
export function parseRelation(text: string): Relation | null {
  const parts: string[] = [];
  const signs: Array<RelationSign | 'approx'> = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (char === '(' || char === '[' || char === '{') depth++;
    else if (char === ')' || char === ']' || char === '}') depth--;
    else if (depth === 0 && (char === ',' || char === ';')) return null;
    else if (depth === 0 && (char === '\\' || '<>=!≤≥≠≈~'.includes(char))) {
      const rest = text.slice(index, index + 10);
      const found = SIGNS.find(([pattern]) => pattern.test(rest));
      if (!found) {
        if (char === '\\') index++; // another command (or an escaped brace): skip its first letter
        continue;
      }
      const length = found[0].exec(rest)![0].length;
      parts.push(text.slice(start, index).trim());
      signs.push(found[1]);
      start = index + length;
      index = start - 1;
    }
  }
  if (signs.length === 0) return null;
  parts.push(text.slice(start).trim());
  if (parts.some((part) => part === '')) return null;
  return foldApproximations(parts, signs);
}

/** Math-Verify's `\approx`: after a bare name it assigns (`x \approx 11` is 11); after a value it is dropped with its right side. */
function foldApproximations(parts: string[], signs: Array<RelationSign | 'approx'>): Relation {
  const chain: Relation = { parts: [parts[0]!], signs: [] };
  signs.forEach((sign, index) => {
    const next = parts[index + 1]!;
    if (sign !== 'approx') {
      chain.parts.push(next);
      chain.signs.push(sign);
    } else if (chain.parts.length === 1 && isName(chain.parts[0]!)) chain.parts = [next];
  });
  return chain;
}

/** Whether every sign is `=`. */
export function isEquation(relation: Relation): boolean {
  return relation.signs.every((sign) => sign === '=');
}

/** An equation whose first side is a bare name, `x = 5+5+1 = 11`, as the one assignment `x = 11`. */
export function asAssignment(relation: Relation): Relation | null {
  if (!isEquation(relation) || !isName(relation.parts[0]!)) return null;
  return { parts: [relation.parts[0]!, relation.parts[relation.parts.length - 1]!], signs: ['='] };
}

/**
 * A chain of three or more `=` with a side our parser cannot read (`1 = \zzz = x = 0`) is its last
 * side, as Math-Verify falls back to the last equation part when the whole does not parse.
 */
export function lastSideIfUnreadable(relation: Relation): string | null {
  if (relation.parts.length < 3 || !isEquation(relation)) return null;
  return relation.parts.some((part) => parseExpression(part) === null)
    ? relation.parts[relation.parts.length - 1]!
    : null;
}

type SidesMatch = (predicted: string, gold: string) => boolean;

/** One link of each chain: equal sides, swapped sides with the converse sign, or proportional `lhs − rhs`. */
function linkMatches(
  [predictedLeft, predictedSign, predictedRight]: [string, RelationSign, string],
  [goldLeft, goldSign, goldRight]: [string, RelationSign, string],
  same: SidesMatch,
): boolean {
  if (predictedSign === goldSign && same(predictedLeft, goldLeft) && same(predictedRight, goldRight)) return true;
  if (predictedSign === CONVERSE[goldSign] && same(predictedLeft, goldRight) && same(predictedRight, goldLeft))
    return true;
  const factor = proportionality(`(${predictedLeft})-(${predictedRight})`, `(${goldLeft})-(${goldRight})`);
  if (factor === null) return false;
  const symmetric = goldSign === '=' || goldSign === '\\neq';
  if (predictedSign === goldSign && (factor > 0 || symmetric)) return true;
  return predictedSign === CONVERSE[goldSign] && factor < 0;
}

/** True when two relation chains have as many links and each pair of links is equal. */
export function relationsMatch(predicted: Relation, gold: Relation, same: SidesMatch): boolean {
  if (predicted.signs.length !== gold.signs.length) return false;
  return gold.signs.every((sign, index) =>
    linkMatches(
      [predicted.parts[index]!, predicted.signs[index]!, predicted.parts[index + 1]!],
      [gold.parts[index]!, sign, gold.parts[index + 1]!],
      same,
    ),
  );
}

const LOWER: Partial<Record<RelationSign, string>> = { '<': '(', '\\leq': '[' };
const UPPER: Partial<Record<RelationSign, string>> = { '<': ')', '\\leq': ']' };

/**
 * The interval a one-variable inequality describes (`x < 3` → `(-\infty,3)`, `-2 \le x \le 7` →
 * `[-2,7]`), or null when it is not one.
 */
export function relationAsInterval(relation: Relation): string | null {
  let { parts, signs } = relation;
  if (signs.every((sign) => sign === '>' || sign === '\\geq')) {
    parts = [...parts].reverse();
    signs = signs.map((sign) => CONVERSE[sign]).reverse();
  }
  if (!signs.every((sign) => sign === '<' || sign === '\\leq')) return null;
  if (parts.length === 3 && isName(parts[1]!)) return `${LOWER[signs[0]!]}${parts[0]},${parts[2]}${UPPER[signs[1]!]}`;
  if (parts.length !== 2) return null;
  if (isName(parts[0]!)) return `(-\\infty,${parts[1]}${UPPER[signs[0]!]}`;
  if (isName(parts[1]!)) return `${LOWER[signs[0]!]}${parts[0]},\\infty)`;
  return null;
}
