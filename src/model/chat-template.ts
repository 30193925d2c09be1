/**
 * Chat prompts: renders a tokenizer's Jinja `chat_template` with @huggingface/jinja the way
 * transformers' `apply_chat_template` does (messages, add_generation_prompt, bos_token/eos_token
 * from the tokenizer config, extra variables), then tokenizes the result without adding special
 * tokens again, since the template writes them itself.
 *
 * This module does not hold templates of its own: a tokenizer without one gets a clear error.
 */
import { Template } from '@huggingface/jinja';
import type { TextTokenizer } from './tokenizer.js';

/** One chat turn; `content` is plain text (multimodal parts are not supported). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string;
}

/** Rendering options: append the assistant header (default true, for generation) and extra template variables. */
export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  /** Extra variables some templates read, e.g. `tools`, `enable_thinking` (Qwen3), `date_string`. */
  variables?: Record<string, unknown>;
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
  try {
    return parseTemplate(template).render({
      ...options.variables,
      messages,
      add_generation_prompt: options.addGenerationPrompt ?? true,
      bos_token: tokens.bosToken ?? '',
      eos_token: tokens.eosToken ?? '',
    });
  } catch (error) {
    throw new Error(`chat_template failed to render: ${(error as Error).message}`);
  }
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
