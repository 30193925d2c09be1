/**
 * A `Task` over dataset rows: a deterministic held-out split (a file of its own, or a seeded
 * fraction of the training rows), seeded draws of train and held-out examples, rewards by name from
 * the reward factories, and a correctness check.
 *
 * Why load everything first: `Task.trainExamples` is synchronous and draws from all rows, so the
 * rows are read (streamed) once into Examples; the file text itself is never held whole.
 *
 * Is not: a file reader (`readers.ts`) or the column mapping (`examples.ts`).
 */
import { existsSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { rewardFactories } from '../rewards/factories.js';
import { scoreOne } from '../rewards/run.js';
import { makeRewardInput, type AnyReward, type NamedReward } from '../rewards/types.js';
import { dataOptionsSchema, toExample, type ColumnOptions, type DataOptions } from './examples.js';
import { readRowList, type ReadOptions } from './readers.js';
import { parseTaskOptions, type Example, type Task } from './task.js';

/** What {@link datasetTask} needs besides the examples. */
export interface DatasetTaskSpec {
  name: string;
  description: string;
  train: Example[];
  eval: Example[];
  rewards: () => NamedReward[];
  isCorrect: Task['isCorrect'];
  /** The gold completion for SFT (default: the example's `completion`, else its `answer`). */
  demonstration?: (example: Example) => string;
  recommendedConfig?: Record<string, unknown>;
}

/** A seeded generator of uniform numbers in [0, 1) (mulberry32), for splits and draws. */
function seededRandom(seed: number): () => number {
  let state = (seed * 2654435761 + 0x9e3779b9) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Splits rows into disjoint train and held-out parts: `fraction` of them (at least one) held out, the same for a seed. */
export function splitExamples(
  examples: readonly Example[],
  fraction: number,
  seed: number,
): { train: Example[]; eval: Example[] } {
  if (examples.length < 2)
    throw new Error(`cannot hold out a fraction of ${examples.length} row(s); give an eval file or more rows`);
  const order = shuffled(examples, seededRandom(seed));
  const heldOut = Math.min(examples.length - 1, Math.max(1, Math.round(examples.length * fraction)));
  return { eval: order.slice(0, heldOut), train: order.slice(heldOut) };
}

/** `count` examples drawn for a seed: a seeded permutation, repeated (reshuffled) when count exceeds the pool. */
function draw(pool: readonly Example[], count: number, seed: number, stream: number): Example[] {
  if (pool.length === 0) throw new Error('the dataset has no examples to draw from');
  const random = seededRandom(seed * 2 + stream);
  const result: Example[] = [];
  while (result.length < count) result.push(...shuffled(pool, random).slice(0, count - result.length));
  return result;
}

function defaultDemonstration(example: Example): string {
  if (typeof example.completion === 'string') return example.completion;
  if (typeof example.answer === 'string') return example.answer;
  throw new Error('this dataset has no completion or answer column to use as an SFT demonstration');
}

/** Every character of the prompts, system prompts and demonstrations (a char tokenizer's vocabulary). */
function alphabetOf(examples: readonly Example[], demonstration: (example: Example) => string): string {
  const characters = new Set<string>();
  const add = (text: string) => {
    for (const character of text) characters.add(character);
  };
  for (const example of examples) {
    if (typeof example.prompt === 'string') add(example.prompt);
    else for (const message of example.prompt) add(message.content);
    if (typeof example.system === 'string') add(example.system);
    try {
      add(demonstration(example));
    } catch (error) {
      // Only a model made from scratch reads the alphabet: say what it needs, and the other way.
      throw new Error(
        `${(error as Error).message}: a model made from scratch (no --model) takes its character vocabulary from the prompts and the demonstrations; add a completion or answer column, or train a checkpoint with --model DIR`,
      );
    }
  }
  return [...characters].sort().join('');
}

/** A Task over already-loaded train and held-out examples. */
export function datasetTask(spec: DatasetTaskSpec): Task {
  const demonstration = spec.demonstration ?? defaultDemonstration;
  let alphabet: string | undefined;
  return {
    name: spec.name,
    description: spec.description,
    // Computed on first use: it runs every demonstration once.
    get alphabet() {
      alphabet ??= alphabetOf([...spec.train, ...spec.eval], demonstration);
      return alphabet;
    },
    trainExamples: (count, seed) => draw(spec.train, count, seed, 0),
    evalExamples: (count, seed) => draw(spec.eval, Math.min(count, spec.eval.length), seed, 1),
    demonstration: (example) => demonstration(example),
    rewards: spec.rewards,
    isCorrect: spec.isCorrect,
    recommendedConfig: spec.recommendedConfig,
  };
}

/** Reads a file's rows and maps them to Examples. */
export async function loadExamples(
  path: string,
  options: ReadOptions & ColumnOptions & { maxRows?: number } = {},
): Promise<Example[]> {
  const rows = await readRowList(path, {
    format: options.format,
    gzip: options.gzip,
    count: options.maxRows,
    maxRowBytes: options.maxRowBytes,
    maxTotalBytes: options.maxTotalBytes,
    parquetTimeoutMs: options.parquetTimeoutMs,
  });
  if (rows.length === 0) throw new Error(`${basename(path)}: no rows (the file is empty, or holds only a header)`);
  return rows.map((row) => toExample(row, options, dirname(path)));
}

/** 1 when `reward` scores the completion at least `threshold`; group and batch rewards see a list of one. */
export async function rewardPasses(
  reward: AnyReward,
  example: Example,
  completion: string,
  threshold = 1,
): Promise<boolean> {
  const input = makeRewardInput({ prompt: example.prompt, completion, row: example });
  const score = await scoreOne(reward, input);
  return typeof score === 'number' && score >= threshold;
}

/**
 * A Task from dataset files and `DataOptions` (validated; errors name `taskOptions.<key>`).
 * `suppliedRewards`: a recipe's own rewards, which stand in when the options name none (the recipe's
 * rewards replace the task's in the run anyway; here they also decide correctness).
 */
export async function loadDatasetTask(
  options: unknown,
  name = 'dataset',
  suppliedRewards: readonly NamedReward[] = [],
): Promise<Task> {
  const data: DataOptions = parseTaskOptions(name, dataOptionsSchema, options);
  // Named by field and flag, not Node's bare ENOENT: the user typed one of the two.
  for (const [field, flag, file] of [
    ['trainFile', '--data', data.trainFile],
    ['evalFile', '--eval-data', data.evalFile],
  ] as const)
    if (file !== undefined && !existsSync(file))
      throw new Error(`invalid config:\n- taskOptions.${field} (${flag}): ${resolve(file)} does not exist`);
  const all = await loadExamples(data.trainFile, data);
  const { train, eval: held } = data.evalFile
    ? { train: all, eval: await loadExamples(data.evalFile, data) }
    : splitExamples(all, data.evalFraction ?? 0.1, data.splitSeed ?? 0);
  const rewards = (): NamedReward[] =>
    data.rewards.map(({ name: rewardName, weight, options: rewardOptions }) => ({
      name: rewardName,
      reward: rewardFactories.get(rewardName).create(rewardOptions ?? {}),
      weight: weight ?? 1,
      // What the run checks on its first rows before any model loads (rewards/row-columns.ts).
      columns: rewardFactories.get(rewardName).columns(rewardOptions ?? {}),
      needsToolCalls: rewardFactories.get(rewardName).needsToolCalls,
    }));
  if (data.rewards.length === 0 && suppliedRewards.length === 0)
    throw new Error(
      `invalid config:\n- taskOptions.rewards: task "${name}" needs a reward to train and judge with: name one (--reward NAME; grpo list shows them) or export rewards from a recipe`,
    );
  const judge =
    data.correctness ?? (data.rewards[0] ? { name: data.rewards[0].name, options: data.rewards[0].options } : null);
  const correctness = judge ? rewardFactories.get(judge.name).create(judge.options ?? {}) : suppliedRewards[0]!.reward;
  rewards(); // builds each reward once now, so an unknown name or bad options fail at load
  return datasetTask({
    name,
    description: `rows of ${data.trainFile}${data.evalFile ? `, held out: ${data.evalFile}` : ''}`,
    train,
    eval: held,
    rewards: data.rewards.length > 0 ? rewards : () => [...suppliedRewards],
    isCorrect: (example, completion) =>
      rewardPasses(correctness, example, completion, data.correctness?.threshold ?? 1),
  });
}
