/**
 * Final-answer extraction from free-form solutions, in the order Math-Verify looks: the last
 * `\boxed{}` (or `\fbox{}`; boxes separated only by "and", commas or spacing count together:
 * `\boxed{-2} and \boxed{1}` is "-2,1"), unless a later "the final answer is X. I hope" stands
 * after it; then a marker: a GSM8K `#### N` line, "the (final) answer is X", "Final answer: … is X",
 * "Answer: X"; then whichever comes last of the last LaTeX span (`$…$`, `$$…$$`, `\(…\)`, `\[…\]`,
 * a bare `\frac{1}{2}`) and the last number. A number glued to letters (`GPT4o`, `B2`, `x2`) is part
 * of a name, not an answer.
 *
 * Every scan here is linear in the text (braces are paired in one pass), so a hostile completion
 * (`\boxed{` repeated 20,000 times, unclosed) costs one pass, not one pass per box.
 *
 * Only finds the answer string; deciding whether two answers are equal is `verify.ts`.
 */

/** Where the extracted answer came from, most explicit first. */
export type AnswerSource = 'boxed' | 'hashes' | 'answer-is' | 'answer-label' | 'latex' | 'last-number';

/** What extraction may look for: `marker` is `####`, "the (final) answer is", "Final answer: … is" and "Answer:"; `latex` a math span. */
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
  /** The answer as a grader reads it: a span's right-hand side after its last `=` ("$x = 5$" → "5"). */
  answer: string;
  /** The whole extracted math, relations kept ("x = 5", "2x+4y-3=0"): what `verify.ts` compares. */
  statement: string;
  source: AnswerSource;
}

/** Longest math span read (characters): a bound on each span's search, so unclosed `$$` cost a bounded scan each. */
const MAX_SPAN = 4000;

/**
 * For each `{` from `from` on, the index of its matching `}` (−1 when unclosed), from one pass with
 * a stack; escaped braces (`\{`, `\}`) are skipped. Linear however many braces are left open.
 */
function pairBraces(text: string, from: number): Int32Array {
  const pairs = new Int32Array(text.length - from).fill(-1);
  const open = new Int32Array(text.length - from);
  let depth = 0;
  for (let index = from; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (char === 92 /* \ */) index++;
    else if (char === 123 /* { */) open[depth++] = index;
    else if (char === 125 /* } */ && depth > 0) pairs[open[--depth]! - from] = index;
  }
  return pairs;
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

interface Box {
  content: string;
  start: number;
  end: number;
}

/** Every closed `\boxed{…}` / `\fbox{…}` (and `\boxed 5`) in order, found in one pass. */
function findBoxes(text: string): Box[] {
  const pattern = /\\(?:boxed|fbox)\s*/g;
  let pairs: Int32Array | undefined;
  let from = 0;
  const boxes: Box[] = [];
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const start = match.index + match[0].length;
    if (text[start] === '{') {
      if (!pairs) [pairs, from] = [pairBraces(text, start), start]; // braces before the first box pair nothing after it
      const close = pairs[start - from]!;
      if (close >= 0) boxes.push({ content: text.slice(start + 1, close), start: match.index, end: close + 1 });
    } else if (match[0].startsWith('\\boxed') && /\s/.test(match[0].slice(6, 7))) {
      const bare = /^[^\s$]+/.exec(text.slice(start, start + MAX_SPAN)); // "\boxed 5" form
      if (bare) boxes.push({ content: bare[0], start: match.index, end: start + bare[0].length });
    }
  }
  return boxes;
}

/** Most boxes read as one answer (a list of solutions); more would be refused by `limits.ts` anyway. */
const MAX_BOXES = 64;

/** Text between two boxes that only separates them ("and", "or", commas, spacing, `$`): the boxes are one answer. */
const BOX_SEPARATOR = /^(?:\s|\$|,|;|\\[,;:! ]|\\q?quad|\\text\{\s*(?:and|or)\s*\}|\b(?:and|or)\b)*$/;

/** The last box and the boxes just before it that only a separator divides from it: `\boxed{-2} and \boxed{1}` is "-2,1". */
function lastBoxGroup(text: string): Box | null {
  const boxes = findBoxes(text);
  let last = boxes.pop();
  while (last && last.content.trim() === '') last = boxes.pop();
  if (!last) return null;
  const contents = [last.content.trim()]; // last first
  let start = last.start;
  for (let previous = boxes.pop(); previous && contents.length < MAX_BOXES; previous = boxes.pop()) {
    const content = previous.content.trim();
    if (content === '' || start - previous.end > 100 || !BOX_SEPARATOR.test(text.slice(previous.end, start))) break;
    if (content !== contents[contents.length - 1]) contents.push(content);
    start = previous.start;
  }
  return { content: contents.reverse().join(','), start, end: last.end };
}

/** The content of the last `\boxed{...}` / `\fbox{...}` (or `\boxed 5`), with boxes only a separator divides from it, or null. */
export function extractBoxed(text: string): string | null {
  return lastBoxGroup(text)?.content ?? null;
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
 * Math spans, as Math-Verify finds them: `$$…$$` and `\[…\]` over lines; `\(…\)` and `$…$` on one
 * line (a `$…$` may hold `\$`; its `$` must not touch a digit outside, so "costs $5 and $6" holds
 * no span); and a bare fraction of two numbers, `\frac{10}{9}`. No span holds its own opener (`\[`
 * inside `\[…\]`), so each search stops at the next one: one pass over the text, not one per opener.
 */
const LATEX_SPAN = new RegExp(
  [
    String.raw`(?<!\\)\$\$((?:[^$]|\$(?!\$)){1,${MAX_SPAN}}?)(?<!\\)\$\$`,
    String.raw`(?<!\\)\\\[((?:[^\\]|\\(?![\]\[])){1,${MAX_SPAN}}?)\\\]`,
    String.raw`(?<!\\)\\\(((?:[^\\\n]|\\(?![()])){1,${MAX_SPAN}}?)\\\)`,
    String.raw`(?<![\\$\d])\$((?:\\\$|[^\n$]){1,${MAX_SPAN}}?)(?<!\\)\$(?![\d$])`,
    String.raw`(-?\\frac\{-?\d+(?:[.,]\d+)?\}\{-?\d+(?:[.,]\d+)?\})`,
  ].join('|'),
  'g',
);

/** A span's content without the sentence punctuation after it. */
function trimSpan(content: string): string {
  return content
    .trim()
    .replace(/[.,;]$/, '')
    .trim();
}

/** The last math span's statement, its answer (the right-hand side after a top-level `=`) and where it ends, or null. */
function lastLatexSpan(text: string): { answer: string; statement: string; end: number } | null {
  let last: RegExpExecArray | null = null;
  for (let match = LATEX_SPAN.exec(text); match; match = LATEX_SPAN.exec(text)) {
    if (/[\dA-Za-z]/.test(match.slice(1).join(''))) last = match;
  }
  LATEX_SPAN.lastIndex = 0;
  if (!last) return null;
  const statement = trimSpan(last.slice(1).find((group) => group !== undefined)!);
  const sides = statement.split(/(?<![<>\\!])=(?!=)/); // "2 + 3 = 5": the result is the right-hand side
  const answer = trimSpan(sides[sides.length - 1]!);
  return answer === '' ? null : { answer, statement, end: last.index + last[0].length };
}

/** Trims sentence punctuation and `$` wrappers around a phrase-level answer. */
function trimPhrase(answer: string): string {
  return answer
    .trim()
    .replace(/^[:*\s]+/, '')
    .replace(/[.*\s]+$/, '')
    .replace(/^\$+|\$+$/g, '')
    .replace(/^(?:\\?["'])+|(?:\\?["'])+$/g, '') // a quoted answer, 'is "$12$ and $13$"' (or \"…\")
    .replace(/^\$+|\$+$/g, '')
    .trim();
}

const ALL_TARGETS: readonly ExtractionTarget[] = ['boxed', 'marker', 'latex', 'number'];

/** A marker's answer: the phrase up to its sentence's full stop (not a decimal point). */
function phraseAnswer(phrase: string, source: AnswerSource): ExtractedAnswer {
  const sentence = phrase.split(/(?<![\d\\])\.(?!\d)|\.\s/)[0]!;
  const answer = trimPhrase(sentence);
  return { answer, statement: answer, source };
}

/** The last "the final answer is X. I hope" (Minerva's format) and where it ends: it outranks an earlier box. */
function finalAnswerHope(text: string): { answer: ExtractedAnswer; end: number } | null {
  let last: RegExpExecArray | null = null;
  for (const match of text.matchAll(/final answer is\s*:?\s*([^\n]{1,400}?)\.?\s?I hope/gi)) last = match;
  return last ? { answer: phraseAnswer(last[1]!, 'answer-is'), end: last.index + last[0].length } : null;
}

/** The answer after a marker (`####`, "the answer is", "Final answer: … is X", "Answer:"), or null. */
function markedAnswer(text: string): ExtractedAnswer | null {
  const hashes = [...text.matchAll(/####\s*([^\n]+)/g)];
  if (hashes.length) {
    const answer = trimPhrase(hashes[hashes.length - 1]![1]!);
    return { answer, statement: answer, source: 'hashes' };
  }
  const answerIs = [...text.matchAll(/the (?:final )?answer is\s*:?\s*([^\n]+)/gi)];
  if (answerIs.length) return phraseAnswer(answerIs[answerIs.length - 1]![1]!, 'answer-is');
  const finalIs = [...text.matchAll(/final answer\b[^\n]{0,100}?\s+is\s*:?\s*([-$\\(\d][^\n]*)/gi)]; // "Final Answer: The largest $n$ is 34."
  if (finalIs.length) return phraseAnswer(finalIs[finalIs.length - 1]![1]!, 'answer-is');
  const label = [...text.matchAll(/(?:^|\n)\s*\**(?:final answer|answer)\**\s*:\s*([^\n]+)/gi)];
  if (label.length) {
    const answer = trimPhrase(label[label.length - 1]![1]!);
    return { answer, statement: answer, source: 'answer-label' };
  }
  // "… Final Answer: Jane started Sphere 3 hours ago.": the first number or span within 50 characters of the label.
  const inline = [...text.matchAll(/answer\s*:[^\n$]{0,50}?(?:^|\s|=)(\$[^$\n]{1,200}\$|-?\d+(?:[.,]\d+)?)/gi)];
  if (inline.length) {
    const answer = trimPhrase(inline[inline.length - 1]![1]!);
    return { answer, statement: answer, source: 'answer-label' };
  }
  return null;
}

/** Extracts the final answer of a solution, most explicit target first; null when nothing looks like one. */
export function extractFinalAnswer(
  text: string,
  { targets = ALL_TARGETS, requireBoxed = false }: ExtractOptions = {},
): ExtractedAnswer | null {
  if (targets.includes('boxed') || requireBoxed) {
    const box = lastBoxGroup(text);
    if (box !== null && box.content !== '') {
      const hope = !requireBoxed && targets.includes('marker') ? finalAnswerHope(text) : null;
      if (hope && hope.end > box.end && hope.answer.answer !== '') return hope.answer; // the later conclusion
      return { answer: box.content, statement: box.content, source: 'boxed' };
    }
  }
  if (requireBoxed) return null;
  if (targets.includes('marker')) {
    const marked = markedAnswer(text);
    if (marked) return marked;
  }
  const span = targets.includes('latex') ? lastLatexSpan(text) : null;
  const number = targets.includes('number') ? lastNumberMatch(text) : null;
  if (span && (!number || span.end >= number.end))
    return { answer: span.answer, statement: span.statement, source: 'latex' }; // the later one is the conclusion
  return number ? { answer: number.answer, statement: number.answer, source: 'last-number' } : null;
}
