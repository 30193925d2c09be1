/**
 * The package's `prepare` script: `npm run build` (dist/ from src/), which npm runs after `npm install` in a
 * clone and before `npm pack`. Skipped when npx runs a clone's own `grpo`: npm then "installs" the clone into
 * npx's cache (its rule for a project's own bin; npm_command is `exec`) and would rebuild dist/ before the
 * command starts. The clone's dist/ is the one `npm install` or `npm run build` made.
 * Is not: the build itself (`npm run build`: tsc, then scripts/copy-assets.mjs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

if (process.env.npm_command === 'exec' && existsSync(join(root, 'dist', 'cli', 'bin.js'))) process.exit(0);
const npm = process.env.npm_execpath;
const result = npm
  ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(result.status ?? 1);
