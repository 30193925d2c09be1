/**
 * `grpo train [recipe]` and `grpo sft [recipe]`: load a recipe (TypeScript file exporting a config
 * and optionally reward functions, or a JSON/YAML config), apply CLI overrides, validate everything
 * before compute, pick the run folder (or resume one), and run the trainer.
 * Is not: the loop (src/trainer) — it only turns files and flags into a config.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import YAML from 'yaml';
import { createRunContext, mergeConfig, resolveConfig, train, type Recipe, type TrainerConfig } from '../trainer/index.js';
import { writeJsonAtomically } from '../trainer/run-folder.js';


/** A recipe file: .ts/.js default-exports `{ config, rewards? }` (or a bare config); .json/.yaml hold a config. */
export async function loadRecipe(file: string): Promise<Recipe> {
  const path = resolve(file);
  if (!existsSync(path)) throw new Error(`recipe ${path} does not exist`);
  const extension = extname(path);
  if (extension === '.json') return { config: JSON.parse(readFileSync(path, 'utf8')) };
  if (extension === '.yaml' || extension === '.yml') return { config: YAML.parse(readFileSync(path, 'utf8')) ?? {} };
  if (!['.ts', '.mts', '.js', '.mjs'].includes(extension)) throw new Error(`recipe ${path}: use a .ts, .js, .json or .yaml file`);
  const loaded = extension.endsWith('ts')
    ? await (await import('tsx/esm/api')).tsImport(pathToFileURL(path).href, import.meta.url)
    : await import(pathToFileURL(path).href);
  const exported = loaded.default ?? loaded.recipe;
  if (!exported || typeof exported !== 'object') throw new Error(`recipe ${path}: must default-export { config, rewards? } or a config object`);
  return 'config' in exported ? (exported as Recipe) : { config: exported as Record<string, unknown> };
}

/** `key.path=value` overrides (value parsed as JSON when it parses, else a string). */
export function parseOverrides(assignments: readonly string[]): Record<string, unknown> {
  let result: Record<string, unknown> = {};
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
    const nested = keys.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Record<string, unknown>;
    result = mergeConfig(result, nested);
  }
  return result;
}

export interface TrainCommandOptions {
  recipe?: string;
  set?: string[];
  preset?: string;
  resume?: string;
  runName?: string;
  quiet?: boolean;
  /** `sft`: only the SFT phase (GRPO steps forced to 0). */
  sftOnly?: boolean;
}

function defaultRunName(config: TrainerConfig): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${config.task}`;
}

export async function runTrainCommand(options: TrainCommandOptions): Promise<number> {
  let recipe: Recipe = { config: {} };
  let runDirectory: string | undefined;
  if (options.resume) {
    runDirectory = resolve(options.resume);
    const saved = join(runDirectory, 'config.json');
    if (!existsSync(saved)) throw new Error(`--resume ${runDirectory}: no config.json there (is it a run folder?)`);
    recipe = { config: JSON.parse(readFileSync(saved, 'utf8')) };
    // A run started from a code recipe needs its functions again: reuse the recorded recipe file.
    const source = join(runDirectory, 'source.json');
    const recipeFile = options.recipe ?? (existsSync(source) ? (JSON.parse(readFileSync(source, 'utf8')) as { recipe?: string }).recipe : undefined);
    if (recipeFile) {
      const code = await loadRecipe(recipeFile);
      recipe = { ...recipe, rewards: code.rewards, task: code.task, rollout: code.rollout };
    }
  } else if (options.recipe) {
    recipe = await loadRecipe(options.recipe);
  }
  let raw = mergeConfig(recipe.config, parseOverrides(options.set ?? []));
  if (options.preset) raw = { ...raw, preset: options.preset };
  if (options.runName) raw = mergeConfig(raw, { logging: { runName: options.runName } });
  if (options.sftOnly) raw = mergeConfig(raw, { grpo: { steps: 0 } });
  const config = resolveConfig(raw, recipe.task ? [recipe.task.name] : []);
  const context = createRunContext(config, { rewards: recipe.rewards, task: recipe.task, rollout: recipe.rollout });
  runDirectory ??= join(resolve(config.logging.runsDirectory), config.logging.runName ?? `${defaultRunName(config)}${options.recipe ? `-${basename(options.recipe, extname(options.recipe))}` : ''}`);
  if (!options.resume) {
    if (existsSync(join(runDirectory, 'config.json'))) throw new Error(`run folder ${runDirectory} already exists; use --resume ${runDirectory} or another --run-name`);
    mkdirSync(runDirectory, { recursive: true });
    writeJsonAtomically(join(runDirectory, 'config.json'), config);
    if (options.recipe) writeJsonAtomically(join(runDirectory, 'source.json'), { recipe: resolve(options.recipe) });
  }
  process.stderr.write(`grpo: run folder ${runDirectory}\n`);
  const result = await train(context, { runDirectory, resume: Boolean(options.resume), quiet: options.quiet });
  const before = result.evalBefore?.['eval/accuracy'];
  const after = result.evalAfter?.['eval/accuracy'];
  const percent = (value: number | undefined) => (value === undefined ? 'n/a' : `${(value * 100).toFixed(1)}%`);
  process.stdout.write(`held-out accuracy: before GRPO ${percent(before)}, after GRPO ${percent(after)} (summary: ${join(runDirectory, 'summary.json')})\n`);
  return 0;
}
