/**
 * The size bounds one final answer must meet before it is normalised or parsed (issue 36): its
 * length, its longest run of digits, its bracket nesting and its number of terms. An answer past
 * any of them is refused (it matches nothing), decided by one linear scan, so no hostile answer
 * (a 10⁶-digit number, a set of 2,000 elements, a label nested 10⁵ deep) reaches the normaliser's
 * regular expressions, the recursive parsers or the pairwise set comparison.
 *
 * The bounds sit far above real answers: MATH-500's longest gold answer is 53 characters with 7
 * digits in a row, and a Math-Verify matrix answer about 120. Not here: the bounds inside the
 * parsers themselves (`expression.ts`, `symbolic.ts`), which stay as a second line.
 */

/** The declared bounds on one answer. */
export const ANSWER_LIMITS = {
  /** Characters in one extracted answer. */
  characters: 1000,
  /** Digits in one number. */
  digits: 100,
  /** Nesting of `(`, `[`, `{`: the parsers' own depth bound (`expression.ts`, `symbolic.ts`). */
  depth: 100,
  /** Terms: `+`, `-`, `*`, `/`, `,`, `;`, `&` and backslash separators (a set of n elements has n − 1). */
  terms: 500,
} as const;

/** Why an answer is refused (the bound it passes), or null when it is within every bound. */
export function answerRefusal(text: string): string | null {
  if (text.length > ANSWER_LIMITS.characters) return `longer than ${ANSWER_LIMITS.characters} characters`;
  let digits = 0;
  let depth = 0;
  let terms = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    digits = char >= 48 && char <= 57 ? digits + 1 : 0;
    if (digits > ANSWER_LIMITS.digits) return `a number of more than ${ANSWER_LIMITS.digits} digits`;
    if (char === 40 || char === 91 || char === 123)
      depth++; // ( [ {
    else if (char === 41 || char === 93 || char === 125) depth--; // ) ] }
    if (depth > ANSWER_LIMITS.depth) return `nested deeper than ${ANSWER_LIMITS.depth}`;
    if ('+-*/,;&\\'.includes(text[index]!) && ++terms > ANSWER_LIMITS.terms)
      return `more than ${ANSWER_LIMITS.terms} terms`;
  }
  return null;
}

/**
 * The work one comparison (`answersMatch`) may do once its answers are within the bounds above:
 * structural comparisons (one per pair of sub-answers compared, each normalising and parsing both)
 * and calls of the Compute Engine (up to ~60 ms each, e.g. an integral). Unordered sets pair their
 * leftover elements pair by pair, nested sets multiply that per level, so within the bounds above
 * a 16-element set of `\log` values against its reverse took 136 engine calls (0.7 s) and three
 * nested levels 566 comparisons; past the budget the answers do not match. Real answers stay far
 * below it: every Math-Verify case, MATH-500 solution (and each gold against the next gold) and
 * GSM8K solution needs at most 7 comparisons and 1 engine call.
 */
export const VERIFY_BUDGET = {
  comparisons: 256,
  engineCalls: 16,
} as const;

/** What one comparison did: counted as it runs, read by tests to show the work is bounded (never timed). */
export interface VerifyWork {
  comparisons: number;
  engineCalls: number;
  /** Longest text handed to a parser (ours or the engine), in characters. */
  longestParsed: number;
}

/** The work of the comparison running now, or of the last one (see lastVerifyWork). */
export const currentWork: VerifyWork = { comparisons: 0, engineCalls: 0, longestParsed: 0 };

/** The work the last `answersMatch` call did. */
export const lastVerifyWork = (): VerifyWork => ({ ...currentWork });
