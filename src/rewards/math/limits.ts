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
