/** Tests of the TRL formats → Example mapping: standard and conversational rows, column mapping, system prompts, templates, errors. */
import { describe, expect, it } from 'vitest';
import { exampleMessages, exampleText, toExample } from './examples.js';

const row = (fields: Record<string, unknown>, source = 'data.jsonl line 3') => ({ fields, source });

describe('toExample', () => {
  it('standard prompt-only and prompt-completion rows; every other column is kept', () => {
    expect(toExample(row({ prompt: 'The sky is', completion: ' blue.', topic: 'sky' }))).toEqual({
      prompt: 'The sky is',
      completion: ' blue.',
      topic: 'sky',
    });
    expect(toExample(row({ prompt: '2+3=', answer: 5 }))).toEqual({ prompt: '2+3=', answer: '5' });
  });

  it('conversational prompt and completion lists; the prompt stays a message list', () => {
    const example = toExample(
      row({
        prompt: [{ role: 'user', content: 'What color is the sky?' }],
        completion: [{ role: 'assistant', content: 'It is blue.' }],
      }),
    );
    expect(example.prompt).toEqual([{ role: 'user', content: 'What color is the sky?' }]);
    expect(example.completion).toBe('It is blue.');
  });

  it('a messages column: trailing assistant turns become the completion', () => {
    const example = toExample(
      row({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello!' },
        ],
      }),
    );
    expect(example.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(example.completion).toBe('Hello!');
    expect(() => toExample(row({ messages: [{ role: 'assistant', content: 'x' }] }))).toThrow(
      "data.jsonl line 3: the prompt has no message before the assistant's",
    );
  });

  it('column mapping: prompt, answer and completion columns by name (GSM8K)', () => {
    const example = toExample(row({ question: 'How many?', answer: 'It is 2+2=4.\n#### 4' }), {
      promptColumn: 'question',
      answerColumn: 'answer',
      completionColumn: 'answer',
    });
    expect(example).toEqual({
      question: 'How many?',
      prompt: 'How many?',
      answer: 'It is 2+2=4.\n#### 4',
      completion: 'It is 2+2=4.\n#### 4',
    });
    const renamed = toExample(row({ problem: 'p', solution: 's' }), {
      promptColumn: 'problem',
      answerColumn: 'solution',
    });
    expect(renamed.answer).toBe('s');
    expect(renamed.solution).toBe('s');
  });

  it("system prompt: a system message before a chat prompt (the row's own wins), a separate field for a text prompt", () => {
    const chat = toExample(row({ prompt: [{ role: 'user', content: 'Hi' }] }), { systemPrompt: 'Think first.' });
    expect(chat.prompt).toEqual([
      { role: 'system', content: 'Think first.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(chat.system).toBeUndefined();
    const own = toExample(
      row({
        prompt: [
          { role: 'system', content: 'Mine.' },
          { role: 'user', content: 'Hi' },
        ],
      }),
      { systemPrompt: 'Think first.' },
    );
    expect(own.prompt).toEqual([
      { role: 'system', content: 'Mine.' },
      { role: 'user', content: 'Hi' },
    ]);
    const text = toExample(row({ prompt: 'Hi' }), { systemPrompt: 'Think first.' });
    expect(text).toEqual({ prompt: 'Hi', system: 'Think first.' });
  });

  it('a prompt template fills row fields (lists joined, {{ }} literal); a missing field names the row and the field', () => {
    const example = toExample(row({ numbers: [3, 7], target: 10 }), {
      promptTemplate: 'Use {numbers} to make {target}; write {{expr}}.',
    });
    expect(example.prompt).toBe('Use 3, 7 to make 10; write {expr}.');
    expect(() => toExample(row({ question: 'q' }), { promptTemplate: 'Solve: {problem}' })).toThrow(
      'data.jsonl line 3: the prompt template needs field "problem", which the row does not have (columns: question)',
    );
    expect(() => toExample(row({ problem: { a: 1 } }), { promptTemplate: 'Solve: {problem}' })).toThrow(
      /field "problem", which the row holds as a non-text value/,
    );
  });

  it('a row without a prompt, a mapped column missing, or a malformed message names the row', () => {
    expect(() => toExample(row({ question: 'q' }))).toThrow(
      'data.jsonl line 3: no prompt — the row has no column "prompt" (columns: question); set promptColumn or promptTemplate',
    );
    expect(() => toExample(row({ q: 'q' }), { promptColumn: 'question' })).toThrow(
      'data.jsonl line 3: no prompt — the row has no column "question"',
    );
    expect(() => toExample(row({ prompt: 'q' }), { answerColumn: 'gold' })).toThrow(
      'data.jsonl line 3: no answer column "gold" (columns: prompt)',
    );
    expect(() => toExample(row({ prompt: 'q', answer: ['a'] }))).toThrow(
      'data.jsonl line 3: column "answer" must be text, got a list',
    );
    expect(() => toExample(row({ prompt: [{ role: 'user', text: 'Hi' }] }))).toThrow(
      'data.jsonl line 3: column "prompt" message 1 must be {role, content} with string values',
    );
  });
});

describe('exampleText / exampleMessages', () => {
  it('joins a text prompt with its system text, and refuses to flatten a message list', () => {
    expect(exampleText({ prompt: 'Hi', system: 'Be brief.' })).toBe('Be brief.\n\nHi');
    expect(exampleText({ prompt: 'Hi' })).toBe('Hi');
    expect(() => exampleText({ prompt: [{ role: 'user', content: 'Hi' }] })).toThrow(/needs a chat template/);
  });

  it('gives chat messages for either prompt form', () => {
    expect(exampleMessages({ prompt: 'Hi', system: 'Be brief.' })).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(exampleMessages({ prompt: [{ role: 'user', content: 'Hi' }] })).toEqual([{ role: 'user', content: 'Hi' }]);
  });
});
