/**
 * `GRPOTrainer` and `SFTTrainer`: training from code in the shape TRL users know —
 * `new GRPOTrainer({ model, rewardFunctions, trainDataset, config })`, `await trainer.train()`,
 * `await trainer.evaluate()`, and callbacks (`onStep` may stop the run).
 *
 * Built on the same pieces as `grpo train`: a dataset task over the rows (`datasetTask`), the
 * config resolved by `resolveConfig`, the run built by `createRunContext`, the loop in `train()`.
 * Reward functions are ours (per completion, a plain function), a group reward, a `NamedReward`
 * (to give a weight), or TRL-shaped batched functions marked with `batchedReward(fn)`.
 *
 * Is not: a second loop or config system. Defaults are the CLI's: with `model`, TRL's for the settings
 * we share (checkpoint-defaults.ts), else the config schema's (docs/coming-from-trl.md lists both);
 * everything here is what the CLI does for a run.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DataOptions } from '../data/examples.js';
import { toExample } from '../data/examples.js';
import { datasetTask, loadExamples, rewardPasses, splitExamples } from '../data/dataset-task.js';
import type { Example, Task } from '../data/task.js';
import type { AnyReward, NamedReward } from '../rewards/types.js';
import type { TrainerConfigInput } from '../config/config.js';
import { evaluateRun, type EvaluationResult } from './evaluate.js';
import { mergeConfig } from '../config/presets.js';
import { writeJsonAtomically } from '../run/run-folder.js';
import { createRunContext, resolveConfig, type RunContext } from './setup.js';
import { train, type StepRecord, type StepVerdict, type TrainResult } from './trainer.js';

/** A reward as a trainer takes it: a function or reward object (named after the function), or a `NamedReward`. */
export type RewardFunction = AnyReward | NamedReward;

/** Rows in memory (each a dataset row: `prompt` or `messages`, `answer`, any columns), or a data file path. */
export type DatasetInput = readonly Record<string, unknown>[] | string;

/** Hooks into the run; each may be async (the run waits for it). */
export interface TrainerCallbacks {
  /** After every step with its metrics (`step`, `phase`, `reward/mean`, `loss/total`, …); `false` or `'stop'` ends training there. */
  onStep?: (metrics: StepRecord) => StepVerdict | Promise<StepVerdict>;
  /** After every held-out evaluation (`eval/accuracy`, `eval/meanReward`, `step`). */
  onEvaluate?: (metrics: EvaluationResult & { step: number }) => void | Promise<void>;
  /** After every saved checkpoint, with its folder (a Hugging Face model folder). */
  onCheckpoint?: (path: string) => void | Promise<void>;
}

/** Column mapping and split settings of the datasets (the `DataOptions` of `--data`, without files and rewards). */
export type TrainerDataOptions = Pick<
  DataOptions,
  | 'promptColumn'
  | 'answerColumn'
  | 'completionColumn'
  | 'imageColumn'
  | 'systemPrompt'
  | 'promptTemplate'
  | 'evalFraction'
  | 'splitSeed'
  | 'format'
  | 'maxRows'
>;

export interface TrainerOptions {
  /**
   * A Hugging Face checkpoint folder (the defaults are then TRL's, docs/coming-from-trl.md#defaults);
   * left out, a small model is built from scratch with a character tokenizer.
   */
  model?: string;
  /** Rows or a data file (.jsonl/.json/.csv/.tsv/.parquet, TRL's formats). */
  trainDataset: DatasetInput;
  /** Held-out rows or file; left out, `dataOptions.evalFraction` (default 0.1) of the training rows is held out. */
  evalDataset?: DatasetInput;
  /**
   * Our config, nested as in docs/configuration.md (`{ grpo: { steps: 50 }, sampling: { groupSize: 8 } }`);
   * typed, so a misspelt or TRL-named field is a compile error (and still refused at run time).
   */
  config?: TrainerConfigInput;
  dataOptions?: TrainerDataOptions;
  /** Whether a completion solves a row (eval accuracy); default: the first reward scores it at least 1 (SFT without rewards: it equals the demonstration). */
  isCorrect?: (example: Example, completion: string) => boolean | Promise<boolean>;
  /** The run folder; default `<logging.runsDirectory>/<logging.runName or a time stamp>`. */
  runDirectory?: string;
  callbacks?: TrainerCallbacks;
  /** No progress output. */
  quiet?: boolean;
  /** Aborting stops the run at the next step boundary (`train()` then throws RunInterrupted). */
  signal?: AbortSignal;
}

export interface GRPOTrainerOptions extends TrainerOptions {
  /** The rewards: at least one. Per-completion functions, `batchedReward(fn)` for TRL-shaped ones, or `{ name, reward, weight }`. */
  rewardFunctions: readonly RewardFunction[];
}

export interface SFTTrainerOptions extends TrainerOptions {
  /** Rewards only scored at evaluation (optional): SFT trains on the rows' completions (or answers). */
  rewardFunctions?: readonly RewardFunction[];
}

const isNamedReward = (entry: RewardFunction): entry is NamedReward =>
  typeof entry === 'object' && 'reward' in entry && 'name' in entry;

/** The rewards named after their functions (`reward-<i>` when anonymous); a repeated name gets a suffix. */
function namedRewards(entries: readonly RewardFunction[]): NamedReward[] {
  const taken = new Set<string>();
  return entries.map((entry, index) => {
    const named = isNamedReward(entry)
      ? entry
      : { name: (entry as { name?: string }).name || `reward-${index}`, reward: entry, weight: 1 };
    let name = named.name;
    for (let suffix = 2; taken.has(name); suffix++) name = `${named.name}-${suffix}`;
    taken.add(name);
    return { ...named, name };
  });
}

/** Rows or a file as Examples; errors name the option (`trainDataset`/`evalDataset`) that gave them. */
async function examplesOf(input: DatasetInput, option: string, data: TrainerDataOptions): Promise<Example[]> {
  if (typeof input === 'string') {
    try {
      return await loadExamples(resolve(input), data);
    } catch (error) {
      throw new Error(`${option} ${input}: ${(error as Error).message}`);
    }
  }
  if (!Array.isArray(input)) throw new Error(`${option}: expected an array of rows or a file path`);
  return input.map((fields, index) =>
    toExample({ fields: { ...fields }, source: `${option} row ${index + 1}` }, data, process.cwd()),
  );
}

/** The task over the datasets, scored by `rewards`; correctness as `TrainerOptions.isCorrect` says. */
async function trainerTask(options: TrainerOptions, rewards: NamedReward[]): Promise<Task> {
  const data = options.dataOptions ?? {};
  const all = await examplesOf(options.trainDataset, 'trainDataset', data);
  const { train: trainRows, eval: held } = options.evalDataset
    ? { train: all, eval: await examplesOf(options.evalDataset, 'evalDataset', data) }
    : splitExamples(all, data.evalFraction ?? 0.1, data.splitSeed ?? 0);
  const first = rewards[0];
  const demonstrationOf = (example: Example) => String(example.completion ?? example.answer ?? '');
  const isCorrect =
    options.isCorrect ??
    (first
      ? (example: Example, completion: string) => rewardPasses(first.reward, example, completion)
      : (example: Example, completion: string) => completion.trim() === demonstrationOf(example).trim());
  return datasetTask({
    name: 'trainer-dataset',
    description: typeof options.trainDataset === 'string' ? `rows of ${options.trainDataset}` : 'rows given in code',
    train: trainRows,
    eval: held,
    rewards: () => rewards,
    isCorrect,
  });
}

/** What GRPOTrainer and SFTTrainer share: building the run once, training it, evaluating it. */
class Trainer {
  private context: Promise<RunContext> | null = null;
  private runDirectory: string | null = null;

  protected constructor(
    private readonly options: TrainerOptions,
    private readonly rewards: NamedReward[],
    /** SFT only: GRPO steps forced to 0. */
    private readonly sftOnly: boolean,
  ) {}

  /** The resolved run: config validated, data read, model loaded (once; `train` and `evaluate` share it). */
  prepare(): Promise<RunContext> {
    this.context ??= (async () => {
      const task = await trainerTask(this.options, this.rewards);
      let raw = mergeConfig((this.options.config ?? {}) as Record<string, unknown>, { task: task.name });
      if (this.sftOnly) raw = mergeConfig(raw, { grpo: { steps: 0 } });
      if (this.options.model !== undefined) raw = mergeConfig(raw, { model: { checkpoint: this.options.model } });
      const config = resolveConfig(raw, [task.name], task);
      if (this.sftOnly && config.sft.steps === 0)
        throw new Error(
          'SFTTrainer: config.sft.steps is 0, so there is nothing to train; set e.g. { sft: { steps: 100 } }',
        );
      return createRunContext(config, { task, rewards: this.rewards });
    })();
    return this.context;
  }

  /** Trains (SFT, then GRPO, as the config says) in a new run folder and returns the run summary. */
  async train(): Promise<TrainResult> {
    const context = await this.prepare();
    const { config } = context;
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    const runDirectory = resolve(
      this.options.runDirectory ??
        join(config.logging.runsDirectory, config.logging.runName ?? `${stamp}-${this.constructor.name}`),
    );
    mkdirSync(runDirectory, { recursive: true });
    writeJsonAtomically(join(runDirectory, 'config.json'), config);
    this.runDirectory = runDirectory;
    const { callbacks = {} } = this.options;
    return train(context, {
      runDirectory,
      quiet: this.options.quiet,
      signal: this.options.signal,
      onStep: callbacks.onStep,
      onEvaluate: callbacks.onEvaluate,
      onCheckpoint: callbacks.onCheckpoint,
    });
  }

  /** Held-out accuracy and mean reward of the model as it is now (before or after `train`). */
  async evaluate(): Promise<EvaluationResult> {
    const result = await evaluateRun(await this.prepare());
    await this.options.callbacks?.onEvaluate?.({ step: -1, ...result });
    return result;
  }

  /** The run folder of the last `train()`, or null before it. */
  get outputDirectory(): string | null {
    return this.runDirectory;
  }
}

/**
 * GRPO from code, shaped like TRL's `GRPOTrainer`.
 *
 * @example
 * ```ts
 * const trainer = new GRPOTrainer({
 *   model: 'models/Qwen2.5-0.5B-Instruct',
 *   rewardFunctions: [batchedReward(({ completions }) => completions.map((c) => (c.includes('42') ? 1 : 0)))],
 *   trainDataset: 'train.jsonl',
 *   config: { grpo: { steps: 50 } },
 *   callbacks: { onStep: (m) => console.log(m.step, m['reward/mean']) },
 * });
 * const summary = await trainer.train(); // { runDirectory, steps, evalBefore, evalAfter }
 * ```
 */
export class GRPOTrainer extends Trainer {
  constructor(options: GRPOTrainerOptions) {
    if (!Array.isArray(options.rewardFunctions) || options.rewardFunctions.length === 0)
      throw new Error(
        'GRPOTrainer: rewardFunctions needs at least one reward (a function, batchedReward(fn) or { name, reward, weight })',
      );
    super(options, namedRewards(options.rewardFunctions), false);
  }
}

/** Supervised fine-tuning only (the SFT phase: completion-only cross-entropy on the rows' completions). */
export class SFTTrainer extends Trainer {
  constructor(options: SFTTrainerOptions) {
    super(options, namedRewards(options.rewardFunctions ?? []), true);
  }
}
