/**
 * Reading a checkpoint folder's tokenizer from disk: tokenizer.json, tokenizer_config.json and the
 * chat template (inline, chat_template.jinja or chat_template.json), built into an HfTokenizer.
 * Re-exports the tokenizer interface and class (hf-tokenizer.ts) so callers keep one import.
 *
 * This module does not render chat templates (chat-template.ts) and is not a tokenizer itself: the
 * BPE/Unigram/WordPiece work is the library's. The sampler never sees it; it works on ids.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readJsonObject } from './json-file.js';
import { HfTokenizer } from './hf-tokenizer.js';

export {
  HfTokenizer,
  checkTokenizerFitsModel,
  type DecodeOptions,
  type EncodeOptions,
  type TextTokenizer,
} from './hf-tokenizer.js';

/** Picks the chat template: tokenizer_config.json's `chat_template` (string or named list) or chat_template.jinja / .json. */
export function findChatTemplate(directory: string, tokenizerConfig: Record<string, unknown>): string | null {
  const inline = tokenizerConfig.chat_template;
  if (typeof inline === 'string') return inline;
  if (Array.isArray(inline)) {
    // Older multi-template configs: [{ name: 'default', template }, { name: 'tool_use', ... }].
    const named = inline as { name?: unknown; template?: unknown }[];
    const chosen = named.find((entry) => entry.name === 'default') ?? named[0];
    if (chosen && typeof chosen.template === 'string') return chosen.template;
  }
  const jinjaFile = join(directory, 'chat_template.jinja');
  if (existsSync(jinjaFile)) return readFileSync(jinjaFile, 'utf8');
  const jsonFile = join(directory, 'chat_template.json');
  if (existsSync(jsonFile)) {
    const template = readJsonObject(jsonFile).chat_template;
    if (typeof template === 'string') return template;
  }
  return null;
}

/** Loads the tokenizer of a checkpoint folder (tokenizer.json required, tokenizer_config.json optional). */
export function loadTokenizer(directory: string): HfTokenizer {
  const root = resolve(directory);
  const tokenizerFile = join(root, 'tokenizer.json');
  if (!existsSync(tokenizerFile)) {
    const hint = existsSync(join(root, 'tokenizer.model'))
      ? ' (only a SentencePiece tokenizer.model is present; convert it to tokenizer.json with transformers)'
      : '';
    throw new Error(`${tokenizerFile}: missing${hint}`);
  }
  const configFile = join(root, 'tokenizer_config.json');
  const tokenizerConfig = existsSync(configFile) ? readJsonObject(configFile) : {};
  return new HfTokenizer(readJsonObject(tokenizerFile), tokenizerConfig, findChatTemplate(root, tokenizerConfig), root);
}
