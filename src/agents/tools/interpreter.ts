/**
 * The built-in code-interpreter tool: runs Python or JavaScript the model wrote through the
 * existing sandbox (`rewards/code/sandbox.ts`, see docs/sandbox.md) and shows it what the program
 * printed.
 *
 * Is: one sandboxed run per call, fresh every time (no state carries between calls), with the
 * sandbox's wall-clock, memory, process and output limits. Is not: a sandbox of its own — every
 * guarantee (and every hole, by mode) is the sandbox's; nor a notebook kernel that keeps variables.
 */
import { z } from 'zod';
import { runSandboxed, type SandboxResult } from '../../rewards/code.js';
import type { Tool } from '../types.js';

/** Options of {@link interpreterTool}. */
export interface InterpreterToolOptions {
  language: 'python' | 'javascript';
  /** The name the model calls (default the language's name). */
  name?: string;
  /** Wall-clock limit of one run in milliseconds (default 5000); the tool's timeout adds 2 s for start-up. */
  timeoutMs?: number;
  /** Memory of a run in MiB (default 256). */
  memoryMb?: number;
  /** Longest observation shown to the model, in characters (default 2000); longer output is cut. */
  maxObservationCharacters?: number;
  /** Longest program accepted, in characters (default 20000). */
  maxCodeCharacters?: number;
}

/** The observation for a finished run: stdout, then stderr, then the exit code when it is not 0. */
function observation(result: SandboxResult, limit: number): string {
  const parts = [result.stdout.trimEnd()];
  if (result.stderr.trim() !== '') parts.push(`[stderr]\n${result.stderr.trimEnd()}`);
  if (result.exitCode !== 0) parts.push(`[exit code ${result.exitCode ?? 'none (killed)'}]`);
  if (result.outputTruncated) parts.push('[output cut: the program printed too much]');
  const text = parts.filter((part) => part !== '').join('\n') || '[no output]';
  return text.length <= limit ? text : `${text.slice(0, limit)}\n[… ${text.length - limit} more characters cut]`;
}

/**
 * A Python or JavaScript interpreter tool: `{"code": "print(6 * 7)"}` → "42". A program that
 * raises or exits non-zero is an ordinary observation (its traceback is what the model needs); a
 * run past the time limit throws, so the rollout records a tool error.
 * @example environment.tools = [interpreterTool({ language: 'python', timeoutMs: 3000 })]
 */
export function interpreterTool({
  language,
  name = language,
  timeoutMs = 5000,
  memoryMb = 256,
  maxObservationCharacters = 2000,
  maxCodeCharacters = 20000,
}: InterpreterToolOptions): Tool {
  const parameters = z.object({
    code: z
      .string()
      .min(1)
      .max(maxCodeCharacters)
      .describe(`a complete ${language === 'python' ? 'Python' : 'JavaScript'} program; print what you want to see`),
  });
  return {
    name,
    description: `Runs a ${language === 'python' ? 'Python 3' : 'JavaScript (Node)'} program in a sandbox and returns what it printed. No network, no state between calls.`,
    parameters,
    timeoutMs: timeoutMs + 2000,
    async run(args, context) {
      const { code } = parameters.parse(args);
      const result = await runSandboxed(code, { language, timeoutMs, memoryMb, signal: context.signal });
      if (result.timedOut) throw new Error(`the program ran past the ${timeoutMs} ms limit and was stopped`);
      return observation(result, maxObservationCharacters);
    },
  };
}
