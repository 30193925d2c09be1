/**
 * Tests for chat-template rendering: ChatML (Qwen/SmolLM2 style) and Llama-3 style templates give the
 * strings transformers' apply_chat_template gives, BOS is not added twice, template variables pass
 * through, and a tokenizer without a template or a failing template gives a clear error.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from './char-tokenizer.js';
import { applyChatTemplate, encodeChat, renderChatTemplate } from './chat-template.js';
import { loadTokenizer } from './tokenizer.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

// SmolLM2-Instruct / Qwen2.5-style ChatML, with a default system prompt when none is given.
const CHATML =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant.<|im_end|>\\n' }}{% endif %}" +
  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Llama-3-Instruct style: BOS from the template, raise_exception on a bad role order.
const LLAMA3 =
  "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' and loop.first %}{{ raise_exception('first message must not be the assistant') }}{% endif %}" +
  "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

// Qwen3 style: a template variable switches the thinking block.
const THINKING =
  '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% if enable_thinking is defined and enable_thinking is false %} <think></think>{% endif %}{% endif %}';

const tokens = { bosToken: '<s>', eosToken: '</s>' };

describe('renderChatTemplate', () => {
  it('renders ChatML with a default system prompt and the generation prompt', () => {
    const text = renderChatTemplate(CHATML, [{ role: 'user', content: 'What is 2+2?' }], tokens);
    expect(text).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('leaves the generation prompt out when asked', () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
    ];
    expect(renderChatTemplate(CHATML, messages, tokens, { addGenerationPrompt: false })).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n',
    );
  });

  it('renders a Llama-3 style template with the BOS string and trimmed content', () => {
    const text = renderChatTemplate(LLAMA3, [{ role: 'user', content: '  Hello  ' }], {
      bosToken: '<|begin_of_text|>',
      eosToken: '<|eot_id|>',
    });
    expect(text).toBe(
      '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  it('passes extra variables through', () => {
    const messages = [{ role: 'user', content: 'x' }];
    expect(renderChatTemplate(THINKING, messages, tokens)).toBe('user: x\nassistant:');
    expect(renderChatTemplate(THINKING, messages, tokens, { variables: { enable_thinking: false } })).toBe(
      'user: x\nassistant: <think></think>',
    );
  });

  it("reports the template's own raise_exception message", () => {
    expect(() => renderChatTemplate(LLAMA3, [{ role: 'assistant', content: 'hi' }], tokens)).toThrow(
      /chat_template failed to render: .*first message must not be the assistant/,
    );
  });

  it('names a template that does not parse and a malformed message', () => {
    expect(() => renderChatTemplate('{% for m in messages %}', [], tokens)).toThrow(
      /chat_template could not be parsed/,
    );
    expect(() => renderChatTemplate(CHATML, [{ role: 'user', content: 3 as unknown as string }], tokens)).toThrow(
      /chat message 0: needs a string "role" and a string "content"/,
    );
  });
});

describe('applyChatTemplate / encodeChat', () => {
  it('explains that a tokenizer without a chat template cannot take chat messages', () => {
    const tokenizer = loadTokenizer(tinyStoriesModel);
    expect(() => applyChatTemplate(tokenizer, [{ role: 'user', content: 'hi' }])).toThrow(
      /this tokenizer has no chat template/,
    );
  });

  it('uses the tokenizer’s BOS string and does not add BOS a second time when tokenizing', () => {
    const folder = mkdtempSync(join(tmpdir(), 'chat-template-test-'));
    cpSync(tinyStoriesModel, folder, { recursive: true });
    const config = JSON.parse(readFileSync(join(folder, 'tokenizer_config.json'), 'utf8'));
    const template = '{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}';
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: template }));
    const tokenizer = loadTokenizer(folder);
    rmSync(folder, { recursive: true });
    const base = loadTokenizer(tinyStoriesModel);
    const ids = encodeChat(tokenizer, [{ role: 'user', content: 'Once upon a time' }]);
    expect(ids.filter((id) => id === base.bosTokenId)).toHaveLength(1);
    expect(ids[0]).toBe(base.bosTokenId);
    expect(base.decode(ids, { skipSpecialTokens: true })).toBe('Once upon a time');
  });

  it('works with the character tokenizer and its special tokens', () => {
    const tokenizer = new CharTokenizer({
      extraSpecialTokens: ['<|user|>', '<|assistant|>'],
      chatTemplate:
        '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}',
    });
    const ids = encodeChat(tokenizer, [{ role: 'user', content: '2+2' }]);
    expect(ids[0]).toBe(tokenizer.tokens.indexOf('<|user|>'));
    expect(ids[ids.length - 1]).toBe(tokenizer.tokens.indexOf('<|assistant|>'));
    expect(tokenizer.decode(ids)).toBe('<|user|>2+2<|assistant|>');
  });
});
