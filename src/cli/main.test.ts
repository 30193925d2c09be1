/*
 * The numeric flags of `grpo eval` and `grpo generate` are checked while parsing: a value out of
 * range is refused naming the flag, before any checkpoint is loaded (`--examples -5` used to print
 * "eval/accuracy: NaN" with exit 0; `--max-new-tokens 1e8` failed inside an allocation).
 * Not here: what the commands compute (model-commands.test.ts).
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './main.js';

/** Parses `argv` with the subcommand's exit and error output captured; returns the error text. */
async function parseError(argv: string[]): Promise<string> {
  const program = buildProgram();
  let errorText = '';
  for (const command of [program, ...program.commands] as Command[]) {
    command.exitOverride().configureOutput({ writeErr: (text) => (errorText += text), writeOut: () => {} });
  }
  // A checkpoint folder that does not exist: if parsing let the value through, the action would fail
  // with a different message (ENOENT), which the assertions below would not accept.
  await expect(program.parseAsync(['node', 'grpo', ...argv, '--model', '/nonexistent-model'])).rejects.toThrow();
  return errorText;
}

describe('numeric flags', () => {
  it.each([
    // [argv, the flag named in the error]
    [['eval', '--examples', '-5'], "--examples <n>' argument '-5' is invalid. must be an integer from 1 to 100000"],
    [['eval', '--examples', '0'], "--examples <n>' argument '0' is invalid"],
    [['eval', '--examples', '2.5'], "--examples <n>' argument '2.5' is invalid"],
    [['eval', '--pass-at-k', '-1'], "--pass-at-k <k>' argument '-1' is invalid"],
    [
      ['eval', '--max-new-tokens', '1e8'],
      "--max-new-tokens <n>' argument '1e8' is invalid. must be an integer from 1 to 32768",
    ],
    [['generate', '--prompt', 'x', '--max-new-tokens', '1e8'], "--max-new-tokens <n>' argument '1e8' is invalid"],
    [['generate', '--prompt', 'x', '--num-samples', '0'], "--num-samples <g>' argument '0' is invalid"],
    [
      ['generate', '--prompt', 'x', '--top-p', '0'],
      "--top-p <p>' argument '0' is invalid. must be a number above 0 to 1",
    ],
    [['generate', '--prompt', 'x', '--temperature', '-1'], "--temperature <t>' argument '-1' is invalid"],
    [['generate', '--prompt', 'x', '--top-k', '-3'], "--top-k <k>' argument '-3' is invalid"],
  ])('refuses %j naming the flag', async (argv, message) => {
    expect(await parseError(argv)).toContain(message);
  });

  it('lets valid values through to the command (which then fails on the missing checkpoint)', async () => {
    expect(await parseError(['eval', '--examples', '5', '--max-new-tokens', '32768'])).toBe('');
  });
});

describe('runEvalCommand called from code', () => {
  it('refuses a count out of range naming the flag, before loading the checkpoint', async () => {
    const { runEvalCommand } = await import('./eval-command.js');
    const options = {
      model: '/nonexistent-model',
      task: 'addition',
      examples: 200,
      passAtK: 0,
      maxNewTokens: 8,
      seed: 0,
    };
    await expect(runEvalCommand({ ...options, examples: -5 })).rejects.toThrow(
      'grpo eval: --examples must be an integer from 1 to 100000, got -5',
    );
    await expect(runEvalCommand({ ...options, maxNewTokens: 1e8 })).rejects.toThrow(
      'grpo eval: --max-new-tokens must be an integer from 1 to 32768',
    );
  });
});
