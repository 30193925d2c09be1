/**
 * Running `grpo` inside a test's own process, as the CLI's recipe tests do: `inProcessCli(prefix)`
 * registers the file's hooks (a scratch runs folder, removed after the file; stdout and stderr
 * silenced, put back after the file) and returns that folder and `grpo(...argv)`, which parses argv
 * as the `grpo` command line does and throws where the CLI would exit non-zero. `settingFlags`
 * turns settings into `--set key=<json>` flags; `tinyRunFlags` are those of a recipe's smoke run (a
 * tiny model, 20 SFT steps, 2 GRPO steps); `grpoStepRecords` reads a finished run's GRPO step metrics.
 *
 * Is not: the CLI as a child process (cli.ts), for tests that kill the trainer or read its exit code.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';

/** `--set key=<value as JSON>` for each setting, in order. */
export function settingFlags(settings: Record<string, unknown>): string[] {
  return Object.entries(settings).flatMap(([key, value]) => ['--set', `${key}=${JSON.stringify(value)}`]);
}

/**
 * The flags of a recipe's smoke run into `runs`: a 32-wide one-layer model, 20 SFT steps, then 2 GRPO
 * steps of 2 prompts × 4 samples, no checkpoints; `settings` add to or replace them (undefined: leave
 * that setting at the recipe's value).
 */
export function tinyRunFlags(runs: string, settings: Record<string, unknown> = {}): string[] {
  const all: Record<string, unknown> = {
    'model.hiddenSize': 32,
    'model.numLayers': 1,
    'model.numHeads': 2,
    'sft.steps': 20,
    'grpo.steps': 2,
    'grpo.promptsPerStep': 2,
    'sampling.groupSize': 4,
    'grpo.microBatchSize': 8,
    'evaluation.examples': 4,
    'checkpoint.every': 0,
    'logging.runsDirectory': runs,
    ...settings,
  };
  return settingFlags(Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined)));
}

/** Registers the hooks described above; call it once, at the top of a test file. */
export function inProcessCli(prefix: string): { runs: string; grpo: (...argv: string[]) => Promise<unknown> } {
  const runs = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(runs, { recursive: true, force: true }));
  beforeAll(() => {
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  });
  afterAll(() => vi.restoreAllMocks());
  const grpo = (...argv: string[]) =>
    buildProgram()
      .exitOverride()
      .parseAsync(['node', 'grpo', ...argv]);
  return { runs, grpo };
}

/** The GRPO step records (those with `reward/mean`) of run `runName`'s metrics.jsonl under `runs`. */
export function grpoStepRecords(runs: string, runName: string): Record<string, unknown>[] {
  return readFileSync(join(runs, runName, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.phase === 'grpo' && 'reward/mean' in line);
}
