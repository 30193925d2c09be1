/**
 * `grpo eval`: held-out accuracy of a checkpoint on a built-in task (greedy pass@1, optional
 * sampled pass@k, mean task reward). Is not: a general benchmark runner.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { taskRegistry } from '../data/index.js';
import { dataFlagOverrides } from './train-command.js';
import { loadAdapter } from '../model/adapter-files.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { checkTokenizerFitsModel, loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { evaluate } from '../trainer/index.js';
import { promptFormatFor } from '../trainer/prompt-format.js';

export interface EvalCommandOptions {
  model: string;
  /** A PEFT LoRA adapter folder applied on top of `model`. */
  adapter?: string;
  task: string;
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
  /** `NAME[:WEIGHT]`; the first one decides correctness. */
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

export async function runEvalCommand(options: EvalCommandOptions): Promise<number> {
  // Zero examples would report an accuracy of 0/0 = NaN and exit 0.
  checkCount('--examples', options.examples, 1, 100_000);
  checkCount('--pass-at-k', options.passAtK, 0, 1024);
  checkCount('--max-new-tokens', options.maxNewTokens, 1, 32768);
  const task = options.data
    ? // Every row of the file is held out: the same file is the "train" and the eval file.
      await taskRegistry.load('dataset', {
        ...(dataFlagOverrides({
          data: options.data,
          promptColumn: options.promptColumn,
          answerColumn: options.answerColumn,
          systemPrompt: options.systemPrompt,
          rewards: options.rewards,
        }).taskOptions as object),
        evalFile: options.data,
      })
    : await taskRegistry.load(options.task, options.taskOptions ?? {});
  const checkpoint = loadCheckpoint(options.model);
  const tokenizer = loadTokenizer(options.model);
  checkTokenizerFitsModel(tokenizer, checkpoint.config, options.model);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  if (options.adapter !== undefined) model.attachAdapters(loadAdapter(options.adapter, checkpoint.config));
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
    task.rewards(),
    {
      maxNewTokens: options.maxNewTokens,
      stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
      passAtK: options.passAtK,
      temperature: 1,
      seed: options.seed,
      onCompletion: (record) => appendFileSync(output, `${JSON.stringify(record)}\n`),
    },
  );
  process.stderr.write(`grpo eval: ${examples.length} completions written to ${output}\n`);
  if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    for (const [name, value] of Object.entries(result))
      process.stdout.write(`${name}: ${(value as number).toFixed(4)}\n`);
  return 0;
}
