/**
 * The package's `install` script. Two jobs:
 * - the native backend's addon: node-gyp-build keeps a prebuild that loads (prebuilds/<platform>-<arch>/, put
 *   in a packed tarball by `prepack`, scripts/prebuild.mjs) or an existing build/Release, and otherwise
 *   compiles binding.gyp with node-gyp, here with one job per core (node-gyp's own default is one file at a
 *   time); with no compiler or Node headers the build fails, is reported, and the wasm backend is used;
 * - in a clone (the package is the root project, not under a node_modules folder): node_modules/.bin/grpo,
 *   a link to bin/grpo.js, so that `npx grpo` finds the clone's own command. npm links the bins of a
 *   project's dependencies there, never the project's own, and npx then "installs" the clone into its cache
 *   (re-running this build) before every first use.
 * Is not: the TypeScript build (`prepare`, `npm run build`) or a forced rebuild (`npm run build:native`).
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, symlinkSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function linkOwnBin() {
  if (root.split(sep).includes('node_modules')) return; // installed as a dependency: npm links the bin
  const binFolder = join(root, 'node_modules', '.bin');
  const link = join(binFolder, 'grpo');
  try {
    mkdirSync(binFolder, { recursive: true });
    if (lstatSync(link, { throwIfNoEntry: false })) unlinkSync(link);
    symlinkSync(relative(binFolder, join(root, 'bin', 'grpo.js')), link);
  } catch (error) {
    console.warn(`grpo: could not link ${link} (${error.message}); in this clone use \`npm run grpo -- …\``);
  }
}

function buildNative() {
  let bin;
  try {
    bin = createRequire(import.meta.url).resolve('node-gyp-build/bin.js');
  } catch {
    // npm runs this script even for `npm install --package-lock-only`, before anything is installed
    console.warn('grpo: node-gyp-build is not installed; the native backend is not built');
    return;
  }
  const result = spawnSync(process.execPath, [bin], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, JOBS: process.env.JOBS ?? 'max' },
  });
  if (result.status !== 0) {
    console.warn(
      'grpo: native backend not built (no C compiler or Node headers); the wasm backend will be used ' +
        '(`npm run build:native` retries)',
    );
  }
}

linkOwnBin();
buildNative();
