/**
 * Images in dataset rows (vision-language data): an image column (one file path, base64 string,
 * `data:` URL or Hugging Face `{bytes, path}` struct per cell, or a list of them), and
 * conversational content parts (`{type: 'image'}`, `{type: 'text', text}`) as TRL and
 * transformers write them.
 *
 * The prompt keeps text only: every image becomes an `<image>` placeholder where its part was (the
 * chat template renders placeholders back as image parts; `expandPromptImages` expands them for the
 * model). A prompt with images but no placeholder gets them prepended, at the start of the first
 * user turn for a conversation (TRL's `prepare_multimodal_messages`). Relative paths are read from
 * the data file's folder and must exist when the rows are loaded; decoding happens later
 * (`model/image-decode.ts`), with the row named in its errors.
 *
 * Is not: decoding, resizing, or anything about the model's image tokens.
 */
import { imageFile } from './image-files.js';
import type { ChatMessage } from '../rewards/types.js';

/** The placeholder one image leaves in prompt text. */
export const imagePlaceholder = '<image>';

/** One image of a row: a file path (made absolute), base64 text or a data: URL, or the bytes. */
export type ImageSource = string | Uint8Array;

/** Text of a message's content: a string, or HF content parts with each image part as a placeholder; inline part images are collected. */
export function contentText(content: unknown, where: string, inlineImages: string[]): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  return content
    .map((part: unknown, index) => {
      const { type, text, image } = (part ?? {}) as { type?: unknown; text?: unknown; image?: unknown };
      if (type === 'text' && typeof text === 'string') return text;
      if (type === 'image') {
        if (typeof image === 'string') inlineImages.push(image);
        else if (image !== undefined)
          throw new Error(`${where} part ${index + 1}: an image part's "image" must be text`);
        return imagePlaceholder;
      }
      throw new Error(
        `${where} part ${index + 1}: a content part must be {type: 'text', text} or {type: 'image'}, got ${JSON.stringify(part)}`,
      );
    })
    .join('');
}

/** Base64 text (64+ characters of its alphabet); only asked of a value that names no existing file. */
function looksLikeBase64(value: string): boolean {
  return value.length >= 64 && /^[A-Za-z0-9+/_-]+={0,2}$/.test(value.replace(/\s+/g, ''));
}

/** One cell value → an image source; paths resolved against `baseDirectory` and checked to exist. */
function sourceOf(value: unknown, where: string, baseDirectory: string): ImageSource {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'object' && value !== null) {
    const { bytes, path } = value as { bytes?: unknown; path?: unknown };
    if (bytes instanceof Uint8Array) return bytes;
    if (typeof path === 'string') return sourceOf(path, where, baseDirectory);
  }
  if (typeof value !== 'string' || value === '')
    throw new Error(
      `${where}: an image must be a file path, base64 text, a data: URL or {bytes, path}, got ${JSON.stringify(value)}`,
    );
  if (value.startsWith('data:')) return value;
  const file = imageFile(value, baseDirectory);
  if (file.exists) return file.path;
  if (looksLikeBase64(value)) return value;
  throw new Error(`${where}: image file not found: ${value}${file.relative ? ` (relative to ${baseDirectory})` : ''}`);
}

/** The images of a row's image column (a cell or a list of cells), in order. */
export function imageColumnSources(value: unknown, where: string, baseDirectory: string): ImageSource[] {
  if (value === null || value === undefined) return [];
  const cells = Array.isArray(value) ? value : [value];
  return cells.map((cell, index) =>
    sourceOf(cell, cells.length > 1 ? `${where} item ${index + 1}` : where, baseDirectory),
  );
}

/** Inline part images (`{type: 'image', image: '…'}`), resolved like column cells. */
export function inlineImageSources(images: string[], where: string, baseDirectory: string): ImageSource[] {
  return images.map((image, index) => sourceOf(image, `${where} image part ${index + 1}`, baseDirectory));
}

function countPlaceholders(text: string): number {
  return text.split(imagePlaceholder).length - 1;
}

/**
 * Places `count` images in a prompt: a prompt without placeholders gets them prepended (the first
 * user turn of a conversation); otherwise the placeholders must number `count`, or it is an error naming the row.
 */
export function placeImages<Prompt extends string | ChatMessage[]>(
  prompt: Prompt,
  count: number,
  where: string,
): Prompt {
  const messages = typeof prompt === 'string' ? null : (prompt as ChatMessage[]);
  const present = messages
    ? messages.reduce((total, message) => total + countPlaceholders(message.content), 0)
    : countPlaceholders(prompt as string);
  if (present === count) return prompt;
  if (present > 0 || count === 0)
    throw new Error(
      `${where}: the prompt has ${present} ${imagePlaceholder} placeholder(s) (image parts) but the row has ${count} image(s)`,
    );
  const leading = imagePlaceholder.repeat(count);
  if (!messages) return (leading + (prompt as string)) as Prompt;
  const first = messages.findIndex((message) => message.role === 'user');
  if (first < 0) throw new Error(`${where}: the row has images but its prompt has no user turn to put them in`);
  return messages.map((message, index) =>
    index === first ? { ...message, content: leading + message.content } : message,
  ) as Prompt;
}
