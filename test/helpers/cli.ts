/**
 * How tests start the `grpo` CLI as a child process: `node dist/cli/bin.js` when the compiled
 * package is at least as new as every source file (`npm install` builds it through `prepare`, so a
 * fresh clone and CI have it), else `node <bundle>`, where the bundle is `src/cli/bin.ts` and the
 * sources it imports joined by esbuild into one file, made once per test process from the sources
 * as they are now. Both run in one process, so a SIGKILL ends the trainer itself (the tsx wrapper
 * binary would leave its child running). Either start skips the per-module work of
 * `node --import tsx src/cli/bin.ts` (resolving and transforming each of ~600 modules at each start:
 * 2.1 s of CPU against the bundle's 0.7 s here), which the kill-and-resume suites pay dozens of times.
 *
 * The bundle is the sources as tsx would run them: tsx transforms each file with esbuild too, and
 * every module's `import.meta.url` is set to its own source file's URL, so the files a module finds
 * beside itself (kernels.wasm, worker.mjs, the reward workers' worker-thread.ts, which they load
 * through tsx as under `npm run grpo`) are the same. Packages stay outside it, resolved from the
 * checkout's node_modules (so the bundle is written in the checkout's ignored `.tmp/`, and removed
 * when the test process exits). Like dist/, it holds its own copy of the library: a recipe file
 * that imports `src/` through tsx would register its parts in another copy, so a test that runs a
 * recipe in a child process starts `node --import tsx src/cli/bin.ts` itself.
 *
 * Is not: a build step. A stale or missing dist/ is never rebuilt here, only passed over, so a test
 * never runs code older than the sources it checks.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
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

/**
 * The esbuild run that makes the bundle, as a module script: its onLoad plugin gives each source
 * module its own file's `import.meta.url`. A child process runs it, because esbuild's synchronous
 * API takes no plugins and cliArguments() is synchronous.
 */
const BUNDLE_SCRIPT = `
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
const [sources, outfile] = process.argv.slice(1);
const ownUrl = {
  name: 'own-import-meta-url',
  setup(builder) {
    builder.onLoad({ filter: /\\.(ts|mts|mjs|js)$/ }, ({ path }) => {
      if (!path.startsWith(sources)) return undefined;
      const text = readFileSync(path, 'utf8');
      // Only .url is rewritten: another import.meta field would silently mean the bundle's own.
      const other = /import\\.meta\\.(?!url\\b)\\w+/.exec(text);
      if (other) throw new Error(path + ' uses ' + other[0] + ', which the test bundle does not rewrite');
      const url = JSON.stringify(pathToFileURL(path).href);
      return { contents: text.replaceAll('import.meta.url', url), loader: path.endsWith('ts') ? 'ts' : 'js' };
    });
  },
};
await build({
  entryPoints: [sources + '/cli/bin.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  outfile,
  logLevel: 'error',
  plugins: [ownUrl],
});
`;

/** Whether process `pid` is alive (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Bundles src/cli/bin.ts into `.tmp/cli-bundle-<pid>.mjs` (about 2 s) and returns its path. Vitest
 * ends its workers without running their exit handlers, so the bundles of processes that are gone
 * are removed here too.
 */
function bundleSources(): string {
  const folder = join(repositoryRoot, '.tmp');
  mkdirSync(folder, { recursive: true });
  for (const name of readdirSync(folder)) {
    const owner = /^cli-bundle-(\d+)\.mjs$/.exec(name)?.[1];
    if (owner !== undefined && !alive(Number(owner))) rmSync(join(folder, name), { force: true });
  }
  const outfile = join(folder, `cli-bundle-${process.pid}.mjs`);
  execFileSync(process.execPath, ['--input-type=module', '-e', BUNDLE_SCRIPT, join(repositoryRoot, 'src'), outfile], {
    cwd: repositoryRoot, // where the script's `esbuild` import resolves
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  process.once('exit', () => rmSync(outfile, { force: true }));
  return outfile;
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
  cached = [fresh ? compiled : bundleSources()];
  return [...cached];
}
