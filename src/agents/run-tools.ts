/**
 * Running one parsed tool call against an environment's tools, as untrusted input: an unknown tool,
 * arguments its zod schema refuses, a throw, a non-serialisable result or a call past its timeout
 * all become an error record whose text the model is shown; nothing here throws. A timed-out call
 * is abandoned (its signal aborted) and the episode goes on.
 *
 * Is not: parsing (tool-calls.ts), scheduling across episodes (the rollout runs the calls of every
 * episode concurrently), or a sandbox (the built-in code tools bring their own).
 */
import { isZodSchema } from './tool-calls.js';
import type { Tool, ToolCall, ToolCallRecord } from './types.js';

/** The longest observation text a tool result becomes (longer results are cut, with a note). */
const MAX_RESULT_CHARS = 8000;

function resultText(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > MAX_RESULT_CHARS
    ? `${text.slice(0, MAX_RESULT_CHARS)}… [cut at ${MAX_RESULT_CHARS} characters]`
    : text;
}

/** Races `work` against a timer; the timer aborts the call's signal. */
async function withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, milliseconds: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`timed out after ${milliseconds} ms`));
    }, milliseconds);
  });
  try {
    return await Promise.race([work(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one call (a malformed one arrives as `error`) and records what the model is shown. */
export async function runToolCall(
  tools: readonly Tool[],
  call: ToolCall | { error: string },
  options: { turn: number; timeoutMs: number },
): Promise<ToolCallRecord> {
  const started = Date.now();
  const failed = (name: string, args: Record<string, unknown>, error: string): ToolCallRecord => ({
    name,
    arguments: args,
    turn: options.turn,
    result: `Error: ${error}`,
    error,
    milliseconds: Date.now() - started,
  });
  if ('error' in call) return failed('', {}, `malformed tool call: ${call.error}`);
  const tool = tools.find((candidate) => candidate.name === call.name);
  if (!tool) {
    const known = tools.map((candidate) => candidate.name).join(', ') || 'none';
    return failed(call.name, call.arguments, `unknown tool "${call.name}" (tools: ${known})`);
  }
  let args = call.arguments;
  if (isZodSchema(tool.parameters)) {
    const parsed = tool.parameters.safeParse(call.arguments);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`);
      return failed(call.name, call.arguments, `bad arguments for "${call.name}": ${problems.join('; ')}`);
    }
    args = parsed.data as Record<string, unknown>;
  }
  try {
    const value = await withTimeout(async (signal) => tool.run(args, { signal }), tool.timeoutMs ?? options.timeoutMs);
    const record: ToolCallRecord = {
      ...call,
      turn: options.turn,
      result: resultText(value),
      milliseconds: Date.now() - started,
    };
    return record;
  } catch (error) {
    return failed(call.name, call.arguments, `${call.name}: ${(error as Error)?.message ?? String(error)}`);
  }
}
