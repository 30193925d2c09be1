/**
 * What the built-in tasks over real data files (gsm8k, math500, countdown, game24, mbpp, humaneval)
 * share: their common options (where the data is, the held-out split, plain or R1-style answers),
 * loading and preparing the rows, and the R1 format reward.
 *
 * Why one helper: each task file then says only what is its own — columns, prompt, system
 * prompts, rewards, correctness and the gold demonstration.
 *
 * Is not: a task itself, or the generic column-mapped dataset task (`dataset-task.ts`).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { tagFormat } from '../../rewards/format.js';
import type { NamedReward } from '../../rewards/types.js';
import { datasetTask, loadExamples, splitExamples } from '../dataset-task.js';
import type { ColumnOptions } from '../examples.js';
import type { Example, Task } from '../task.js';

/** Options every file-backed built-in task accepts (its config `taskOptions`). */
export const fileTaskOptionsShape = {
  /** Folder holding the data sets in the layout of `../shared/data` (default `data`, from the working directory). */
  dataDirectory: z.string().min(1).optional(),
  /** A file to train on instead of the task's default file (same columns). */
  trainFile: z.string().min(1).optional(),
  /** A held-out file; without it `evalFraction` of the training rows is held out. */
  evalFile: z.string().min(1).optional(),
  /** Fraction held out when there is no eval file (default 0.1). */
  evalFraction: z.number().gt(0).lt(1).optional(),
  /** Seed of the held-out split (default 0). */
  splitSeed: z.number().int().optional(),
  /** Reads only the first rows (quick runs). */
  maxRows: z.number().int().positive().optional(),
  /** `plain` (default) or `think`: reason in <think>…</think>, answer in <answer>…</answer> (DeepSeek-R1), with a format reward. */
  style: z.enum(['plain', 'think']).optional(),
  /** Replaces the task's default system prompt. */
  systemPrompt: z.string().optional(),
};

export type FileTaskOptions = z.infer<z.ZodObject<typeof fileTaskOptionsShape>>;
export type AnswerStyle = 'plain' | 'think';

/** What a built-in file task defines; the rest is shared. */
export interface FileTaskSpec {
  name: string;
  description: string;
  /** The default data file, relative to `dataDirectory`. */
  file: string;
  columns: ColumnOptions;
  /** Derives the columns rewards read (numbers, target, tests…); null drops the row (e.g. an unsolvable puzzle). */
  prepare?: (example: Example) => Example | null;
  /** The default system prompt for each answer style. */
  systemPrompt: Record<AnswerStyle, string>;
  /** The task's rewards (the R1 format reward is added for `think`). */
  rewards: () => NamedReward[];
  isCorrect: Task['isCorrect'];
  /** The gold solution in a style: reasoning (may be empty) and the final answer as the task's reward reads it. */
  solution: (example: Example, style: AnswerStyle) => { reasoning: string; answer: string };
  recommendedConfig?: Record<string, unknown>;
}

/** The R1 instruction appended to a task's plain system prompt. */
export const THINK_INSTRUCTION =
  'First think step by step inside <think> </think>, then give only the final answer inside <answer> </answer>.';

/** A gold solution written in the chosen style. */
function writeSolution({ reasoning, answer }: { reasoning: string; answer: string }, style: AnswerStyle): string {
  if (style === 'think') return `<think>\n${reasoning.trim()}\n</think>\n<answer>\n${answer}\n</answer>`;
  return reasoning.trim() ? `${reasoning.trim()}\n${answer}` : answer;
}

/** Loads a built-in task's rows (validated options, seeded split) and builds the Task. */
export async function loadFileTask(spec: FileTaskSpec, options: FileTaskOptions): Promise<Task> {
  const style = options.style ?? 'plain';
  const columns = { ...spec.columns, systemPrompt: options.systemPrompt ?? spec.systemPrompt[style] };
  const read = async (path: string) => {
    const examples = await loadExamples(path, { ...columns, maxRows: options.maxRows });
    return examples
      .map((example) => (spec.prepare ? spec.prepare(example) : example))
      .filter((example): example is Example => example !== null);
  };
  const trainFile = options.trainFile ?? join(options.dataDirectory ?? 'data', spec.file);
  if (!existsSync(trainFile)) {
    throw new Error(
      options.trainFile
        ? `taskOptions.trainFile: ${trainFile} does not exist`
        : `taskOptions.dataDirectory: task "${spec.name}" reads ${spec.file} from ${options.dataDirectory ?? 'data'} (resolved ${resolve(trainFile)}), which does not exist; set taskOptions.dataDirectory to the folder holding ${spec.file} (e.g. ../shared/data) or taskOptions.trainFile`,
    );
  }
  if (options.evalFile && !existsSync(options.evalFile))
    throw new Error(`taskOptions.evalFile: ${options.evalFile} does not exist`);
  const all = await read(trainFile);
  const { train, eval: held } = options.evalFile
    ? { train: all, eval: await read(options.evalFile) }
    : splitExamples(all, options.evalFraction ?? 0.1, options.splitSeed ?? 0);
  const format: NamedReward = { name: 'format', reward: tagFormat({ tags: ['think', 'answer'] }), weight: 0.2 };
  return datasetTask({
    name: spec.name,
    description: spec.description,
    train,
    eval: held,
    rewards: () => (style === 'think' ? [...spec.rewards(), format] : spec.rewards()),
    isCorrect: spec.isCorrect,
    demonstration: (example) => writeSolution(spec.solution(example, style), style),
    recommendedConfig: spec.recommendedConfig,
  });
}
