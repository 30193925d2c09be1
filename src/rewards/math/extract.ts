/**
 * Final-answer extraction from free-form solutions: the last `\boxed{}` (or `\fbox{}`), a GSM8K
 * `#### N` line, "the answer is X", "Answer: X", or, as a last resort, the last number.
 *
 * Only finds the answer string; deciding whether two answers are equal is `verify.ts`.
 */

/** Where the extracted answer came from, most explicit first. */
export type AnswerSource = 'boxed' | 'hashes' | 'answer-is' | 'answer-label' | 'last-number';

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

const NUMBER = /-?\d[\d,]*(?:\.\d+)?(?:\/\d+)?|-?\.\d+/g;

/** The last number in the text (thousands separators kept for the verifier to remove), or null. */
export function lastNumber(text: string): string | null {
  const matches = text.replace(/<<[^>]*>>/g, ' ').match(NUMBER); // GSM8K calculator annotations are not answers
  return matches ? matches[matches.length - 1]!.replace(/,$/, '') : null;
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

/** Extracts the final answer of a solution, most explicit marker first; null when nothing looks like one. */
export function extractFinalAnswer(text: string): ExtractedAnswer | null {
  const boxed = extractBoxed(text);
  if (boxed !== null && boxed !== '') return { answer: boxed, source: 'boxed' };
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
  const number = lastNumber(text);
  return number === null ? null : { answer: number, source: 'last-number' };
}
