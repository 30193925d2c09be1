/**
 * Dataset rows → `Example`s in TRL's dataset formats, and `DataOptions`, the zod schema of a
 * dataset-backed task (what the trainer exposes as `config.data`).
 *
 * Formats (by column, as TRL reads them): standard — `prompt` text, optional `completion` text;
 * conversational — `prompt` (or `messages`) as a list of `{role, content}`, optional `completion`
 * as a list of assistant messages. A `messages` list that ends with assistant turns is split: the
 * turns before are the prompt, the trailing assistant text is the completion (SFT).
 *
 * System prompt: prepended as a system message to a conversational prompt (unless the row already
 * starts with one — the row's own wins); kept as a separate `system` field next to a text prompt,
 * because a text prompt may go to a model without a chat template, and only the consumer knows
 * how to join them (`exampleText`, `exampleMessages`).
 *
 * Is not: a file reader (`readers.ts`) or the train/eval split (`dataset-task.ts`).
 */
import { z } from 'zod';
import type { ChatMessage } from '../rewards/types.js';
import { contentText, imageColumnSources, inlineImageSources, placeImages } from './images.js';
import type { DatasetRow } from './readers.js';
import type { Example } from './task.js';

/** The dataset file formats the readers know (here, not in readers.ts, so rows can be parsed without file code). */
export const datasetFormats = ['jsonl', 'json', 'csv', 'tsv', 'parquet'] as const;
export type DatasetFormat = (typeof datasetFormats)[number];

const column = z.string().min(1);

/** One reward by name from the reward factories, with its weight and JSON options. */
const rewardReference = z
  .object({
    name: z.string().min(1),
    weight: z.number().optional(),
    options: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** Options of a task built from dataset files (`loadDatasetTask`); unknown keys are refused. */
export const dataOptionsSchema = z
  .object({
    /** The training file (.jsonl, .json, .csv, .tsv, .parquet; text formats may end in .gz). */
    trainFile: z.string().min(1),
    /** A held-out file; without it `evalFraction` of the training file is held out. */
    evalFile: z.string().min(1).optional(),
    /** Fraction of the training rows held out when there is no `evalFile` (default 0.1). */
    evalFraction: z.number().gt(0).lt(1).optional(),
    /** Seed of the held-out split (default 0); the same seed gives the same split. */
    splitSeed: z.number().int().optional(),
    /** Overrides the format the file extension implies. */
    format: z.enum(datasetFormats).optional(),
    /** Reads only the first rows of each file (quick runs on big files). */
    maxRows: z.number().int().positive().optional(),
    /** Longest row in bytes (default 1 MiB, 1048576); a longer row is refused with its file and line. */
    maxRowBytes: z.number().int().positive().optional(),
    /** Most bytes of text read from each file, after gunzip (default 1 GiB, 1073741824); Parquet: its uncompressed size. */
    maxTotalBytes: z.number().int().positive().optional(),
    /** Parquet: time allowed to decode a row group before the file is refused as damaged (default 10000 ms, plus 1 s per MiB). */
    parquetTimeoutMs: z.number().int().positive().optional(),
    /** `convert` turns a number or true/false in the prompt column into text; by default (`refuse`) such a row is refused. */
    nonTextPrompts: z.enum(['refuse', 'convert']).optional(),
    /** Column with the prompt (default `prompt`, else `messages`). */
    promptColumn: column.optional(),
    /** Column with the reference answer, exposed to rewards as `answer` (default `answer` when present). */
    answerColumn: column.optional(),
    /** Column with an SFT completion (default `completion` when present). */
    completionColumn: column.optional(),
    /** Column with the row's image(s) (paths relative to the data file, base64, data: URLs; default `images`, else `image`). */
    imageColumn: column.optional(),
    /** A system prompt: a system message for chat prompts, the `system` field for text prompts. */
    systemPrompt: z.string().optional(),
    /** Builds a text prompt from row fields, e.g. "Solve: {question}"; `{{` and `}}` are literal braces. */
    promptTemplate: z.string().optional(),
    /** Rewards by name (`rewardFactories`), weight default 1; may be left out when a recipe brings its own rewards. */
    rewards: z.array(rewardReference).default([]),
    /** The reward whose score decides correctness (default: the first reward, the recipe's first without rewards here), correct at ≥ `threshold` (default 1). */
    correctness: z
      .object({
        name: z.string().min(1),
        options: z.record(z.string(), z.unknown()).optional(),
        threshold: z.number().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type DataOptions = z.infer<typeof dataOptionsSchema>;

/** The column-mapping part of {@link DataOptions}. */
export type ColumnOptions = Pick<
  DataOptions,
  | 'promptColumn'
  | 'answerColumn'
  | 'completionColumn'
  | 'systemPrompt'
  | 'promptTemplate'
  | 'imageColumn'
  | 'nonTextPrompts'
>;

/** A list of `{role, content}` messages (content text or HF content parts), or null for a non-list; inline part images are collected. */
function messagesOf(value: unknown, source: string, column: string, inlineImages: string[] = []): ChatMessage[] | null {
  if (!Array.isArray(value)) return null;
  return value.map((message, index) => {
    const candidate = message as { role?: unknown; content?: unknown } | null;
    const where = `${source}: column "${column}" message ${index + 1}`;
    const content = candidate ? contentText(candidate.content, where, inlineImages) : null;
    if (!candidate || typeof candidate.role !== 'string' || content === null) {
      throw new Error(`${where} must be {role, content} with string values (or content parts)`);
    }
    return { role: candidate.role, content };
  });
}

/** Fills `{field}` from the row; arrays of plain values join with ", ". */
function fillTemplate(template: string, fields: Record<string, unknown>, source: string): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][\w.-]*)\}/g, (match, name: string | undefined) => {
    if (name === undefined) return match[0]!;
    const value = fields[name];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (Array.isArray(value) && value.every((item) => ['string', 'number'].includes(typeof item)))
      return value.join(', ');
    throw new Error(
      `${source}: the prompt template needs field "${name}", which the row ${value === undefined ? 'does not have' : 'holds as a non-text value'} (columns: ${Object.keys(fields).join(', ')})`,
    );
  });
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Uint8Array) return 'bytes';
  return typeof value;
}

/** A text cell; a finite number is taken as its text (answers such as 42 are common). */
function textOf(value: unknown, source: string, column: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new Error(`${source}: column "${column}" must be text, got ${kindOf(value)}`);
}

/**
 * A text prompt cell. Unlike an answer, a number is refused unless asked for: a prompt column
 * holding numbers is more likely the wrong column than a prompt (`nonTextPrompts: 'convert'`).
 */
function promptTextOf(value: unknown, source: string, column: string, convert: boolean): string {
  if (typeof value === 'string') return value;
  const convertible = (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean';
  if (convertible && convert) return String(value);
  const hint = convertible
    ? ` ${JSON.stringify(value)}, not text; set nonTextPrompts: 'convert' to use it as text`
    : ', not text';
  throw new Error(`${source}: column "${column}" holds ${kindOf(value)}${hint}`);
}

/** A completion cell: text, or (conversational) a list of assistant messages whose texts are joined. */
function completionOf(value: unknown, source: string, column: string): string {
  const messages = messagesOf(value, source, column);
  return messages ? messages.map((message) => message.content).join('\n') : textOf(value, source, column);
}

/**
 * One dataset row as an Example: prompt, answer and completion mapped, images (if any) as
 * `images` with `<image>` placeholders in the prompt, every other column kept. Relative image paths
 * are read from `baseDirectory` (the data file's folder).
 */
export function toExample(row: DatasetRow, options: ColumnOptions = {}, baseDirectory = '.'): Example {
  const { fields, source } = row;
  const example: Example = { ...fields, prompt: '' };
  const inlineImages: string[] = [];
  let prompt: string | ChatMessage[];
  if (options.promptTemplate !== undefined) {
    prompt = fillTemplate(options.promptTemplate, fields, source);
  } else {
    const promptColumn =
      options.promptColumn ?? ('prompt' in fields ? 'prompt' : 'messages' in fields ? 'messages' : undefined);
    if (promptColumn === undefined || fields[promptColumn] === undefined) {
      throw new Error(
        `${source}: no prompt — the row has no column "${promptColumn ?? 'prompt'}" (columns: ${Object.keys(fields).join(', ')}); set promptColumn or promptTemplate`,
      );
    }
    if (fields[promptColumn] === null)
      throw new Error(`${source}: column "${promptColumn}" is empty (null); no prompt`);
    prompt =
      messagesOf(fields[promptColumn], source, promptColumn, inlineImages) ??
      promptTextOf(fields[promptColumn], source, promptColumn, options.nonTextPrompts === 'convert');
  }
  if (Array.isArray(prompt)) {
    // TRL's `messages` column carries the answer too: trailing assistant turns are the completion.
    let end = prompt.length;
    while (end > 0 && prompt[end - 1]!.role === 'assistant') end--;
    if (end < prompt.length) {
      example.completion = prompt
        .slice(end)
        .map((message) => message.content)
        .join('\n');
      prompt = prompt.slice(0, end);
    }
    if (prompt.length === 0) throw new Error(`${source}: the prompt has no message before the assistant's`);
    if (options.systemPrompt !== undefined && prompt[0]!.role !== 'system')
      prompt = [{ role: 'system', content: options.systemPrompt }, ...prompt];
  } else if (options.systemPrompt !== undefined) {
    example.system = options.systemPrompt;
  }
  example.prompt = attachImages(example, prompt, inlineImages, row, options, baseDirectory);
  const answerColumn = options.answerColumn ?? ('answer' in fields ? 'answer' : undefined);
  if (answerColumn !== undefined) {
    if (!(answerColumn in fields))
      throw new Error(`${source}: no answer column "${answerColumn}" (columns: ${Object.keys(fields).join(', ')})`);
    example.answer = textOf(fields[answerColumn], source, answerColumn);
  }
  const completionColumn = options.completionColumn ?? ('completion' in fields ? 'completion' : undefined);
  if (completionColumn !== undefined) {
    if (!(completionColumn in fields))
      throw new Error(
        `${source}: no completion column "${completionColumn}" (columns: ${Object.keys(fields).join(', ')})`,
      );
    example.completion = completionOf(fields[completionColumn], source, completionColumn);
  }
  return example;
}

/** Sets `example.images` (and `imageOrigin`) from the image column or inline parts; returns the prompt with its placeholders placed. */
function attachImages(
  example: Example,
  prompt: string | ChatMessage[],
  inlineImages: string[],
  { fields, source }: DatasetRow,
  options: ColumnOptions,
  baseDirectory: string,
): string | ChatMessage[] {
  const column = options.imageColumn ?? ('images' in fields ? 'images' : 'image' in fields ? 'image' : undefined);
  if (options.imageColumn !== undefined && !(column! in fields))
    throw new Error(`${source}: no image column "${column}" (columns: ${Object.keys(fields).join(', ')})`);
  if (column !== undefined && inlineImages.length > 0 && fields[column] !== null && fields[column] !== undefined)
    throw new Error(`${source}: images both in content parts and in column "${column}"; give them one way`);
  const images =
    inlineImages.length > 0
      ? inlineImageSources(inlineImages, source, baseDirectory)
      : column !== undefined
        ? imageColumnSources(fields[column], `${source}, column "${column}"`, baseDirectory)
        : [];
  if (column !== undefined) delete example[column];
  if (images.length === 0) return placeImages(prompt, 0, source);
  example.images = images;
  example.imageOrigin = source;
  return placeImages(prompt, images.length, source);
}

/** The prompt as one text for a model without a chat template: the system text, a blank line, the prompt. */
export function exampleText(example: Example): string {
  if (typeof example.prompt !== 'string') {
    throw new Error(
      'this example has a conversational prompt (a list of messages); it needs a chat template, not plain text',
    );
  }
  return typeof example.system === 'string' ? `${example.system}\n\n${example.prompt}` : example.prompt;
}

/** The prompt as chat messages for a chat template: a text prompt becomes one user turn after the system one. */
export function exampleMessages(example: Example): ChatMessage[] {
  if (typeof example.prompt !== 'string') return example.prompt;
  const user = { role: 'user', content: example.prompt };
  return typeof example.system === 'string' ? [{ role: 'system', content: example.system }, user] : [user];
}
