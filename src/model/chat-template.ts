/**
 * Chat prompts: renders a tokenizer's Jinja `chat_template` with @huggingface/jinja the way
 * transformers' `apply_chat_template` does (messages, add_generation_prompt, bos_token/eos_token
 * from the tokenizer config, extra variables), then tokenizes the result without adding special
 * tokens again, since the template writes them itself.
 *
 * Images: a message's text holds one `<image>` placeholder per image (the data layer writes them for
 * `{type: 'image'}` content parts). A template that reads content parts (it tests a part's type
 * against 'image', as SmolVLM's and Qwen2-VL's do) — or any conversation with a placeholder — gets
 * every message's content as HF's list of parts (`{type: 'text', text}`, `{type: 'image'}`), and
 * the rendered text must hold every placeholder: a text-only template given an image is an error.
 *
 * This module does not hold templates of its own: a tokenizer without one gets a clear error.
 */
import { Template } from '@huggingface/jinja';
import type { TextTokenizer } from './tokenizer.js';

/** One chat turn; `content` is text, images as `<image>` placeholders (rendered as content parts, see the header). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string;
}

/** Rendering options: append the assistant header (default true, for generation) and extra template variables. */
export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  /** Extra variables some templates read, e.g. `tools`, `enable_thinking` (Qwen3), `date_string`. */
  variables?: Record<string, unknown>;
  /** Names the prompt in errors, e.g. "train.jsonl line 4". */
  where?: string;
}

/** The image placeholder in message text (Idefics3 / SmolVLM's image token). */
export const imagePlaceholder = '<image>';

/** One HF content part. */
type ContentPart = { type: 'text'; text: string } | { type: 'image' };

/** Whether a template reads content parts: it compares a part's type with 'image' (SmolVLM, Qwen2-VL, Llava). */
export function templateTakesContentParts(template: string): boolean {
  return /(?:\[\s*['"]type['"]\s*\]|\.type)\s*==\s*['"]image['"]/.test(template);
}

/** Message text → HF content parts, each `<image>` an image part. */
function contentParts(text: string): ContentPart[] {
  const parts: ContentPart[] = [];
  text.split(imagePlaceholder).forEach((piece, index) => {
    if (index > 0) parts.push({ type: 'image' });
    if (piece !== '') parts.push({ type: 'text', text: piece });
  });
  return parts;
}

function countPlaceholders(text: string): number {
  return text.split(imagePlaceholder).length - 1;
}

// Parsing a template is the slow part; the same few templates are rendered thousands of times in a run.
const parsedTemplates = new Map<string, Template>();

function parseTemplate(source: string): Template {
  let template = parsedTemplates.get(source);
  if (!template) {
    try {
      template = new Template(source);
    } catch (error) {
      throw new Error(`chat_template could not be parsed: ${(error as Error).message}`);
    }
    parsedTemplates.set(source, template);
  }
  return template;
}

/** Renders a chat template string with the given messages and special-token strings. */
export function renderChatTemplate(
  template: string,
  messages: ChatMessage[],
  tokens: { bosToken: string | null; eosToken: string | null },
  options: ChatTemplateOptions = {},
): string {
  messages.forEach((message, index) => {
    if (typeof message?.role !== 'string' || typeof message.content !== 'string') {
      throw new Error(`chat message ${index}: needs a string "role" and a string "content"`);
    }
  });
  const images = messages.reduce((total, message) => total + countPlaceholders(message.content), 0);
  const parts = images > 0 || templateTakesContentParts(template);
  let text: string;
  try {
    text = parseTemplate(template).render({
      ...options.variables,
      messages: parts ? messages.map((message) => ({ ...message, content: contentParts(message.content) })) : messages,
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: tokens.bosToken ?? '',
      eos_token: tokens.eosToken ?? '',
    });
  } catch (error) {
    throw new Error(
      `${options.where ? `${options.where}: ` : ''}chat_template failed to render: ${(error as Error).message}`,
    );
  }
  const rendered = countPlaceholders(text);
  if (rendered !== images)
    throw new Error(
      `${options.where ? `${options.where}: ` : ''}the chat template wrote ${rendered} ${imagePlaceholder} placeholder(s) for the prompt's ${images} image(s); ${rendered < images ? 'it is a text-only template (it does not render {type: "image"} content parts): use a vision-language checkpoint\'s template' : 'the template adds images of its own'}`,
    );
  return text;
}

/** Renders the tokenizer's chat template to text; throws when the tokenizer has none. */
export function applyChatTemplate(
  tokenizer: TextTokenizer,
  messages: ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  if (tokenizer.chatTemplate === null) {
    throw new Error(
      'this tokenizer has no chat template (no "chat_template" in tokenizer_config.json, no chat_template.jinja); use a plain-text prompt instead of chat messages, or a chat/instruct checkpoint',
    );
  }
  return renderChatTemplate(tokenizer.chatTemplate, messages, tokenizer, options);
}

/** Renders the chat template and tokenizes it without adding special tokens twice (the template writes BOS itself). */
export function encodeChat(
  tokenizer: TextTokenizer,
  messages: ChatMessage[],
  options: ChatTemplateOptions = {},
): number[] {
  return tokenizer.encode(applyChatTemplate(tokenizer, messages, options), { addSpecialTokens: false });
}
