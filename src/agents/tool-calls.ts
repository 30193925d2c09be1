/**
 * Tool calls in the text formats chat templates teach models, and tool definitions in the shape
 * templates render under `tools`:
 * - 'hermes' (Qwen2.5/Qwen3, Hermes): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, one
 *   block per call, any text around them;
 * - 'llama3' (Llama 3.1–3.3 custom tools): the whole turn is one JSON object
 *   `{"name": …, "parameters": {…}}`, possibly after `<|python_tag|>`;
 * - 'mistral' (Mistral v0.3 and later): `[TOOL_CALLS]` followed by a JSON array of
 *   `{"name": …, "arguments": {…}, "id"?: …}`.
 * 'auto' is resolved once from the chat template's own text (which format it teaches), never
 * guessed per completion: a JSON answer must not turn into a call because it happens to parse.
 *
 * Model output is untrusted: a call that does not parse becomes an error entry (shown to the model
 * as an error observation by the rollout), never a throw.
 * Is not: running tools (the rollout does, with timeouts) or rendering messages (model/chat-template).
 */
import { z } from 'zod';
import type { JsonSchema, Tool, ToolCall, ToolDefinition } from './types.js';

/** Tool-call syntaxes a chat template may teach. */
export type ToolCallFormat = 'hermes' | 'llama3' | 'mistral';

/** What one assistant turn held: its calls, the calls that did not parse, and the text around them. */
export interface ParsedToolCalls {
  calls: ToolCall[];
  /** One message per malformed call (shown to the model as a tool_error observation). */
  errors: string[];
  /** The turn's text with the calls removed (the answer, or the reasoning before the calls). */
  content: string;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * One call object `{name, <argumentsKey>}`. Arguments may be an object or a JSON string of one
 * (some models quote them, as the OpenAI API does).
 */
function callFromObject(value: unknown, argumentsKeys: readonly string[]): ToolCall | string {
  if (!isPlainObject(value)) return `a tool call must be a JSON object, got ${JSON.stringify(value)?.slice(0, 80)}`;
  if (typeof value.name !== 'string' || value.name.length === 0) return 'a tool call needs a string "name"';
  const key = argumentsKeys.find((candidate) => candidate in value);
  let args: unknown = key === undefined ? {} : value[key];
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return `tool call "${value.name}": its ${key} are a string that is not JSON`;
    }
  }
  if (!isPlainObject(args)) return `tool call "${value.name}": its ${key ?? 'arguments'} must be a JSON object`;
  const call: ToolCall = { name: value.name, arguments: args };
  if (typeof value.id === 'string') call.id = value.id;
  return call;
}

function parseJson(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function parseHermes(text: string): ParsedToolCalls {
  const calls: ToolCall[] = [];
  const errors: string[] = [];
  let content = '';
  let position = 0;
  for (;;) {
    const open = text.indexOf('<tool_call>', position);
    if (open < 0) break;
    content += text.slice(position, open);
    const close = text.indexOf('</tool_call>', open);
    if (close < 0) {
      errors.push('<tool_call> is not closed by </tool_call>');
      position = text.length;
      break;
    }
    const body = text.slice(open + '<tool_call>'.length, close).trim();
    const parsed = parseJson(body);
    const call =
      'error' in parsed
        ? `<tool_call> body is not JSON (${parsed.error})`
        : callFromObject(parsed.value, ['arguments']);
    if (typeof call === 'string') errors.push(call);
    else calls.push(call);
    position = close + '</tool_call>'.length;
  }
  content += text.slice(position);
  return { calls, errors, content: content.trim() };
}

function parseLlama3(text: string): ParsedToolCalls {
  const trimmed = text.trim();
  const tagged = trimmed.startsWith('<|python_tag|>');
  const body = tagged ? trimmed.slice('<|python_tag|>'.length).trim() : trimmed;
  // An untagged turn is a call only when it is a JSON object (what the template asks for).
  if (!tagged && !body.startsWith('{')) return { calls: [], errors: [], content: trimmed };
  const parsed = parseJson(body);
  if ('error' in parsed) {
    return {
      calls: [],
      errors: [
        tagged
          ? `<|python_tag|> call is not a JSON object {"name", "parameters"} (${parsed.error}); built-in tool syntax is not supported`
          : `tool call is not valid JSON (${parsed.error})`,
      ],
      content: '',
    };
  }
  if (!tagged && !(isPlainObject(parsed.value) && 'name' in parsed.value))
    return { calls: [], errors: [], content: trimmed }; // a JSON answer, not a call
  const call = callFromObject(parsed.value, ['parameters', 'arguments']);
  return typeof call === 'string'
    ? { calls: [], errors: [call], content: '' }
    : { calls: [call], errors: [], content: '' };
}

function parseMistral(text: string): ParsedToolCalls {
  const marker = text.indexOf('[TOOL_CALLS]');
  if (marker < 0) return { calls: [], errors: [], content: text.trim() };
  const content = text.slice(0, marker).trim();
  const parsed = parseJson(text.slice(marker + '[TOOL_CALLS]'.length).trim());
  if ('error' in parsed)
    return { calls: [], errors: [`[TOOL_CALLS] is not followed by a JSON array (${parsed.error})`], content };
  const list = Array.isArray(parsed.value) ? parsed.value : [parsed.value];
  const calls: ToolCall[] = [];
  const errors: string[] = [];
  for (const item of list) {
    const call = callFromObject(item, ['arguments', 'parameters']);
    if (typeof call === 'string') errors.push(call);
    else calls.push(call);
  }
  return { calls, errors, content };
}

const parsers: Record<ToolCallFormat, (text: string) => ParsedToolCalls> = {
  hermes: parseHermes,
  llama3: parseLlama3,
  mistral: parseMistral,
};

/** The tool calls of one assistant turn (its text with special tokens kept, stop token removed). */
export function parseToolCalls(text: string, format: ToolCallFormat): ParsedToolCalls {
  return parsers[format](text);
}

/**
 * The format a chat template teaches, read from its text; throws naming `agent.toolCallFormat`
 * when the template shows none of them (the user must then name it).
 */
export function detectToolCallFormat(chatTemplate: string): ToolCallFormat {
  if (chatTemplate.includes('<tool_call>')) return 'hermes';
  if (chatTemplate.includes('[TOOL_CALLS]')) return 'mistral';
  if (chatTemplate.includes('<|python_tag|>') || chatTemplate.includes('"parameters": ')) return 'llama3';
  throw new Error(
    "agent.toolCallFormat: 'auto' found no tool-call syntax in the chat template (no <tool_call>, [TOOL_CALLS] or <|python_tag|>); set it to 'hermes', 'llama3' or 'mistral'",
  );
}

/** True when a tool's `parameters` is a zod schema (checked before `run`) rather than a JSON schema. */
export function isZodSchema(parameters: Tool['parameters']): parameters is z.ZodType {
  return parameters instanceof z.ZodType;
}

/** The JSON schema of a tool's arguments (zod 4 converts its own schemas; `$schema` dropped: templates print it). */
export function parametersSchema(tool: Tool): JsonSchema {
  if (!isZodSchema(tool.parameters)) return tool.parameters;
  const { $schema: _dropped, ...schema } = z.toJSONSchema(tool.parameters) as Record<string, unknown>;
  return schema;
}

/** The OpenAI-shaped definitions chat templates render under `tools`, in the tools' order. */
export function toolDefinitions(tools: readonly Tool[]): ToolDefinition[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: parametersSchema(tool) },
  }));
}
