/**
 * A bad backend setting in the environment stops `grpo train` before it makes a run folder: the
 * message names the variable, and no folder is left to collide with the next try's --run-name.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { cliArguments } from '../../test/helpers/cli.js';

const runs = mkdtempSync(join(tmpdir(), 'grpo-backend-setting-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

it.each([
  ['GRPO_BACKEND', 'gpu', /unknown backend "gpu"; known backends: /],
  ['GRPO_THREADS', 'two', /GRPO_THREADS must be a positive integer, got "two"/],
])('%s=%s is refused before the run folder exists', (variable, value, message) => {
  const run = `bad-${variable}`;
  const child = spawnSync(
    process.execPath,
    [...cliArguments(), 'train', '--run-name', run, '--set', `logging.runsDirectory=${JSON.stringify(runs)}`],
    { encoding: 'utf8', env: { ...process.env, [variable]: value, GRPO_QUIET: '1' }, timeout: 120_000 },
  );
  expect(child.status).not.toBe(0);
  expect(child.stderr).toMatch(message);
  expect(existsSync(join(runs, run))).toBe(false);
});
