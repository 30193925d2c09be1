/**
 * Canonical text of one final answer: LaTeX spacing and wrappers (`$…$`, `\(…\)`, `\left`),
 * `\dfrac`/`\tfrac`/`\cfrac`, `\frac13` shorthand, `\text{}` and font commands, units, degrees,
 * percentages, thousands separators of every common style (`1,000`, `1 000`, `1\,000`, `1{,}000`,
 * `1'000`, `1.000.000`, `11,\! 111`), commands written with a doubled backslash (`\\frac`), scientific notation (`1.5e3`), mixed numbers (`3\frac12`), matrices as
 * nested tuples, and `x =` prefixes.
 *
 * Not here: deciding whether two answers are equal (`verify.ts`), reading a decimal comma (`3,75`),
 * which depends on the other answer and so is `verify.ts`'s call too.
 */
import { parseExpression } from './expression.js';
import { readBraceGroup } from './extract.js';

/** A normalised answer plus whether it carried a percent sign. */
export interface Normalised {
  text: string;
  percent: boolean;
}

/** Text and font commands whose argument is the answer itself: `\text{Evelyn}` is Evelyn. */
const WRAPPERS =
  /\\(?:text|textnormal|textup|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|operatorname|boxed|displaystyle)\s*(?=\{)/g;

/** Replaces each WRAPPERS command `\name{content}` by `content`, brace-balanced. */
function unwrapCommands(text: string): string {
  if (!text.includes('\\')) return text;
  let result = text;
  WRAPPERS.lastIndex = 0;
  for (let match = WRAPPERS.exec(result); match; match = WRAPPERS.exec(result)) {
    const group = readBraceGroup(result, match.index + match[0].length);
    if (!group) break;
    result = result.slice(0, match.index) + group.content + result.slice(group.end);
    WRAPPERS.lastIndex = match.index;
  }
  WRAPPERS.lastIndex = 0;
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

const MATRIX = /\\begin\{([pbvBV]?matrix|array)\}(?:\{[lcr|]*\})?([\s\S]*?)\\end\{\1\}/g;

/** A matrix body's cells as numbers, or null when a cell is not a closed number or the rows differ in length. */
function matrixValues(body: string): number[][] | null {
  const rows = body
    .split(/\\\\/)
    .map((row) => row.trim())
    .filter((row) => row !== '')
    .map((row) =>
      row.split('&').map((cell) => {
        const parsed = parseExpression(cell.replace(/\\(?:dfrac|tfrac|cfrac)/g, '\\frac'));
        return parsed && parsed.variables.size === 0 ? parsed.evaluate(new Map()) : Number.NaN;
      }),
    );
  if (rows.length === 0 || rows.some((row) => row.length !== rows[0]!.length || row.some(Number.isNaN))) return null;
  return rows;
}

function multiply(a: number[][], b: number[][]): number[][] | null {
  if (a[0]!.length !== b.length) return null;
  return a.map((row) => b[0]!.map((_, column) => row.reduce((sum, value, k) => sum + value * b[k]![column]!, 0)));
}

/**
 * A sum or product of numeric matrices written out ("A + B", "A B", "A \cdot B") as the one matrix
 * it equals, as Math-Verify's sympy evaluates it; other text unchanged.
 */
function matrixArithmetic(text: string): string {
  const matrices: string[] = [];
  const shape = text.replace(MATRIX, (matrix) => ` M${matrices.push(matrix) - 1} `).trim();
  if (matrices.length < 2) return text;
  const sum = /^M\d+(?:\s*[+-]\s*M\d+)+$/.test(shape);
  if (!sum && !/^M\d+(?:\s*(?:\\cdot|\\times)?\s*M\d+)+$/.test(shape)) return text;
  const values = matrices.map((matrix) =>
    matrixValues(matrix.replace(MATRIX, (_, _name: string, body: string) => body)),
  );
  if (values.some((value) => value === null)) return text;
  const signs = [...shape.matchAll(/([+-])\s*M/g)].map((match) => (match[1] === '-' ? -1 : 1));
  let result: number[][] | null = values[0]!;
  for (let index = 1; index < values.length && result; index++) {
    const next = values[index]!;
    if (!sum) result = multiply(result, next);
    else if (next.length !== result.length || next[0]!.length !== result[0]!.length) result = null;
    else result = result.map((row, r) => row.map((value, c) => value + signs[index - 1]! * next[r]![c]!));
  }
  if (!result) return text;
  return `\\begin{pmatrix}${result.map((row) => row.join('&')).join('\\\\')}\\end{pmatrix}`;
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

/** Spaces, thin spaces, `\,`, `{,}` and apostrophes between groups of exactly three digits: separators anywhere. */
const SPACED_THOUSANDS =
  /(?<![\d.,])([1-9]\d{0,2})((?:(?:\{,\}|\\,|\\ |\\;|\\!| |\u00a0|\u2009|\u202f|'|’)\d{3})+)(?![\d])/g;

/**
 * Commas or dots between three-digit groups, read as separators only when they make the whole
 * answer one number: in "(1,500)" or "2, 500" a comma separates elements. One dot group ("1.500")
 * is a decimal; two ("1.500.000") or one before a decimal comma ("1.500,25") are thousands.
 */
function wholeNumberWithoutSeparators(text: string): string {
  if (/^-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$/.test(text)) return text.replace(/,/g, ''); // "0,111" is a decimal comma
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
  if (!text.includes('matrix')) text = text.replace(/\\\\(?=[a-zA-Z])/g, '\\'); // "\\frac" written with a doubled backslash
  text = text
    .replace(/^\\\[|\\\]$/g, '')
    .replace(/^\\\(|\\\)$/g, '')
    .replace(/^\$+|\$+$/g, '');
  text = text.replace(/(\d)\s*\\(?:text|textnormal|mbox|mathrm)\{\s*[a-zA-Z][a-zA-Z\s.]*\}(\^\{?\d\}?)?\s*$/, '$1'); // a unit after a number: "10\text{ m}"
  text = unwrapCommands(text);
  text = text.replace(/\{\\rm\s+([^}]*)\}/g, '$1');
  text = text.replace(/\s*,?\s*(?<![a-zA-Z\\])(?:and|or)(?![a-zA-Z])\s*/g, ','); // "12 and 13" is the list 12, 13
  text = matricesAsTuples(matrixArithmetic(text));
  text = text
    .replace(/\\(?:left|right|displaystyle|big|Big|bigg|Bigg)(?![a-zA-Z])/g, '')
    .replace(/\\(?:dfrac|tfrac|cfrac)/g, '\\frac')
    .replace(/\^\s*\{?\\circ\}?|°|\\degree/g, '')
    .replace(/\\\$|\$/g, '');
  text = text.replace(/\\!\s*/g, '').replace(/\s*\{\s*,\s*\}\s*/g, ','); // "11,\! 111" and "14 {, }916" are 11,111 and 14,916
  text = text.replace(SPACED_THOUSANDS, (_, head: string, groups: string) => head + groups.replace(/\D/g, ''));
  text = text
    .replace(/\\[!,;:]|\\ |~/g, ' ')
    .replace(/\\le(?![a-zA-Z])|<=|≤/g, '\\leq')
    .replace(/\\ge(?![a-zA-Z])|>=|≥/g, '\\geq')
    .replace(/\\ne(?![a-zA-Z])|!=|≠/g, '\\neq')
    .replace(/\\lt(?![a-zA-Z])/g, '<')
    .replace(/\\gt(?![a-zA-Z])/g, '>');
  const percent = /(?:\\?%|\s+percent)\s*$/.test(text);
  text = text.replace(/\\?%|\s+percent\s*$/g, '');
  text = text.replace(/\\(frac|sqrt)\s*(\d)(\d)?/g, (_, name: string, a: string, b?: string) =>
    name === 'frac' && b ? `\\frac{${a}}{${b}}` : `\\${name}{${a}}${b ?? ''}`,
  );
  text = text.replace(/\\frac\{([^{}]*)\}\s*(\d)/g, '\\frac{$1}{$2}');
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
