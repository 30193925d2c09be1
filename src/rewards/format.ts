/**
 * Format rewards: think/answer tags, a regex, required sections, JSON validity and JSON-Schema
 * conformance (ajv), exact/normalised match against a column, and multiple-choice letters.
 *
 * Not here: numeric answer verification (`math.ts`) and length shaping (`length.ts`).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { extractBoxed } from './math/extract.js';
import { stringColumn, type RewardFn } from './types.js';

/**
 * 1 when the completion is `<think>…</think>` followed by anything, with no second `<think>`
 * (open-r1 regex `^<think>(?!.*<think>)(.*?)</think>.*$`, DOTALL), else 0. ALGORITHMS.md §5.2.
 * @example thinkFormat()(makeRewardInput({ completion: '<think>a</think>b' })) // 1
 */
export function thinkFormat(): RewardFn {
  const pattern = /^<think>(?![\s\S]*<think>)([\s\S]*?)<\/think>[\s\S]*$/;
  return ({ completion }) => (pattern.test(completion) ? 1 : 0);
}

/** Options of {@link tagFormat}. */
export interface TagFormatOptions {
  /** Tags that must appear, each exactly once, in this order (default `['think', 'answer']`). */
  tags?: string[];
  /** Allow text before the first tag and after the last (default false). */
  allowOutside?: boolean;
}

/**
 * 1 when every tag appears exactly once, opened and closed, in order, with only whitespace between
 * them (e.g. `<think>…</think>\n<answer>…</answer>`), else 0.
 * @example tagFormat()(makeRewardInput({ completion: '<think>x</think><answer>4</answer>' })) // 1
 */
export function tagFormat({ tags = ['think', 'answer'], allowOutside = false }: TagFormatOptions = {}): RewardFn {
  if (tags.length === 0 || tags.some((tag) => !/^[\w-]+$/.test(tag)))
    throw new Error(`tagFormat: tags must be non-empty word names, got ${JSON.stringify(tags)}`);
  const body = tags.map((tag) => `<${tag}>(?:(?!<\\/?${tag}>)[\\s\\S])*<\\/${tag}>`).join('\\s*');
  const edge = allowOutside ? '[\\s\\S]*' : '\\s*';
  const pattern = new RegExp(`^${edge}${body}${edge}$`);
  return ({ completion }) => {
    const counts = tags.every(
      (tag) => completion.split(`<${tag}>`).length === 2 && completion.split(`</${tag}>`).length === 2,
    );
    return counts && pattern.test(completion) ? 1 : 0;
  };
}

/** The text inside the last `<tag>…</tag>`, or null. */
export function tagContent(text: string, tag: string): string | null {
  const matches = [...text.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)<\\/${tag}>`, 'g'))];
  return matches.length ? matches[matches.length - 1]![1]!.trim() : null;
}

/**
 * 1 when the regex matches the completion, else 0.
 * @example regexMatch({ pattern: '^\\d+$' })(makeRewardInput({ completion: '42' })) // 1
 */
export function regexMatch({ pattern, flags = '' }: { pattern: string; flags?: string }): RewardFn {
  const regex = new RegExp(pattern, flags.replace('g', '')); // a global regex keeps state between calls
  return ({ completion }) => (regex.test(completion) ? 1 : 0);
}

/**
 * The fraction of required sections (case-insensitive substrings such as headings) present.
 * @example requiredSections({ sections: ['## Plan', '## Answer'] }) // "## Plan only" → 0.5
 */
export function requiredSections({ sections }: { sections: string[] }): RewardFn {
  if (sections.length === 0) throw new Error('requiredSections: give at least one section');
  const lowered = sections.map((section) => section.toLowerCase());
  return ({ completion }) => {
    const text = completion.toLowerCase();
    return lowered.filter((section) => text.includes(section)).length / lowered.length;
  };
}

/** The JSON text of a completion: a fenced ```json block when there is one, else the whole text trimmed. */
export function jsonText(completion: string): string {
  const fenced = /```(?:json)?\s*\n([\s\S]*?)```/.exec(completion);
  return (fenced ? fenced[1]! : completion).trim();
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * 1 when the completion (or its fenced ```json block) parses as JSON, else 0.
 * @example jsonValid()(makeRewardInput({ completion: '{"a": 1}' })) // 1
 */
export function jsonValid(): RewardFn {
  return ({ completion }) => (parseJson(jsonText(completion)).ok ? 1 : 0);
}

/** Options of {@link jsonSchema}. */
export interface JsonSchemaOptions {
  /** A fixed JSON Schema; or leave it out and give `schemaColumn`. */
  schema?: Record<string, unknown>;
  /** Dataset column holding the schema (object or JSON string) per row (default `schema`). */
  schemaColumn?: string;
  /** Score for JSON that parses but does not conform (default 0; e.g. 0.5 for partial credit). */
  validJsonScore?: number;
}

/**
 * 1 when the completion's JSON conforms to the JSON Schema (validated by ajv, draft-07 /
 * 2019-era keywords), `validJsonScore` when it parses but does not conform, 0 when it does not parse.
 * @example jsonSchema({ schema: { type: 'object', required: ['name'] } }) // '{"name":"x"}' → 1
 */
export function jsonSchema({ schema, schemaColumn = 'schema', validJsonScore = 0 }: JsonSchemaOptions = {}): RewardFn {
  const ajv = new Ajv({ allErrors: false, strict: false });
  const compiled = new Map<string, ValidateFunction>();
  const validatorFor = (value: unknown): ValidateFunction => {
    const key = typeof value === 'string' ? value : JSON.stringify(value);
    let validate = compiled.get(key);
    if (!validate) {
      const parsed = typeof value === 'string' ? parseJson(value) : { ok: true as const, value };
      if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null)
        throw new Error(`jsonSchema: column "${schemaColumn}" is not a JSON Schema object`);
      validate = ajv.compile(parsed.value as object);
      compiled.set(key, validate);
    }
    return validate;
  };
  return ({ completion, row }) => {
    const validate = validatorFor(
      schema ??
        row[schemaColumn] ??
        (() => {
          throw new Error(`jsonSchema: no schema option and no "${schemaColumn}" column`);
        })(),
    );
    const parsed = parseJson(jsonText(completion));
    if (!parsed.ok) return 0;
    return validate(parsed.value) ? 1 : validJsonScore;
  };
}

/** SQuAD-style normalisation: lower case, no punctuation, no articles, single spaces. */
export function normaliseText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\b(?:a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Options of {@link exactMatch}. */
export interface ExactMatchOptions {
  answerColumn?: string;
  /** Compare after {@link normaliseText} (default true); false compares trimmed text exactly. */
  normalise?: boolean;
  /** Compare the content of this tag (e.g. `answer`) instead of the whole completion, when present. */
  tag?: string;
}

/**
 * 1 when the completion (or its `<tag>` content) equals the row's answer, else 0.
 * @example exactMatch({ tag: 'answer' }) // '<answer>The Paris.</answer>' vs 'paris' → 1
 */
export function exactMatch({ answerColumn = 'answer', normalise = true, tag }: ExactMatchOptions = {}): RewardFn {
  const clean = normalise ? normaliseText : (text: string) => text.trim();
  return ({ completion, row }) => {
    const text = (tag ? tagContent(completion, tag) : null) ?? completion;
    return clean(text) === clean(stringColumn(row, answerColumn, 'exactMatch')) ? 1 : 0;
  };
}

/** The option letter of free text, or null (see {@link extractChoice}). */
function choiceIn(text: string, letters: string): string | null {
  const upper = `[${letters.toUpperCase()}]`;
  const lower = `[${letters.toLowerCase()}]`;
  const patterns = [
    // "Answer: B", "the answer is (C)"; a lower-case letter only when no word follows ("answer is a cat" is no choice).
    new RegExp(
      `(?:answer|Answer|ANSWER)(?: is)?\\s*[:\\-]?\\s*\\(?(?:(${upper})|(${lower})(?!\\)?\\s+[a-z]))\\)?(?![a-zA-Z])`,
      'g',
    ),
    new RegExp(`^\\s*\\(?(${upper})\\)?[.)]?\\s*$`, 'gm'),
    new RegExp(`\\((${upper})\\)`, 'g'),
  ];
  const boxed = extractBoxed(text);
  if (boxed) {
    const inner = /^\s*(?:\\text\{)?\(?([A-Za-z])\)?\}?\s*$/.exec(boxed);
    if (inner && letters.includes(inner[1]!.toUpperCase())) return inner[1]!.toUpperCase();
  }
  for (const pattern of patterns) {
    const matches = [...text.matchAll(pattern)];
    const last = matches[matches.length - 1];
    const letter = last ? (last[1] ?? last[2])!.toUpperCase() : null;
    if (letter && letters.includes(letter)) return letter;
  }
  return null;
}

/**
 * The chosen option letter in a completion, or null. Inside the last `<answer>…</answer>` when there
 * is one (the R1 template): "B", "(B)", "B. a cat", "B) …" or any form below; else in the whole
 * text: "Answer: B", "the answer is (C)", `\boxed{D}`, a line holding only the letter, "(B)".
 */
export function extractChoice(completion: string, letters = 'ABCDE'): string | null {
  const tagged = tagContent(completion, 'answer');
  if (tagged === null) return choiceIn(completion, letters);
  const alone = new RegExp(`^\\(?([${letters.toUpperCase()}${letters.toLowerCase()}])\\)?[.:]?$`).exec(tagged); // "b", "(B)."
  if (alone) return alone[1]!.toUpperCase();
  const leading = new RegExp(`^\\(?([${letters.toUpperCase()}])(?:\\)|[.:)]|\\s)`).exec(tagged); // "B. a dog", not "a dog"
  return leading ? leading[1]! : choiceIn(tagged, letters);
}

/**
 * 1 when the chosen letter (`<answer>B</answer>`, "Answer: B", "(B)", `\boxed{B}`, a lone "B") equals the row's letter, else 0.
 * @example multipleChoice()(makeRewardInput({ completion: 'so the answer is (C)', row: { answer: 'C' } })) // 1
 */
export function multipleChoice({
  answerColumn = 'answer',
  letters = 'ABCDE',
}: { answerColumn?: string; letters?: string } = {}): RewardFn {
  return ({ completion, row }) => {
    const gold = stringColumn(row, answerColumn, 'multipleChoice')
      .trim()
      .replace(/^\(|\)$/g, '')
      .toUpperCase();
    return extractChoice(completion, letters) === gold ? 1 : 0;
  };
}
