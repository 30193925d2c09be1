/**
 * `grpo train [recipe]` and `grpo sft [recipe]`: load a recipe (TypeScript file exporting a config
 * and optionally reward functions, or a JSON/YAML config; recipe-file.ts reads it), apply CLI
 * overrides, validate everything before compute, pick the run folder (or resume one), and run the trainer.
 * Is not: the loop (src/trainer) — it only turns files and flags into a config.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import {
  createRunContext,
  loadRunTask,
  mergeConfig,
  resolveConfig,
  runRewards,
  RunInterrupted,
  train,
  type Recipe,
  type TrainerConfig,
} from '../trainer/index.js';
import { writeJsonAtomically } from '../run/run-folder.js';
import { getBackend } from '../tensor/index.js';
import { isFlowRecipe } from '../flow/recipe.js';
import { runFlowTrainCommand } from './train-flow.js';
import { rewardFactories, type NamedReward } from '../rewards/index.js';
import { closestName } from '../registry/closest-name.js';
import { isPlainObject, loadRecipe, readConfigFile, withRecipeTaskName } from './recipe-file.js';

/**
 * Applies `key.path=value` overrides in order (value parsed as JSON when it parses, else a string):
 * each one **replaces** the value at its path — an object value is not merged into what the recipe
 * had there (`--set flow.rl.rewards='{"thickness":1}'` leaves no other reward) — while the fields
 * beside the path are kept (`--set grpo.steps=5` leaves the rest of `grpo`).
 */
export function applyOverrides(
  config: Record<string, unknown>,
  assignments: readonly string[],
): Record<string, unknown> {
  let result = config;
  for (const assignment of assignments) {
    const equals = assignment.indexOf('=');
    if (equals <= 0) throw new Error(`--set ${assignment}: expected key.path=value`);
    const keys = assignment.slice(0, equals).split('.');
    const text = assignment.slice(equals + 1);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = text;
    }
    result = setPath(result, keys, value);
  }
  return result;
}

/** A copy of `config` with `value` at `keys` (parents that are not objects become objects). */
function setPath(config: Record<string, unknown>, keys: readonly string[], value: unknown): Record<string, unknown> {
  const [key, ...rest] = keys;
  if (rest.length === 0) return { ...config, [key]: value };
  const inner = config[key];
  const parent =
    typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {};
  return { ...config, [key]: setPath(parent, rest, value) };
}

/** The data and model flags: shorthands for config fields (each help text names its field). */
export interface DataFlags {
  model?: string;
  data?: string;
  evalData?: string;
  evalSplit?: number;
  promptColumn?: string;
  answerColumn?: string;
  systemPrompt?: string;
  promptTemplate?: string;
  /** `NAME`, `NAME:WEIGHT`, `NAME:{json options}` or `NAME:WEIGHT:{json options}`, repeatable. */
  rewards?: string[];
  chatTemplate?: string;
}

/** A reward flag as a config reward entry: its name, weight (default 1) and options (a JSON object). */
export interface RewardFlag {
  name: string;
  weight: number;
  options?: Record<string, unknown>;
}

/**
 * A reward flag `NAME[:WEIGHT][:{json options}]` as a config reward entry: one flag carries what
 * `rewards[]` (or `taskOptions.rewards[]`) holds. The options are everything after the colon that
 * starts the JSON object, so they may contain colons.
 */
export function rewardFlag(value: string): RewardFlag {
  const match = /^([a-z0-9][a-z0-9-]*)(?::(-?\d+(?:\.\d+)?(?:e-?\d+)?))?(?::(\{[\s\S]*))?$/i.exec(value.trim());
  if (!match)
    throw new Error(
      `--reward ${value}: expected NAME, NAME:WEIGHT or NAME:WEIGHT:{json options}, e.g. --reward math-answer:1 or --reward 'regex:0.5:{"pattern":"^A"}' (see grpo list)`,
    );
  const entry: RewardFlag = { name: match[1]!, weight: match[2] === undefined ? 1 : Number(match[2]) };
  if (match[3] === undefined) return entry;
  let options: unknown;
  try {
    options = JSON.parse(match[3]);
  } catch (error) {
    throw new Error(`--reward ${value}: the options are not valid JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(options)) throw new Error(`--reward ${value}: the options must be a JSON object`);
  return { ...entry, options };
}

/** Refuses a --reward name that is neither one of `known` nor a built-in reward, naming the flag. */
export function checkRewardFlagNames(flags: readonly string[] | undefined, known: readonly string[]): void {
  const all = [...new Set([...known, ...rewardFactories.names()])];
  for (const value of flags ?? []) {
    const { name } = rewardFlag(value);
    if (!all.includes(name)) {
      const near = closestName(name, all);
      throw new Error(
        `--reward ${value}: unknown reward "${name}"${near ? ` (did you mean "${near}"?)` : ''}; known: ${all.join(', ')}`,
      );
    }
  }
}

/**
 * The config fields the data and model flags stand for (see DataFlags; --set still wins over them).
 * `recipeHasRewards`: the recipe exports rewards, so --data needs no --reward.
 */
export function dataFlagOverrides(flags: DataFlags = {}, recipeHasRewards = false): Record<string, unknown> {
  const rewards = (flags.rewards ?? []).map(rewardFlag);
  const columns = {
    promptColumn: flags.promptColumn,
    answerColumn: flags.answerColumn,
    systemPrompt: flags.systemPrompt,
    promptTemplate: flags.promptTemplate,
    evalFile: flags.evalData,
    evalFraction: flags.evalSplit,
  };
  const taskOptions = Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
  const result: Record<string, unknown> = {};
  if (flags.model !== undefined) result.model = { checkpoint: flags.model };
  if (flags.chatTemplate !== undefined)
    result.model = { ...(result.model as object), chatTemplate: flags.chatTemplate };
  if (flags.data !== undefined) {
    if (rewards.length === 0 && !recipeHasRewards)
      throw new Error(
        '--data: name the rewards to train or score with, e.g. --reward math-answer (grpo list shows them), or give a recipe that exports rewards',
      );
    // Only names of built-in rewards reach a dataset task; a typo is refused here, naming the flag.
    checkRewardFlagNames(flags.rewards, []);
    result.task = 'dataset';
    result.taskOptions = { trainFile: flags.data, ...taskOptions, ...(rewards.length > 0 ? { rewards } : {}) };
  } else {
    const flagOf: Record<string, string> = {
      promptColumn: '--prompt-column',
      answerColumn: '--answer-column',
      systemPrompt: '--system-prompt',
      promptTemplate: '--prompt-template',
      evalFile: '--eval-data',
      evalFraction: '--eval-split',
    };
    const dataOnly = Object.keys(taskOptions).map((key) => flagOf[key]);
    if (dataOnly.length > 0) throw new Error(`${dataOnly.join(', ')}: only with --data FILE`);
    if (rewards.length > 0) result.rewards = rewards;
  }
  return result;
}

export interface TrainCommandOptions {
  recipe?: string;
  set?: string[];
  preset?: string;
  resume?: string;
  /** With `resume`: start over from step 0 when every checkpoint is damaged, instead of stopping. */
  restartDamaged?: boolean;
  runName?: string;
  quiet?: boolean;
  /** `sft`: only the SFT phase (GRPO steps forced to 0). */
  sftOnly?: boolean;
  /** --model, --data and the other dataset flags. */
  data?: DataFlags;
}

function defaultRunName(config: TrainerConfig): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${config.task}`;
}

/**
 * A `grpo train` run's rewards, rebuilt inside a reward worker (`rewardWorkers.threads` > 0) from
 * plain data, as the run built them: the recipe file's code rewards, else the config's named ones
 * or the task's (loading the task: for a dataset task each worker reads its data files once).
 */
export async function trainingRewards(source: {
  recipe?: string;
  config: Record<string, unknown>;
}): Promise<NamedReward[]> {
  const recipe: Recipe = source.recipe === undefined ? { config: {} } : await loadRecipe(source.recipe);
  if (recipe.rewards && !recipe.environment) return recipe.rewards;
  const task = await loadRunTask(source.config, recipe.task, recipe.rewards);
  const config = resolveConfig(source.config, recipe.task ? [recipe.task.name] : [], task);
  return runRewards(config, { rewards: recipe.rewards, task, environment: recipe.environment });
}

export async function runTrainCommand(options: TrainCommandOptions): Promise<number> {
  let recipe: Recipe = { config: {} };
  /** The recipe file whose code the run uses (given, or recorded by the run being resumed). */
  let recipeFile: string | undefined = options.recipe;
  let runDirectory: string | undefined;
  if (options.resume) {
    runDirectory = resolve(options.resume);
    if (!existsSync(runDirectory)) throw new Error(`--resume ${runDirectory}: no such folder`);
    if (existsSync(join(runDirectory, 'recipe.json')))
      throw new Error(
        `--resume ${runDirectory}: a flow run of an older version (recipe.json), which cannot be resumed; start it again`,
      );
    const saved = join(runDirectory, 'config.json');
    if (!existsSync(saved)) throw new Error(`--resume ${runDirectory}: no config.json there (is it a run folder?)`);
    recipe = { config: readConfigFile(saved) };
    // A run started from a code recipe needs its functions again: reuse the recorded recipe file.
    const source = join(runDirectory, 'source.json');
    recipeFile ??= existsSync(source)
      ? (JSON.parse(readFileSync(source, 'utf8')) as { recipe?: string }).recipe
      : undefined;
    if (recipeFile) {
      const code = await loadRecipe(recipeFile);
      recipe = {
        ...recipe,
        rewards: code.rewards,
        task: code.task,
        rollout: code.rollout,
        environment: code.environment,
      };
    }
  } else if (options.recipe) {
    recipe = await loadRecipe(options.recipe);
  }
  const flagOverrides = dataFlagOverrides(options.data, (recipe.rewards?.length ?? 0) > 0);
  let raw = applyOverrides(mergeConfig(recipe.config, flagOverrides), options.set ?? []);
  if (options.preset) raw = { ...raw, preset: options.preset };
  if (options.runName) raw = mergeConfig(raw, { logging: { runName: options.runName } });
  if (isFlowRecipe(raw)) return runFlowTrainCommand(raw, options);
  if (options.sftOnly) raw = mergeConfig(raw, { grpo: { steps: 0 } });
  // A resumed run keeps the config it started with (runs from before this check may name another task).
  if (recipe.task && !options.resume) raw = withRecipeTaskName(raw, recipe.task.name);
  const task = await loadRunTask(raw, recipe.task, recipe.rewards);
  // A --reward name is one of the task's rewards, a built-in one or 'environment' (with --data, checked above).
  if (task && options.data?.data === undefined)
    checkRewardFlagNames(options.data?.rewards, [
      ...task.rewards().map((reward) => reward.name),
      ...(recipe.environment ? ['environment'] : []), // the environments' reward(), see buildRewards
    ]);
  const config = resolveConfig(raw, recipe.task ? [recipe.task.name] : [], task);
  const context = createRunContext(config, {
    rewards: recipe.rewards,
    task,
    rollout: recipe.rollout,
    environment: recipe.environment,
    // Reward workers (rewardWorkers.threads > 0) rebuild the rewards from the same recipe and config.
    rewardSource: {
      module: import.meta.url,
      exportName: trainingRewards.name, // the workers call it by name
      args: { recipe: recipeFile === undefined ? undefined : resolve(recipeFile), config: raw },
    },
  });
  runDirectory ??= join(
    resolve(config.logging.runsDirectory),
    config.logging.runName ??
      `${defaultRunName(config)}${options.recipe ? `-${basename(options.recipe, extname(options.recipe))}` : ''}`,
  );
  // A resume with --set changes the run's config from here on (e.g. more grpo.steps): record it.
  if (options.resume && (options.set ?? []).length > 0) writeJsonAtomically(join(runDirectory, 'config.json'), config);
  // The backend now: a bad GRPO_BACKEND, GRPO_THREADS or GRPO_NATIVE_* is refused before a run folder exists.
  getBackend();
  if (!options.resume) {
    if (existsSync(join(runDirectory, 'config.json')))
      throw new Error(`run folder ${runDirectory} already exists; use --resume ${runDirectory} or another --run-name`);
    mkdirSync(runDirectory, { recursive: true });
    writeJsonAtomically(join(runDirectory, 'config.json'), config);
    if (options.recipe) writeJsonAtomically(join(runDirectory, 'source.json'), { recipe: resolve(options.recipe) });
  }
  process.stderr.write(`grpo: run folder ${runDirectory}\n`);
  // Ctrl-C / SIGTERM stop the run at the next step boundary with summary.json saying `interrupted`
  // (the default action would kill it mid-step and leave it saying `running`).
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted) process.stderr.write(`grpo: ${signal}: stopping between steps\n`);
    controller.abort(signal);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  let result: Awaited<ReturnType<typeof train>>;
  try {
    result = await train(context, {
      runDirectory,
      resume: Boolean(options.resume),
      restartDamaged: options.restartDamaged,
      quiet: options.quiet,
      signal: controller.signal,
    });
  } catch (error) {
    if (!(error instanceof RunInterrupted)) throw error;
    process.stderr.write(`grpo: ${error.message}; continue with grpo train --resume ${runDirectory}\n`);
    return error.reason === 'SIGTERM' ? 143 : 130; // 128 + the signal number, as a shell reports it
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  const before = result.evalBefore?.['eval/accuracy'];
  const after = result.evalAfter?.['eval/accuracy'];
  const percent = (value: number | undefined) => (value === undefined ? 'n/a' : `${(value * 100).toFixed(1)}%`);
  process.stdout.write(
    `held-out accuracy: before GRPO ${percent(before)}, after GRPO ${percent(after)} (summary: ${join(runDirectory, 'summary.json')})\n`,
  );
  return 0;
}
