/**
 * Chat templates with images: `<image>` placeholders in message text become HF content parts for a
 * template that reads them (SmolVLM's), text-only messages too, and a text-only template given an
 * image is an error naming the prompt.
 */
import { describe, expect, it } from 'vitest';
import { renderChatTemplate, templateTakesContentParts } from './chat-template.js';

// SmolVLM-256M-Instruct's chat_template (Idefics3): content is a list of {type: 'text', text} / {type: 'image'}.
const SMOLVLM =
  "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}" +
  "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n" +
  "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}";
const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const tokens = { bosToken: null, eosToken: null };

describe('chat templates with images', () => {
  it('renders image parts where the placeholders are, as transformers does for SmolVLM', () => {
    const text = renderChatTemplate(SMOLVLM, [{ role: 'user', content: '<image>How many circles?' }], tokens);
    expect(text).toBe('<|im_start|>User:<image>How many circles?<end_of_utterance>\nAssistant:');
    const two = renderChatTemplate(SMOLVLM, [{ role: 'user', content: 'Compare <image> and <image>.' }], tokens);
    expect(two).toBe('<|im_start|>User: Compare <image> and <image>.<end_of_utterance>\nAssistant:');
  });

  it('a template that reads parts gets text-only messages as parts too (else it would render nothing)', () => {
    expect(templateTakesContentParts(SMOLVLM)).toBe(true);
    expect(templateTakesContentParts(CHATML)).toBe(false);
    const text = renderChatTemplate(
      SMOLVLM,
      [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
      ],
      tokens,
      { addGenerationPrompt: false },
    );
    expect(text).toBe('<|im_start|>User: Hi<end_of_utterance>\nAssistant: Hello<end_of_utterance>\n');
  });

  it('text-only prompts on a text template are unchanged', () => {
    expect(renderChatTemplate(CHATML, [{ role: 'user', content: 'Hi' }], tokens)).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('a text-only template given an image is an error naming the prompt', () => {
    expect(() =>
      renderChatTemplate(CHATML, [{ role: 'user', content: '<image>How many?' }], tokens, {
        where: 'train.jsonl line 7',
      }),
    ).toThrow(
      /train\.jsonl line 7: the chat template wrote 0 <image> placeholder\(s\) for the prompt's 1 image\(s\); it is a text-only template/,
    );
  });
});
