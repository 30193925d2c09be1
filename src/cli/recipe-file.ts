/**
 * Reading what `grpo train` is given as a file: a config (JSON/YAML) or a recipe (TypeScript or
 * JavaScript, loaded once per process through tsx with the project's tsconfig), its paths made
 * relative to the recipe's folder, its parts registered and its task and exports checked before
 * anything runs.
 * Is not: the flags or the run (train-command.ts).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import YAML from 'yaml';
import { type Recipe } from '../trainer/index.js';
import { writeJsonAtomically } from '../run/run-folder.js';
import { registerParts, type Part } from '../algorithms/index.js';
import { registerImageReward } from '../flow/image-rewards.js';

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
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
export function withRecipeTaskName(raw: Record<string, unknown>, name: string): Record<string, unknown> {
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
