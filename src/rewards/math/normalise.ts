/**
 * Canonical text of one final answer: LaTeX spacing and wrappers (`$…$`, `\(…\)`, `\left`),
 * `\dfrac`/`\tfrac`/`\cfrac`, `\frac13` shorthand, `\text{}` and font commands, units, degrees,
 * percentages, thousands separators of every common style (`1,000`, `1 000`, `1\,000`, `1{,}000`,
 * `1'000`, `1.000.000`), scientific notation (`1.5e3`), mixed numbers (`3\frac12`), matrices as
 * nested tuples, and `x =` prefixes.
 *
 * Not here: deciding whether two answers are equal (`verify.ts`), reading a decimal comma (`3,75`),
 * which depends on the other answer and so is `verify.ts`'s call too.
 */
import { readBraceGroup } from './extract.js';

/** A normalised answer plus whether it carried a percent sign. */
export interface Normalised {
  text: string;
  percent: boolean;
}

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

const UNIT_WORD = /\s*(?:\\?[a-zA-Z]{2,}\.?(?:\^\{?\d\}?)?)$/;

/** Removes trailing unit words ("18 dollars", "5 cm^2", "3 \text{ inches}") when a number stays behind. */
function stripUnits(text: string): string {
  let result = text;
  for (let guard = 0; guard < 4; guard++) {
    const stripped = result.replace(UNIT_WORD, '');
    if (stripped === result || !/\d/.test(stripped) || /\\(?:frac|sqrt)$|[\^_]$/.test(stripped.trim())) break;
    if (result.match(UNIT_WORD)![0].includes('\\')) break; // a command (\pi, \rfloor, \infty) is maths, not a unit
    result = stripped.trimEnd();
  }
  return result;
}

/** `\begin{pmatrix}a&b\\c&d\end{pmatrix}` (any matrix environment) as the nested tuple `((a,b),(c,d))`. */
function matricesAsTuples(text: string): string {
  return text.replace(
    /\\begin\{([pbvBV]?matrix|array)\}(?:\{[lcr|]*\})?([\s\S]*?)\\end\{\1\}/g,
    (_, _name: string, body: string) => {
      const rows = body
        .split(/\\\\/)
        .map((row) => row.trim())
        .filter((row) => row !== '');
      return `(${rows
        .map(
          (row) =>
            `(${row
              .split('&')
              .map((cell) => cell.trim())
              .join(',')})`,
        )
        .join(',')})`;
    },
  );
}

/** `\binom{n}{k}` as a factorial quotient, which both evaluators know. */
function binomialsAsFactorials(text: string): string {
  let result = text;
  for (let index = result.indexOf('\\binom'); index >= 0; index = result.indexOf('\\binom', index + 1)) {
    const top = readBraceGroup(result, index + 6);
    const bottom = top && readBraceGroup(result, top.end);
    if (!top || !bottom) break;
    const [n, k] = [top.content, bottom.content];
    result = `${result.slice(0, index)}\\frac{(${n})!}{(${k})!((${n})-(${k}))!}${result.slice(bottom.end)}`;
  }
  return result;
}

/** Spaces, thin spaces, `\,`, `{,}` and apostrophes between groups of exactly three digits: separators anywhere. */
const SPACED_THOUSANDS =
  /(?<![\d.,])(\d{1,3})((?:(?:\{,\}|\\,|\\ |\\;|\\!| |\u00a0|\u2009|\u202f|'|’)\d{3})+)(?![\d])/g;

/**
 * Commas or dots between three-digit groups, read as separators only when they make the whole
 * answer one number: in "(1,500)" or "2, 500" a comma separates elements. One dot group ("1.500")
 * is a decimal; two ("1.500.000") or one before a decimal comma ("1.500,25") are thousands.
 */
function wholeNumberWithoutSeparators(text: string): string {
  if (/^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(text)) return text.replace(/,/g, '');
  if (/^-?\d{1,3}(?:(?:\.\d{3}){2,}|(?:\.\d{3})+,\d+)$/.test(text)) return text.replace(/\./g, '').replace(',', '.');
  return text;
}

/** Canonical text of one answer. */
export function normaliseAnswer(raw: string): Normalised {
  let text = raw
    .trim()
    .replace(/\u2212/g, '-')
    .replace(/[×·]/g, '*')
    .replace(/÷/g, '/')
    .replace(/π/g, '\\pi');
  text = text
    .replace(/^\\\[|\\\]$/g, '')
    .replace(/^\\\(|\\\)$/g, '')
    .replace(/^\$+|\$+$/g, '');
  text = text.replace(/(\d)\s*\\(?:text|mbox|mathrm)\{\s*[a-zA-Z][a-zA-Z\s.]*\}(\^\{?\d\}?)?\s*$/, '$1'); // a unit after a number: "10\text{ m}"
  text = unwrapCommand(text, [
    'text',
    'textbf',
    'textit',
    'textrm',
    'mathrm',
    'mathbf',
    'mathit',
    'mbox',
    'operatorname',
    'boxed',
    'displaystyle',
  ]);
  text = text.replace(/\{\\rm\s+([^}]*)\}/g, '$1');
  text = matricesAsTuples(text);
  text = text
    .replace(/\\(?:left|right|displaystyle|big|Big|bigg|Bigg)(?![a-zA-Z])/g, '')
    .replace(/\\(?:dfrac|tfrac|cfrac)/g, '\\frac')
    .replace(/\^\s*\{?\\circ\}?|°|\\degree/g, '')
    .replace(/\\\$|\$/g, '');
  text = text.replace(SPACED_THOUSANDS, (_, head: string, groups: string) => head + groups.replace(/\D/g, ''));
  text = text
    .replace(/\\[!,;:]|\\ |~/g, ' ')
    .replace(/\\le(?![a-zA-Z])/g, '\\leq')
    .replace(/\\ge(?![a-zA-Z])/g, '\\geq');
  const percent = /(?:\\?%|\s+percent)\s*$/.test(text);
  text = text.replace(/\\?%|\s+percent\s*$/g, '');
  text = text.replace(/\\(frac|sqrt)\s*(\d)(\d)?/g, (_, name: string, a: string, b?: string) =>
    name === 'frac' && b ? `\\frac{${a}}{${b}}` : `\\${name}{${a}}${b ?? ''}`,
  );
  text = text.replace(/\\frac\{([^{}]*)\}\s*(\d)/g, '\\frac{$1}{$2}');
  text = binomialsAsFactorials(text);
  text = text.replace(/(?<![a-zA-Z\\])(\d+(?:\.\d+)?)\s*[eE]\s*([+-]?\d+)(?![\d.])/g, '$1\\times10^{$2}'); // 1.5e3, 2E-4
  text = text.replace(/^[a-zA-Z]\s*\\in\s*/, '').replace(/^(?:[a-zA-Z]|\\[a-z]+)(?:_\{?\w+\}?)?\s*=\s*(?=[^=]*$)/, '');
  text = text.replace(/\s+/g, ' ').trim();
  text = wholeNumberWithoutSeparators(stripUnits(text).replace(/[.\s]+$/, ''));
  // A whole mixed number, "3\frac{1}{2}" or "3 1/2", is 3 + 1/2 (a grader reads it so, not as 3 · 1/2).
  const mixed = /^(-?)(\d+)\s*(?:\\frac\{(\d+)\}\{(\d+)\}|\s(\d+)\/(\d+))$/.exec(text);
  if (mixed) {
    const [numerator, denominator] = [Number(mixed[3] ?? mixed[5]), Number(mixed[4] ?? mixed[6])];
    if (numerator < denominator) text = `${mixed[1]}(${mixed[2]}+\\frac{${numerator}}{${denominator}})`;
  }
  return { text, percent };
}
