/**
 * Final-answer extraction from free-form solutions, in the order a careful grader (and Math-Verify)
 * looks: the last `\boxed{}` (or `\fbox{}`); then a marker: a GSM8K `#### N` line, "the (final)
 * answer is X", "Answer: X"; then whichever comes last of the last LaTeX span (`$…$`, `$$…$$`,
 * `\(…\)`, `\[…\]`, its right-hand side after `=`) and the last number. A number glued to letters
 * (`GPT4o`, `B2`, `x2`) is part of a name, not an answer.
 *
 * Only finds the answer string; deciding whether two answers are equal is `verify.ts`.
 */

/** Where the extracted answer came from, most explicit first. */
export type AnswerSource = 'boxed' | 'hashes' | 'answer-is' | 'answer-label' | 'latex' | 'last-number';

/** What extraction may look for: `marker` is `####`, "the answer is" and "Answer:"; `latex` a math span. */
export type ExtractionTarget = 'boxed' | 'marker' | 'latex' | 'number';

/** Which answers extraction accepts, like Math-Verify's extraction configs. */
export interface ExtractOptions {
  /** The kinds of answer to look for (default all four, most explicit first). */
  targets?: readonly ExtractionTarget[];
  /** Only a `\boxed{}` answer counts (default false): a completion without one has no answer. */
  requireBoxed?: boolean;
}

/** An extracted final answer. */
export interface ExtractedAnswer {
  answer: string;
  source: AnswerSource;
}

/** Returns the brace-balanced group starting at `open` (which must be `{`), without the braces, and the index after it. */
export function readBraceGroup(text: string, open: number): { content: string; end: number } | null {
  if (text[open] !== '{') return null;
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    const char = text[index];
    if (char === '\\') {
      index++; // skip escaped characters such as \{ and \}
      continue;
    }
    if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return { content: text.slice(open + 1, index), end: index + 1 };
  }
  return null;
}

/** The content of the last `\boxed{...}` / `\fbox{...}` (or `\boxed 5`), or null. */
export function extractBoxed(text: string): string | null {
  const pattern = /\\(?:boxed|fbox)\s*/g;
  let last: string | null = null;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const start = match.index + match[0].length;
    const group = readBraceGroup(text, start);
    if (group) last = group.content;
    else if (match[0].startsWith('\\boxed') && /\s/.test(match[0].slice(6, 7))) {
      const bare = /^[^\s$]+/.exec(text.slice(start)); // "\boxed 5" form
      if (bare) last = bare[0];
    }
  }
  return last?.trim() ?? null;
}

/**
 * A number, not glued after letters (`GPT4o`, `B2`): digits with thousands separators (`1,000`,
 * `1 000`, `1\,000`, `1{,}000`, `1'000`), a decimal point or comma, an optional `/denominator`.
 */
const NUMBER =
  /(?<![A-Za-z_\d])-?(?:\d{1,3}(?:(?:,|\{,\}|\\,| |\u00a0|\u2009|\u202f|')\d{3})+(?!\d)|\d+)(?:[.,]\d+)?(?:\/\d+)?|(?<![A-Za-z_\d])-?\.\d+/g;

/** The last number in the text and where it ends (thousands separators kept for the verifier to remove), or null. */
function lastNumberMatch(text: string): { answer: string; end: number } | null {
  const cleaned = text.replace(/<<[^>]*>>/g, (annotation) => ' '.repeat(annotation.length)); // GSM8K calculator annotations are not answers
  let last: RegExpExecArray | null = null;
  for (let match = NUMBER.exec(cleaned); match; match = NUMBER.exec(cleaned)) last = match;
  NUMBER.lastIndex = 0;
  return last ? { answer: last[0].replace(/,$/, ''), end: last.index + last[0].length } : null;
}

/** The last number in the text (thousands separators kept for the verifier to remove), or null. */
export function lastNumber(text: string): string | null {
  return lastNumberMatch(text)?.answer ?? null;
}

/**
 * Math spans: `$$…$$`, `\[…\]`, `\(…\)`, and `$…$` by Pandoc's rule (no space inside either `$`,
 * the closing `$` not followed by a digit) so that "costs $5 and $6" holds no span.
 */
const LATEX_SPAN =
  /\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\]|\\\(([\s\S]+?)\\\)|(?<![\\$])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\d$])/g;

/** The last math span's answer (its right-hand side after a top-level `=`) and where it ends, or null. */
function lastLatexSpan(text: string): { answer: string; end: number } | null {
  let last: RegExpExecArray | null = null;
  for (let match = LATEX_SPAN.exec(text); match; match = LATEX_SPAN.exec(text)) {
    if (/[\dA-Za-z]/.test(match.slice(1).join(''))) last = match;
  }
  LATEX_SPAN.lastIndex = 0;
  if (!last) return null;
  const content = (last[1] ?? last[2] ?? last[3] ?? last[4]!).trim();
  const sides = content.split(/(?<![<>\\!])=(?!=)/); // "2 + 3 = 5": the result is the right-hand side
  const answer = sides[sides.length - 1]!.trim()
    .replace(/[.,;]$/, '')
    .trim();
  return answer === '' ? null : { answer, end: last.index + last[0].length };
}

/** Trims sentence punctuation and `$` wrappers around a phrase-level answer. */
function trimPhrase(answer: string): string {
  return answer
    .trim()
    .replace(/^[:*\s]+/, '')
    .replace(/[.*\s]+$/, '')
    .replace(/^\$+|\$+$/g, '')
    .trim();
}

const ALL_TARGETS: readonly ExtractionTarget[] = ['boxed', 'marker', 'latex', 'number'];

/** The answer after a marker (`####`, "the answer is", "Answer:"), or null. */
function markedAnswer(text: string): ExtractedAnswer | null {
  const hashes = [...text.matchAll(/####\s*([^\n]+)/g)];
  if (hashes.length) return { answer: trimPhrase(hashes[hashes.length - 1]![1]!), source: 'hashes' };
  const answerIs = [...text.matchAll(/the (?:final )?answer is\s*:?\s*([^\n]+)/gi)];
  if (answerIs.length) {
    const phrase = answerIs[answerIs.length - 1]![1]!;
    const sentence = phrase.split(/(?<![\d\\])\.(?!\d)|\.\s/)[0]!; // stop at the sentence's full stop, not a decimal point
    return { answer: trimPhrase(sentence), source: 'answer-is' };
  }
  const label = [...text.matchAll(/(?:^|\n)\s*\**(?:final answer|answer)\**\s*:\s*([^\n]+)/gi)];
  if (label.length) return { answer: trimPhrase(label[label.length - 1]![1]!), source: 'answer-label' };
  return null;
}

/** Extracts the final answer of a solution, most explicit target first; null when nothing looks like one. */
export function extractFinalAnswer(
  text: string,
  { targets = ALL_TARGETS, requireBoxed = false }: ExtractOptions = {},
): ExtractedAnswer | null {
  if (targets.includes('boxed') || requireBoxed) {
    const boxed = extractBoxed(text);
    if (boxed !== null && boxed !== '') return { answer: boxed, source: 'boxed' };
  }
  if (requireBoxed) return null;
  if (targets.includes('marker')) {
    const marked = markedAnswer(text);
    if (marked) return marked;
  }
  const span = targets.includes('latex') ? lastLatexSpan(text) : null;
  const number = targets.includes('number') ? lastNumberMatch(text) : null;
  if (span && (!number || span.end >= number.end)) return { answer: span.answer, source: 'latex' }; // the later one is the conclusion
  return number ? { answer: number.answer, source: 'last-number' } : null;
}
