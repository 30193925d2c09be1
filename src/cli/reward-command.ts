/**
 * `grpo reward NAME --input FILE.jsonl [--options JSON]`: scores each row of a JSONL file with a
 * built-in reward and prints one JSON line per row, `{"line": n, "score": x}` (null = not
 * applicable) or `{"line": n, "error": "..."}`, so anyone can try a reward on their own data.
 * `grpo reward [NAME] --recipe FILE --input FILE.jsonl`: the recipe's rewards (its code rewards,
 * else its config's), NAME picking one; with several, each row also gets `"scores"` by name and
 * `"score"` is their weighted sum at step 0, as the trainer combines them.
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
import {
  columnsOfReward,
  createReward,
  describeMissingColumn,
  missingRewardColumns,
  scoreRewards,
  weightedSum,
  weightsAt,
  type NamedReward,
  type RewardInput,
} from '../rewards/index.js';
import { loadRecipe } from './recipe-file.js';

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
  const logprobs = fields.policy_logprobs;
  if (
    logprobs !== undefined &&
    (!Array.isArray(logprobs) ||
      !logprobs.every((value) => value === null || Number.isFinite(value)) ||
      logprobs.length !== (ids as unknown[]).length)
  )
    return {
      line,
      error:
        'field "policy_logprobs" must be an array of numbers (null: a token the policy did not produce), one per completion id',
    };
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
    policyLogprobs: logprobs?.map((value: number | null) => value ?? Number.NaN),
  };
  return { line, input, group: fields.group };
}

/** A row without a column the rewards read is that row's error, worded as `grpo train` refuses it. */
function withColumns(parsed: ParsedLine, rewards: readonly NamedReward[]): ParsedLine {
  if (!('input' in parsed)) return parsed;
  const missing = missingRewardColumns(rewards, [parsed.input.row]);
  if (missing.length === 0) return parsed;
  return { line: parsed.line, error: missing.map((entry) => describeMissingColumn(entry, 'this row')).join('; ') };
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

/** The rewards a recipe brings: its code rewards, else its config's by name (with options and weights). */
async function recipeRewards(file: string): Promise<NamedReward[]> {
  const recipe = await loadRecipe(file);
  if (recipe.rewards && recipe.rewards.length > 0) return recipe.rewards;
  const entries = Array.isArray(recipe.config.rewards) ? recipe.config.rewards : [];
  if (entries.length === 0)
    throw new Error(`--recipe ${file}: the recipe exports no rewards and its config names none (config.rewards)`);
  return entries.map((entry: { name: string; weight?: number; options?: unknown }) => ({
    name: entry.name,
    reward: createReward(entry.name, entry.options ?? {}),
    weight: entry.weight ?? 1,
    columns: columnsOfReward(entry.name, entry.options ?? {}),
  }));
}

/** The rewards the command scores with: NAME built with --options, or the recipe's (NAME picks one). */
async function commandRewards(options: RewardCommandOptions): Promise<NamedReward[]> {
  if (options.recipe === undefined) {
    if (options.name === undefined) throw new Error('name a reward (grpo list shows them) or give --recipe FILE');
    let parsedOptions: unknown;
    try {
      parsedOptions = options.options === undefined ? {} : JSON.parse(options.options);
    } catch (error) {
      throw new Error(`--options is not valid JSON: ${(error as Error).message}`);
    }
    const { name } = options;
    return [
      { name, reward: createReward(name, parsedOptions), weight: 1, columns: columnsOfReward(name, parsedOptions) },
    ];
  }
  if (options.options !== undefined)
    throw new Error("--options applies to a built-in reward by name; a recipe's rewards carry their own options");
  const rewards = await recipeRewards(options.recipe);
  if (options.name === undefined) return rewards;
  const picked = rewards.find((reward) => reward.name === options.name);
  if (!picked)
    throw new Error(
      `--recipe ${options.recipe} has no reward "${options.name}"; its rewards: ${rewards.map((reward) => reward.name).join(', ')}`,
    );
  return [{ ...picked, weight: 1 }];
}

/** What `grpo reward` takes: a reward NAME (with its JSON --options) or a --recipe, and the --input file. */
export interface RewardCommandOptions {
  name?: string;
  input: string;
  options?: string;
  recipe?: string;
}

/** Runs `grpo reward`; returns the exit code. */
export async function runRewardCommand(
  options: RewardCommandOptions,
  output: RewardCommandOutput = processOutput,
): Promise<number> {
  let rewards: NamedReward[];
  try {
    rewards = await commandRewards(options);
  } catch (error) {
    output.stderr(`grpo reward: ${(error as Error).message}`);
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
    .map(({ line, number }) => withColumns(parseLine(line, number), rewards));
  const valid = parsed.filter((row): row is Extract<ParsedLine, { input: RewardInput }> => 'input' in row);
  const groups = groupRows(valid);
  const matrix = await scoreRewards(
    rewards,
    groups.map((group) => group.map((row) => row.input)),
    { timeoutMs: 120_000, concurrency: 4 },
  );
  const combined = weightedSum(matrix, weightsAt(rewards, 0));
  const width = rewards.length;
  const results = new Map<number, string>();
  valid.forEach((row, sample) => {
    const failures = matrix.failures.filter((entry) => entry.sample === sample);
    const cell = (column: number) =>
      matrix.status[sample * width + column] === 'ok' ? matrix.scores[sample * width + column]! : null;
    if (failures.length > 0) {
      const error = failures.map((failure) => (width > 1 ? `${failure.reward}: ${failure.message}` : failure.message));
      results.set(row.line, JSON.stringify({ line: row.line, error: error.join('; ') }));
    } else if (width === 1) {
      results.set(row.line, JSON.stringify({ line: row.line, score: cell(0) }));
    } else {
      const score = Number.isFinite(combined.rewards[sample]) ? combined.rewards[sample] : null;
      const scores = Object.fromEntries(rewards.map((reward, column) => [reward.name, cell(column)]));
      results.set(row.line, JSON.stringify({ line: row.line, score, scores }));
    }
  });
  for (const row of parsed)
    if ('error' in row) results.set(row.line, JSON.stringify({ line: row.line, error: row.error }));
  for (const row of parsed) output.stdout(results.get(row.line)!);
  const errors = parsed.length - valid.length + new Set(matrix.failures.map((failure) => failure.sample)).size;
  const names = rewards.map((reward) => reward.name).join(', ');
  output.stderr(`grpo reward ${names}: ${parsed.length} rows, ${errors} errors`);
  return errors === 0 ? 0 : 1;
}
