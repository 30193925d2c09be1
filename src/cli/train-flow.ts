/**
 * `grpo train <flow recipe>`: a recipe whose config has a `flow` field (recipes/flow-*.ts) runs the
 * image-generator jobs of src/flow/recipe.ts instead of the language-model trainer, in the same run
 * folder (config.json, metrics.jsonl, summary.json, checkpoints/) with the same `--resume`,
 * `--restart-damaged` and Ctrl-C handling as text runs. The train flags that mean something here
 * are honoured (`--set`, `--run-name`, `--quiet`, `--model` = flow.model, `--resume`); the others
 * are refused with one sentence before any compute.
 * Is not: the jobs (src/flow/) or the text-model path (train-command.ts, which reads a resumed run's
 * config.json and hands a flow one here).
 */
import { existsSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { flowRunConfig, resolveFlowRecipe, runFlowRecipe } from '../flow/recipe.js';
import { RunFolder, writeJsonAtomically } from '../run/run-folder.js';
import { RunInterrupted } from '../run/run-status.js';

/** The parts of `grpo train`'s options a flow recipe looks at. */
export interface FlowTrainOptions {
  recipe?: string;
  /** The run folder to continue (its config.json, with --set applied, is the `raw` config). */
  resume?: string;
  restartDamaged?: boolean;
  /** --set overrides: on resume they change the run's config.json from here on. */
  set?: string[];
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

/** Runs a flow recipe's merged config (recipe → --set, or a resumed run's config.json → --set); returns the exit code. */
export async function runFlowTrainCommand(raw: Record<string, unknown>, options: FlowTrainOptions): Promise<number> {
  if (options.sftOnly) throw new Error('grpo sft: a flow recipe has no SFT phase; use grpo train');
  const recipe = resolveFlowRecipe(withModelFlag(raw));
  const logging = (raw.logging ?? {}) as { runName?: string; runsDirectory?: string };
  let runDirectory: string;
  if (options.resume) {
    runDirectory = resolve(options.resume);
    // A resume with --set changes the run's config from here on (e.g. more flow.rl.steps): record it.
    if ((options.set ?? []).length > 0)
      writeJsonAtomically(join(runDirectory, 'config.json'), flowRunConfig(recipe, logging));
  } else {
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    const name = options.recipe ? basename(options.recipe, extname(options.recipe)) : `flow-${recipe.job}`;
    runDirectory = join(resolve(logging.runsDirectory ?? 'runs'), logging.runName ?? `${stamp}-${name}`);
    if (existsSync(join(runDirectory, 'config.json')))
      throw new Error(`run folder ${runDirectory} already exists; use --resume ${runDirectory} or another --run-name`);
  }
  const folder = new RunFolder(runDirectory);
  if (!options.resume) {
    writeJsonAtomically(join(runDirectory, 'config.json'), flowRunConfig(recipe, logging));
    if (options.recipe) writeJsonAtomically(join(runDirectory, 'source.json'), { recipe: resolve(options.recipe) });
  }
  process.stderr.write(`grpo: run folder ${runDirectory}\n`);
  const log = options.quiet ? () => {} : (line: string) => process.stdout.write(`${line}\n`);
  // As for text runs: Ctrl-C / SIGTERM stop at the next step boundary with summary.json saying `interrupted`.
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals) => {
    if (!controller.signal.aborted) process.stderr.write(`grpo: ${signal}: stopping between steps\n`);
    controller.abort(signal);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const { summary } = await runFlowRecipe(recipe, folder, {
      resume: Boolean(options.resume),
      restartDamaged: options.restartDamaged,
      signal: controller.signal,
      log,
    });
    process.stdout.write(`${summary} (summary: ${join(runDirectory, 'summary.json')})\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof RunInterrupted)) throw error;
    process.stderr.write(`grpo: ${error.message}; continue with grpo train --resume ${runDirectory}\n`);
    return error.reason === 'SIGTERM' ? 143 : 130;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
