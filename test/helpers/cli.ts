/**
 * How tests start the `grpo` CLI as a child process: `node dist/cli/bin.js` when the compiled
 * package is at least as new as every source file (`npm install` builds it through `prepare`, so a
 * fresh clone and CI have it), else `node --import tsx src/cli/bin.ts`. Both run in one process, so
 * a SIGKILL ends the trainer itself (the tsx wrapper binary would leave its child running). The
 * compiled start skips tsx's transform of every module at each start (about 1.6 s of CPU a start
 * here), which the kill-and-resume suites pay dozens of times.
 *
 * Is not: a build step. A stale or missing dist/ is never rebuilt here, only passed over, so a test
 * never runs code older than the sources it checks.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryRoot } from './fixtures.js';

let cached: string[] | undefined;

/** The newest modification time of the TypeScript and JavaScript sources under `directory`. */
function newestSource(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    // Tests are not compiled into dist/: editing one leaves the compiled CLI current.
    if (!entry.isFile() || entry.name.includes('.test.') || !/\.(ts|mjs|js|json|wasm)$/.test(entry.name)) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** The node arguments that start the CLI (put the command and its flags after them). */
export function cliArguments(): string[] {
  if (cached) return [...cached];
  const compiled = join(repositoryRoot, 'dist', 'cli', 'bin.js');
  // The build is incremental (tsconfig.build.json): it rewrites only what changed, and its build-info
  // file whenever anything did, so the later of the two is when dist/ last caught up with src/.
  const built = (path: string) => (existsSync(path) ? statSync(path).mtimeMs : 0);
  const fresh =
    existsSync(compiled) &&
    Math.max(built(compiled), built(join(repositoryRoot, 'dist', '.tsbuildinfo'))) >=
      newestSource(join(repositoryRoot, 'src'));
  cached = fresh ? [compiled] : ['--import', 'tsx', join(repositoryRoot, 'src', 'cli', 'bin.ts')];
  return [...cached];
}
