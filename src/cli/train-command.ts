/**
 * `grpo train [recipe]` and `grpo sft [recipe]`: load a recipe (TypeScript file exporting a config
 * and optionally reward functions, or a JSON/YAML config), apply CLI overrides, validate everything
 * before compute, pick the run folder (or resume one), and run the trainer.
 * Is not: the loop (src/trainer) — it only turns files and flags into a config.
 */
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import YAML from 'yaml';
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
import { registerParts, type Part } from '../algorithms/index.js';
import { registerImageReward } from '../flow/image-rewards.js';
import { isFlowRecipe } from '../flow/recipe.js';
import { runFlowTrainCommand } from './train-flow.js';
import { rewardFactories, type NamedReward } from '../rewards/index.js';
import { closestName } from '../registry/closest-name.js';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** How a value that should have been an object reads in an error: "an array", "the number 42". */
function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `the ${typeof value} ${JSON.stringify(value)}`;
}

/** A .json or .yaml config file as an object; a parse error or a non-object names the file. */
export function readConfigFile(path: string): Record<string, unknown> {
  const text = readFileSync(path, 'utf8');
  let value: unknown;
  if (extname(path) === '.json') {
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new Error(`${path} is not valid JSON: ${(error as Error).message}`);
    }
  } else {
    const document = YAML.parseDocument(text);
    if (document.errors.length > 0) throw new Error(`${path} is not valid YAML: ${document.errors[0]!.message}`);
    // A YAML file with no content (or only comments) means "no settings"; an explicit value must be a mapping.
    value = document.contents === null ? {} : document.toJS();
  }
  if (!isPlainObject(value))
    throw new Error(`${path} must hold a config object (field: value pairs), not ${describeValue(value)}`);
  return value;
}

/** TSX_TSCONFIG_PATH as the user started this process with it. */
const userTsconfigPath = process.env.TSX_TSCONFIG_PATH;

/** Whether `name` (a file or folder name) exists in `directory` or any folder above it. */
function foundAbove(directory: string, name: string): boolean {
  for (let folder = directory; ; folder = dirname(folder)) {
    if (existsSync(join(folder, name))) return true;
    if (dirname(folder) === folder) return false;
  }
}

/**
 * For a recipe outside any project that installs grpo (no node_modules/grpo and no tsconfig.json in
 * its folder or above): a tsconfig whose `paths` send `grpo`, `grpo/tensor` and `grpo/testing` to
 * this running package, so the recipe can import values from 'grpo' as a project's file does. tsx
 * reads it from TSX_TSCONFIG_PATH (its CommonJS loader, which a recipe outside an ESM package gets,
 * reads nothing else), set for this process and the reward workers it starts. A recipe inside a
 * project keeps that project's own resolution and tsconfig.
 */
function selfReferenceTsconfig(recipePath: string): string | undefined {
  const directory = dirname(recipePath);
  if (foundAbove(directory, join('node_modules', 'grpo')) || foundAbove(directory, 'tsconfig.json')) {
    // An earlier recipe of this process may have set it: this one keeps the user's own setting.
    if (userTsconfigPath === undefined) delete process.env.TSX_TSCONFIG_PATH;
    else process.env.TSX_TSCONFIG_PATH = userTsconfigPath;
    return undefined;
  }
  // This file is src/cli/train-command.ts (sources through tsx) or dist/cli/train-command.js (the package).
  const here = fileURLToPath(import.meta.url);
  const root = dirname(dirname(here));
  const extension = extname(here);
  const entry = (folder: string) => join(root, folder, `index${extension}`);
  const paths = { grpo: [entry('.')], 'grpo/tensor': [entry('tensor')], 'grpo/testing': [entry('testing')] };
  const file = join(tmpdir(), `grpo-recipe-tsconfig-${process.pid}-${threadId}.json`); // one per thread
  writeJsonAtomically(file, { compilerOptions: { paths } });
  process.env.TSX_TSCONFIG_PATH = file;
  return file;
}

/**
 * The input paths a recipe's config may name, as [section, field, which values are paths]. A relative
 * one is read from the recipe's folder, wherever `grpo` is started (a flag or `--set` stays relative
 * to the working directory). Output folders (`logging.runsDirectory`) stay where the command runs.
 */
const RECIPE_PATHS: [string, string, (value: string) => boolean][] = [
  ['model', 'checkpoint', () => true],
  ['model', 'chatTemplate', (value) => /\.(jinja|j2|txt)$/.test(value)], // else 'auto', 'none' or the template text
  ['taskOptions', 'trainFile', () => true],
  ['taskOptions', 'evalFile', () => true],
  ['taskOptions', 'dataDirectory', () => true],
  ['flow', 'model', () => true],
  ['flow', 'classifier', () => true],
];

/** `config` with its relative input paths resolved against `directory` (the recipe file's folder). */
function recipeRelativePaths(config: Record<string, unknown>, directory: string): Record<string, unknown> {
  let result = config;
  for (const [section, field, isPath] of RECIPE_PATHS) {
    const holder = result[section];
    if (!isPlainObject(holder)) continue;
    const value = holder[field];
    if (typeof value !== 'string' || value === '' || isAbsolute(value) || !isPath(value)) continue;
    result = { ...result, [section]: { ...holder, [field]: resolve(directory, value) } };
  }
  return result;
}

/** A recipe file: .ts/.js default-exports `{ config, rewards? }` (or a bare config); .json/.yaml hold a config. */
export async function loadRecipe(file: string): Promise<Recipe> {
  const recipe = await readRecipe(file);
  return { ...recipe, config: recipeRelativePaths(recipe.config as Record<string, unknown>, dirname(resolve(file))) };
}

/**
 * Recipe modules loaded in this process, by path and the file's size and time: tsx's tsImport loads
 * a fresh copy on every call, whose parts are new objects, so a second `grpo train` of the same
 * recipe in one process (a script, a test, the web UI) was refused with "already registered to a
 * different function". The same unchanged file now gives the same module; an edited one loads again
 * (and a part whose name it keeps is refused, naming it: the registries cannot swap a function).
 */
const loadedRecipes = new Map<string, { stamp: string; loaded: Promise<Record<string, unknown>> }>();

function importRecipe(path: string, extension: string): Promise<Record<string, unknown>> {
  const { size, mtimeMs } = statSync(path);
  const stamp = `${size}:${mtimeMs}`;
  const cached = loadedRecipes.get(path);
  if (cached?.stamp === stamp) return cached.loaded;
  const tsconfig = selfReferenceTsconfig(path);
  const loaded: Promise<Record<string, unknown>> =
    extension.endsWith('ts') || tsconfig
      ? import('tsx/esm/api').then(({ tsImport }) =>
          tsImport(pathToFileURL(path).href, { parentURL: import.meta.url, tsconfig }),
        )
      : import(pathToFileURL(path).href);
  loadedRecipes.set(path, { stamp, loaded });
  // A failed load is not kept: the next attempt (after the user fixes the file) tries again.
  loaded.catch(() => {
    if (loadedRecipes.get(path)?.loaded === loaded) loadedRecipes.delete(path);
  });
  return loaded;
}

async function readRecipe(file: string): Promise<Recipe> {
  const path = resolve(file);
  if (!existsSync(path)) throw new Error(`recipe ${path} does not exist`);
  const extension = extname(path);
  if (['.json', '.yaml', '.yml'].includes(extension)) return { config: readConfigFile(path) };
  if (!['.ts', '.mts', '.js', '.mjs'].includes(extension))
    throw new Error(`recipe ${path}: use a .ts, .js, .json or .yaml file`);
  const loaded = await importRecipe(path, extension);
  // tsx loads a .ts file outside an ESM package as CommonJS: its exports then sit one level down,
  // under `default`, marked __esModule (without this, `export default { config }` read as a config
  // with a field named "default").
  const moduleExports = isPlainObject(loaded.default) && loaded.default.__esModule === true ? loaded.default : loaded;
  const exported: unknown = 'default' in moduleExports ? moduleExports.default : moduleExports.recipe;
  if (!isPlainObject(exported)) {
    throw new Error(
      `recipe ${path}: must default-export { config, rewards? } or a config object, not ${describeValue(exported)}`,
    );
  }
  if (!('config' in exported)) return { config: exported };
  if (!isPlainObject(exported.config))
    throw new Error(`recipe ${path}: its config must be an object, not ${describeValue(exported.config)}`);
  if (exported.environment !== undefined && typeof exported.environment !== 'function')
    throw new Error(
      `recipe ${path}: its environment must be a function (row, context) => Environment, not ${describeValue(exported.environment)}`,
    );
  if (exported.rewards !== undefined && !Array.isArray(exported.rewards)) {
    throw new Error(
      `recipe ${path}: its rewards must be an array of { name, reward, weight }, not ${describeValue(exported.rewards)}`,
    );
  }
  if (exported.task !== undefined) checkRecipeTask(exported.task, path);
  if (exported.parts !== undefined) {
    if (!Array.isArray(exported.parts))
      throw new Error(
        `recipe ${path}: its parts must be an array of algorithm parts (definePolicyLoss, defineAdvantageEstimator, …) or image rewards (defineImageReward), not ${describeValue(exported.parts)}`,
      );
    // Before the config is validated, so it can name them (and on resume, before it is read again).
    registerParts(exported.parts as Part<unknown>[], `recipe ${path}: parts`, { 'image reward': registerImageReward });
  }
  return exported as unknown as Recipe;
}

/**
 * The config with `task` naming the recipe's own task (which the run uses), so config.json, the
 * run folder's name and the summary say which task ran; a config naming another task is refused.
 */
function withRecipeTaskName(raw: Record<string, unknown>, name: string): Record<string, unknown> {
  if (raw.task === undefined) return { ...raw, task: name };
  if (raw.task !== name)
    throw new Error(
      `task: the config names task ${JSON.stringify(raw.task)} but the recipe's own task is "${name}", which the run would use; drop the config's task or name "${name}"`,
    );
  return raw;
}

/** The members a recipe's own task must have, each a function, with what it is for. */
const TASK_FUNCTIONS: [string, string][] = [
  ['trainExamples', '(count, seed) => rows'],
  ['evalExamples', '(count, seed) => held-out rows'],
  ['rewards', '() => [{ name, reward, weight }]'],
  ['isCorrect', '(row, completion) => boolean, for held-out accuracy'],
];

/** Refuses a recipe's task that lacks a name or one of the functions a run calls, before anything loads. */
function checkRecipeTask(value: unknown, path: string): void {
  const task = value as Record<string, unknown>;
  if (typeof value !== 'object' || value === null)
    throw new Error(`recipe ${path}: its task must be an object (a Task), not ${describeValue(value)}`);
  if (typeof task.name !== 'string' || task.name === '')
    throw new Error(`recipe ${path}: its task needs a name (a non-empty string)`);
  for (const [member, what] of TASK_FUNCTIONS)
    if (typeof task[member] !== 'function')
      throw new Error(`recipe ${path}: its task "${task.name}" needs ${member}, a function ${what}`);
}

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
