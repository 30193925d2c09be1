/**
 * Tool-call parsing against what the real chat templates render: each family's template (Qwen2.5,
 * Llama 3.1, Mistral 7B v0.3, their Jinja text under test/fixtures/chat-templates) renders an
 * assistant turn with tool calls, and the parser must recover exactly those calls from the turn's
 * text. Malformed calls become error entries, never throws; tool definitions render through the
 * templates' `tools` variable.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renderChatTemplate } from '../model/chat-template.js';
import { detectToolCallFormat, parseToolCalls, toolDefinitions, type ToolCallFormat } from './tool-calls.js';
import type { Tool } from './types.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const template = (name: string): string => readFileSync(testFixture('chat-templates', `${name}.jinja`), 'utf8');

const calculator: Tool = {
  name: 'calculator',
  description: 'Evaluates an arithmetic expression.',
  parameters: z.object({ expression: z.string().describe('e.g. 12*(3+4)') }),
  run: () => 0,
};
const weather: Tool = {
  name: 'get_weather',
  description: 'Weather at a place.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer' } },
    required: ['city'],
  },
  run: () => 'sunny',
};

const calls = [
  { name: 'calculator', arguments: { expression: '12*(3+4)' } },
  { name: 'get_weather', arguments: { city: 'Paris "Nord"', days: 2 } },
];

/** One rendered assistant tool-call turn per family: the template, which calls it holds, where the turn sits. */
const families: {
  file: string;
  format: ToolCallFormat;
  calls: typeof calls;
  turnOf: (rendered: string) => string;
  tokens: { bosToken: string; eosToken: string };
}[] = [
  {
    file: 'qwen2.5',
    format: 'hermes',
    calls,
    turnOf: (rendered) => rendered.split('<|im_start|>assistant').at(-1)!.split('<|im_end|>')[0],
    tokens: { bosToken: '', eosToken: '<|im_end|>' },
  },
  {
    file: 'llama3.1',
    format: 'llama3',
    calls: calls.slice(0, 1), // the template renders one call per turn (it raises otherwise)
    turnOf: (rendered) =>
      rendered.split('<|start_header_id|>assistant<|end_header_id|>\n\n').at(-1)!.split('<|eot_id|>')[0],
    tokens: { bosToken: '<|begin_of_text|>', eosToken: '<|eot_id|>' },
  },
  {
    file: 'mistral-7b-instruct-v0.3',
    format: 'mistral',
    calls,
    turnOf: (rendered) => rendered.split('[/INST]').at(-1)!.split('</s>')[0],
    tokens: { bosToken: '<s>', eosToken: '</s>' },
  },
];

describe('tool calls rendered by real chat templates parse back', () => {
  it.each(families)('$file ($format)', ({ file, format, calls: expected, turnOf, tokens }) => {
    const source = template(file);
    expect(detectToolCallFormat(source)).toBe(format);
    const messages = [
      { role: 'user', content: 'What is 12*(3+4), and the weather in Paris?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: expected.map((call, k) => ({
          id: `call${k}abcd`, // Mistral's template requires 9-character ids
          type: 'function',
          function: call,
        })),
      },
    ];
    const rendered = renderChatTemplate(source, messages, tokens, {
      addGenerationPrompt: false,
      variables: { tools: toolDefinitions([calculator, weather]) },
    });
    const parsed = parseToolCalls(turnOf(rendered), format);
    expect(parsed.errors).toEqual([]);
    expect(parsed.calls.map(({ name, arguments: args }) => ({ name, arguments: args }))).toEqual(expected);
    if (format === 'mistral') expect(parsed.calls.map((call) => call.id)).toEqual(['call0abcd', 'call1abcd']);
  });

  it('renders the tool definitions (zod converted to JSON schema) into every template', () => {
    for (const { file, tokens } of families) {
      const rendered = renderChatTemplate(template(file), [{ role: 'user', content: 'hi' }], tokens, {
        variables: { tools: toolDefinitions([calculator, weather]) },
      });
      expect(rendered, file).toContain('calculator');
      expect(rendered, file).toContain('Evaluates an arithmetic expression.');
      expect(rendered, file).toContain('e.g. 12*(3+4)'); // the zod field's description made it into the schema
      expect(rendered, file).not.toContain('$schema');
    }
  });

  it('converts a zod object into the JSON schema a template expects', () => {
    expect(toolDefinitions([calculator])[0]).toEqual({
      type: 'function',
      function: {
        name: 'calculator',
        description: 'Evaluates an arithmetic expression.',
        parameters: {
          type: 'object',
          properties: { expression: { type: 'string', description: 'e.g. 12*(3+4)' } },
          required: ['expression'],
          additionalProperties: false,
        },
      },
    });
  });
});

describe('malformed and absent calls', () => {
  it.each([
    // [format, text, why it is an error]
    [
      'hermes',
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}\n</tool_call>',
      'JSON not closed',
    ],
    ['hermes', '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}}', 'block not closed'],
    ['hermes', '<tool_call>{"arguments": {}}</tool_call>', 'no name'],
    ['hermes', '<tool_call>{"name": "calculator", "arguments": [1, 2]}</tool_call>', 'arguments not an object'],
    ['hermes', '<tool_call>{"name": "calculator", "arguments": "{oops"}</tool_call>', 'quoted arguments not JSON'],
    ['llama3', '{"name": "calculator", "parameters": {"expression": "1+1"}', 'JSON not closed'],
    ['llama3', '<|python_tag|>brave_search.call(query="x")', 'built-in call syntax'],
    ['llama3', '{"name": 7, "parameters": {}}', 'name not a string'],
    ['mistral', '[TOOL_CALLS] [{"name": "calculator", "arguments": {"expression": "1+1"}}', 'array not closed'],
    ['mistral', '[TOOL_CALLS] [{"name": "calculator", "arguments": 3}]', 'arguments not an object'],
  ] as const)('%s: %s is an error (%s)', (format, text, _why) => {
    const parsed = parseToolCalls(text, format);
    expect(parsed.calls).toEqual([]);
    expect(parsed.errors).toHaveLength(1);
  });

  it('keeps good calls beside a bad one, and the text around them', () => {
    const parsed = parseToolCalls(
      'Let me compute.\n<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>\n<tool_call>{nope}</tool_call>',
      'hermes',
    );
    expect(parsed.calls).toEqual([{ name: 'calculator', arguments: { expression: '2+2' } }]);
    expect(parsed.errors).toHaveLength(1);
    expect(parsed.content).toBe('Let me compute.');
  });

  it.each([
    ['hermes', 'The answer is 42.'],
    ['llama3', 'The answer is 42.'],
    ['llama3', '{"answer": 42}'], // a JSON answer without a name is not a call
    ['mistral', 'The answer is 42.'],
  ] as const)('%s: a plain answer has no calls and no errors (%s)', (format, text) => {
    expect(parseToolCalls(text, format)).toEqual({ calls: [], errors: [], content: text });
  });

  it("refuses 'auto' on a template that teaches no tool-call syntax, naming the field", () => {
    expect(() => detectToolCallFormat('{{ messages[0].content }}')).toThrow(/agent\.toolCallFormat/);
  });
});
