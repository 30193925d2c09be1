/**
 * `grpo train <flow recipe>`: a recipe whose config has a `flow` field (recipes/flow-*.ts) runs the
 * image-generator jobs of src/flow/recipe.ts instead of the language-model trainer. The train flags
 * that mean something here are honoured (`--set`, `--run-name`, `--quiet`, `--model` = flow.model);
 * the others are refused with one sentence before any compute.
 * Is not: the jobs (src/flow/) or the text-model path (train-command.ts).
 */
import { existsSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { resolveFlowRecipe, runFlowRecipe } from '../flow/recipe.js';
import { makeDirectory } from '../model/durable-files.js';

/** The parts of `grpo train`'s options a flow recipe looks at. */
export interface FlowTrainOptions {
  recipe?: string;
  resume?: string;
  sftOnly?: boolean;
  quiet?: boolean;
}

/** Moves `--model DIR` (model.checkpoint) to flow.model; anything else under `model` stays to be refused. */
function withModelFlag(raw: Record<string, unknown>): Record<string, unknown> {
  const model = raw.model as Record<string, unknown> | undefined;
  if (!model || Object.keys(model).join() !== 'checkpoint') return raw;
  const { model: _model, ...rest } = raw;
  return { ...rest, flow: { ...(raw.flow as object), model: model.checkpoint } };
}

/** Runs a flow recipe's merged config (recipe → --set); returns the exit code. */
export function runFlowTrainCommand(raw: Record<string, unknown>, options: FlowTrainOptions): number {
  if (options.resume) throw new Error('--resume: a flow recipe run cannot be resumed; start it again');
  if (options.sftOnly) throw new Error('grpo sft: a flow recipe has no SFT phase; use grpo train');
  const recipe = resolveFlowRecipe(withModelFlag(raw));
  const logging = (raw.logging ?? {}) as { runName?: string; runsDirectory?: string };
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const name = options.recipe ? basename(options.recipe, extname(options.recipe)) : `flow-${recipe.job}`;
  const runDirectory = join(resolve(logging.runsDirectory ?? 'runs'), logging.runName ?? `${stamp}-${name}`);
  if (existsSync(join(runDirectory, 'recipe.json')) || existsSync(join(runDirectory, 'config.json')))
    throw new Error(`run folder ${runDirectory} already exists; use another --run-name`);
  makeDirectory(runDirectory);
  process.stderr.write(`grpo: run folder ${runDirectory}\n`);
  const log = options.quiet ? () => {} : (line: string) => process.stdout.write(`${line}\n`);
  const { summary } = runFlowRecipe(recipe, runDirectory, log);
  process.stdout.write(`${summary} (summary: ${join(runDirectory, 'summary.json')})\n`);
  return 0;
}
