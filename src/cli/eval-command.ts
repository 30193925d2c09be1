/**
 * `grpo eval`: held-out accuracy of a checkpoint on a built-in task, a dataset file or a recipe's
 * task (greedy pass@1, optional sampled pass@k, mean reward). With `--recipe`, the recipe's rewards
 * (its code rewards, else its config's) score and judge as in training. Is not: a general benchmark runner.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { taskRegistry } from '../data/index.js';
import type { Task } from '../data/task.js';
import type { NamedReward } from '../rewards/types.js';
import { loadRecipe } from './recipe-file.js';
import { dataFlagOverrides } from './train-command.js';
import { resolveStopTokenIds } from '../model/checkpoint.js';
import { loadAdapterFlag, loadModelFlag } from './model-commands.js';
import { checkTokenizerFitsModel, loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { buildRewards, evaluate, resolveConfig } from '../trainer/index.js';
import { promptFormatFor } from '../config/prompt-format.js';

export interface EvalCommandOptions {
  model: string;
  /** A PEFT LoRA adapter folder applied on top of `model`. */
  adapter?: string;
  /** A built-in task (default: the recipe's, else addition). */
  task?: string;
  /** A recipe file: its task and taskOptions (unless --task or --data), and its rewards. */
  recipe?: string;
  examples: number;
  passAtK: number;
  maxNewTokens: number;
  seed: number;
  json?: boolean;
  /** Options of the task (e.g. `{ dataDirectory }` for a task over data files). */
  taskOptions?: Record<string, unknown>;
  /** Evaluate on every row of a dataset file instead of a task's held-out split (needs `rewards`). */
  data?: string;
  promptColumn?: string;
  answerColumn?: string;
  systemPrompt?: string;
  /** `NAME[:WEIGHT][:{json options}]`; the first one decides correctness. */
  rewards?: string[];
  /** JSONL file the greedy completions are written to (prompt, completion, correct, reward, row). */
  output?: string;
  chatTemplate?: string;
}

/** Refuses a count outside [minimum, maximum] naming its flag (main.ts checks the same while parsing; this guards callers from code). */
function checkCount(flag: string, value: number, minimum: number, maximum: number): void {
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw new Error(`grpo eval: ${flag} must be an integer from ${minimum} to ${maximum}, got ${value}`);
  }
}

/**
 * The task and the rewards of an evaluation: --data's rows (every row held out), the recipe's task,
 * or a built-in one; scored by the recipe's rewards when it has any, else the task's.
 */
async function evalTaskAndRewards(options: EvalCommandOptions): Promise<{ task: Task; rewards: NamedReward[] }> {
  const recipe = options.recipe === undefined ? undefined : await loadRecipe(options.recipe);
  const recipeRewards = recipe?.rewards && recipe.rewards.length > 0 ? recipe.rewards : undefined;
  let task: Task;
  if (options.data) {
    const flags = {
      data: options.data,
      promptColumn: options.promptColumn,
      answerColumn: options.answerColumn,
      systemPrompt: options.systemPrompt,
      rewards: options.rewards,
    };
    // Every row of the file is held out: the same file is the "train" and the eval file.
    const taskOptions = dataFlagOverrides(flags, recipeRewards !== undefined).taskOptions as object;
    task = await taskRegistry.load('dataset', { ...taskOptions, evalFile: options.data }, { rewards: recipeRewards });
  } else if (recipe?.task && options.task === undefined) {
    task = recipe.task;
  } else {
    const name = options.task ?? (typeof recipe?.config.task === 'string' ? recipe.config.task : 'addition');
    const fromRecipe = options.task === undefined ? recipe?.config.taskOptions : undefined;
    const taskOptions = options.taskOptions ?? (fromRecipe as Record<string, unknown> | undefined) ?? {};
    task = await taskRegistry.load(name, taskOptions, { rewards: recipeRewards });
  }
  if (recipeRewards) return { task, rewards: recipeRewards };
  // A recipe's config may name rewards (with options); they are built as the trainer builds them.
  if (recipe && Array.isArray(recipe.config.rewards) && recipe.config.rewards.length > 0)
    return {
      task,
      rewards: buildRewards(resolveConfig({ ...recipe.config, task: task.name }, [task.name], task), task),
    };
  return { task, rewards: task.rewards() };
}

export async function runEvalCommand(options: EvalCommandOptions): Promise<number> {
  // Zero examples would report an accuracy of 0/0 = NaN and exit 0.
  checkCount('--examples', options.examples, 1, 100_000);
  checkCount('--pass-at-k', options.passAtK, 0, 1024);
  checkCount('--max-new-tokens', options.maxNewTokens, 1, 32768);
  const { task, rewards } = await evalTaskAndRewards(options);
  const checkpoint = loadModelFlag(options.model);
  const tokenizer = loadTokenizer(options.model);
  checkTokenizerFitsModel(tokenizer, checkpoint.config, options.model);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  if (options.adapter !== undefined) model.attachAdapters(loadAdapterFlag(options.adapter, checkpoint.config));
  // The held-out split is drawn with the training seed + 1, as the trainer does.
  const examples = task.evalExamples(options.examples, options.seed + 1);
  const output =
    options.output ??
    join('runs', `eval-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}.jsonl`);
  mkdirSync(dirname(resolve(output)), { recursive: true });
  writeFileSync(output, '');
  const result = await evaluate(
    model,
    promptFormatFor(options.chatTemplate ?? 'auto', tokenizer),
    task,
    examples,
    rewards,
    {
      maxNewTokens: options.maxNewTokens,
      stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
      passAtK: options.passAtK,
      temperature: 1,
      seed: options.seed,
      onCompletion: (record) => appendFileSync(output, `${JSON.stringify(record)}\n`),
      onCheckError: (message) =>
        process.stderr.write(
          `grpo eval: the correctness check failed: ${message} (that answer counts as not correct; counted in eval/checkErrors)\n`,
        ),
    },
  );
  process.stderr.write(`grpo eval: ${examples.length} completions written to ${output}\n`);
  if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    for (const [name, value] of Object.entries(result))
      process.stdout.write(`${name}: ${(value as number).toFixed(4)}\n`);
  return 0;
}
