/**
 * `grpo reward NAME --input FILE.jsonl [--options JSON]`: scores each row of a JSONL file with a
 * built-in reward and prints one JSON line per row, `{"line": n, "score": x}` (null = not
 * applicable) or `{"line": n, "error": "..."}`, so anyone can try a reward on their own data.
 *
 * Rows look like `{"completion": "...", "answer": "..."}`; every field is a dataset column.
 * Optional fields: `prompt` (string or chat messages), `completion_ids` (token ids), and `group`
 * (consecutive rows with the same value form one group, for group rewards such as BLEU).
 * Exit code: 0 when every row scored, 1 when a row failed or the file cannot be read, 2 for a bad
 * reward name or bad options. The input must be a regular file of at most MAX_INPUT_BYTES whose
 * lines are at most MAX_LINE_CHARACTERS (a longer line is that row's error): `--input /dev/zero`
 * used to read until the process aborted. Not here: argument parsing (cli/main.ts).
 */
import { readFileSync, statSync } from 'node:fs';
import { createReward, scoreRewards, type Reward, type RewardInput } from '../rewards/index.js';

/** Where the command writes; the CLI passes process streams, tests pass collectors. */
export interface RewardCommandOutput {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

const processOutput: RewardCommandOutput = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

/** Largest --input file read; JSONL of completions is far smaller, and reading is all in memory. */
export const MAX_INPUT_BYTES = 256 * 1024 * 1024;
/** Longest row; a longer one is reported as that row's error without being parsed. */
export const MAX_LINE_CHARACTERS = 4 * 1024 * 1024;

/** One parsed input line: a reward input, or the reason it is not one. */
type ParsedLine = { line: number; input: RewardInput; group: unknown } | { line: number; error: string };

function parseLine(text: string, line: number): ParsedLine {
  if (text.length > MAX_LINE_CHARACTERS)
    return { line, error: `line is ${text.length} characters, over the limit of ${MAX_LINE_CHARACTERS}` };
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch (error) {
    return { line, error: `not valid JSON: ${(error as Error).message}` };
  }
  if (typeof row !== 'object' || row === null || Array.isArray(row))
    return { line, error: 'a row must be a JSON object' };
  const fields = row as Record<string, unknown>;
  if (typeof fields.completion !== 'string') return { line, error: 'field "completion" must be a string' };
  const ids = fields.completion_ids ?? [];
  if (!Array.isArray(ids) || !ids.every((id) => Number.isInteger(id)))
    return { line, error: 'field "completion_ids" must be an array of integers' };
  const prompt = fields.prompt ?? '';
  if (typeof prompt !== 'string' && !Array.isArray(prompt))
    return { line, error: 'field "prompt" must be a string or a list of chat messages' };
  const input: RewardInput = {
    prompt: prompt as RewardInput['prompt'],
    completion: fields.completion,
    completionIds: ids as number[],
    row: fields,
    group: [],
    indexInGroup: 0,
    step: 0,
  };
  return { line, input, group: fields.group };
}

/** Consecutive rows with equal `group` values form one group; rows without one stand alone. */
function groupRows(rows: Array<{ line: number; input: RewardInput; group: unknown }>): Array<typeof rows> {
  const groups: Array<typeof rows> = [];
  for (const row of rows) {
    const last = groups[groups.length - 1];
    if (last && row.group !== undefined && JSON.stringify(last[0]!.group) === JSON.stringify(row.group)) last.push(row);
    else groups.push([row]);
  }
  for (const group of groups) {
    const completions = group.map((row) => row.input.completion);
    group.forEach((row, index) => Object.assign(row.input, { group: completions, indexInGroup: index }));
  }
  return groups;
}

/** The text of a regular file of at most MAX_INPUT_BYTES; a device, FIFO or folder would never end or is not text. */
function readInput(path: string): string {
  const info = statSync(path);
  if (!info.isFile())
    throw new Error('it is not a regular file (a device, FIFO, socket or folder cannot be read as JSONL)');
  if (info.size > MAX_INPUT_BYTES) throw new Error(`it is ${info.size} bytes, over the limit of ${MAX_INPUT_BYTES}`);
  return readFileSync(path, 'utf8');
}

/** Runs `grpo reward`; returns the exit code. */
export async function runRewardCommand(
  options: { name: string; input: string; options?: string },
  output: RewardCommandOutput = processOutput,
): Promise<number> {
  let reward: Reward;
  try {
    const parsedOptions: unknown = options.options === undefined ? {} : JSON.parse(options.options);
    reward = createReward(options.name, parsedOptions);
  } catch (error) {
    const message =
      error instanceof SyntaxError ? `--options is not valid JSON: ${error.message}` : (error as Error).message;
    output.stderr(`grpo reward: ${message}`);
    return 2;
  }
  let text: string;
  try {
    text = readInput(options.input);
  } catch (error) {
    output.stderr(`grpo reward: cannot read --input ${options.input}: ${(error as Error).message}`);
    return 1;
  }
  const parsed = text
    .split('\n')
    .map((line, index) => ({ line, number: index + 1 }))
    .filter(({ line }) => line.trim() !== '')
    .map(({ line, number }) => parseLine(line, number));
  const valid = parsed.filter((row): row is Extract<ParsedLine, { input: RewardInput }> => 'input' in row);
  const groups = groupRows(valid);
  const matrix = await scoreRewards(
    [{ name: options.name, reward, weight: 1 }],
    groups.map((group) => group.map((row) => row.input)),
    { timeoutMs: 120_000, concurrency: 4 },
  );
  const results = new Map<number, string>();
  valid.forEach((row, sample) => {
    const failure = matrix.failures.find((entry) => entry.sample === sample);
    const score = matrix.status[sample] === 'ok' ? matrix.scores[sample]! : null;
    results.set(
      row.line,
      JSON.stringify(failure ? { line: row.line, error: failure.message } : { line: row.line, score }),
    );
  });
  for (const row of parsed)
    if ('error' in row) results.set(row.line, JSON.stringify({ line: row.line, error: row.error }));
  for (const row of parsed) output.stdout(results.get(row.line)!);
  const errors = parsed.length - valid.length + matrix.failures.length;
  output.stderr(`grpo reward ${options.name}: ${parsed.length} rows, ${errors} errors`);
  return errors === 0 ? 0 : 1;
}
