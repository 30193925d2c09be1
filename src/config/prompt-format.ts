/**
 * How a dataset row becomes the tokens the model sees, the same way in every phase (rollout,
 * evaluation, SFT): with a chat template, the row's messages (system prompt, user turn, or the
 * row's own message list) rendered with `add_generation_prompt` and tokenized without adding
 * special tokens again (the template writes BOS itself, so it is never doubled); without one, the
 * plain text with the tokenizer's special tokens. SFT renders the whole conversation and trains
 * only the assistant part: the completion is what the template writes after the generation prompt.
 *
 * Is not: the template engine (model/chat-template.ts) or the row mapping (data/examples.ts).
 */
import { readTemplateFile } from './template-file.js';
import { exampleMessages, exampleText } from '../data/examples.js';
import type { Example } from '../data/task.js';
import { renderChatTemplate } from '../model/chat-template.js';
import type { TextTokenizer } from '../model/tokenizer.js';

/** The tokenizer and the chat template in force (null = plain text prompts). */
export interface PromptFormat {
  tokenizer: TextTokenizer;
  chatTemplate: string | null;
}

/**
 * `model.chatTemplate`: 'auto' uses the checkpoint's template when it has one, 'none' plain text,
 * a path to a `.jinja` file or the template text itself replaces it.
 */
export function promptFormatFor(setting: string, tokenizer: TextTokenizer): PromptFormat {
  if (setting === 'auto') return { tokenizer, chatTemplate: tokenizer.chatTemplate };
  if (setting === 'none') return { tokenizer, chatTemplate: null };
  if (/\.(jinja|j2|txt)$/.test(setting)) {
    return { tokenizer, chatTemplate: readTemplateFile(setting) };
  }
  return { tokenizer, chatTemplate: setting };
}

/** The row's prompt text before image placeholders are expanded (rendered template or plain text). */
function promptText(format: PromptFormat, example: Example): string {
  if (format.chatTemplate === null) {
    if (typeof example.prompt !== 'string') {
      throw new Error(
        `a prompt is a list of chat messages (${JSON.stringify(example.prompt).slice(0, 80)}…) but the model has no chat template; set model.chatTemplate to a template (text or a .jinja file) or give text prompts`,
      );
    }
    return exampleText(example);
  }
  return renderChatTemplate(format.chatTemplate, exampleMessages(example), format.tokenizer, {
    addGenerationPrompt: true,
  });
}

/**
 * The prompt's text as the model sees it (rendered template or plain text) and its token ids.
 * `expandImages` (vision-language runs) replaces each `<image>` placeholder by the processor's
 * expansion before tokenizing.
 */
export function renderPrompt(
  format: PromptFormat,
  example: Example,
  expandImages: (text: string) => string = (text) => text,
): { text: string; ids: number[] } {
  const text = expandImages(promptText(format, example));
  return { text, ids: format.tokenizer.encode(text, { addSpecialTokens: format.chatTemplate === null }) };
}

/**
 * An SFT pair: the prompt as `renderPrompt` gives it and the completion's ids. With a chat template
 * the completion is the rendered conversation after the prompt (the assistant turn with its
 * end-of-turn marker, which the model must learn to emit); plain text gets `endTokenId` appended.
 */
export function renderDemonstration(
  format: PromptFormat,
  example: Example,
  completion: string,
  endTokenId: number,
  expandImages?: (text: string) => string,
): { promptIds: number[]; completionIds: number[] } {
  const prompt = renderPrompt(format, example, expandImages);
  if (format.chatTemplate === null) {
    return {
      promptIds: prompt.ids,
      completionIds: [...format.tokenizer.encode(completion, { addSpecialTokens: false }), endTokenId],
    };
  }
  const conversation = [...exampleMessages(example), { role: 'assistant', content: completion }];
  const whole = renderChatTemplate(format.chatTemplate, conversation, format.tokenizer, { addGenerationPrompt: false });
  const unexpanded = promptText(format, example);
  if (!whole.startsWith(unexpanded)) {
    throw new Error(
      'the chat template renders the prompt differently inside the whole conversation, so the assistant part cannot be separated for SFT; use model.chatTemplate to give a template whose generation prompt is a prefix of the conversation',
    );
  }
  return {
    promptIds: prompt.ids,
    completionIds: format.tokenizer.encode(whole.slice(unexpanded.length), { addSpecialTokens: false }),
  };
}
