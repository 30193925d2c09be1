/**
 * The package's `install` script: the native backend's addon. node-gyp-build keeps a prebuild that loads
 * (prebuilds/<platform>-<arch>/, put in a packed tarball by `prepack`, scripts/prebuild.mjs) or an existing
 * build/Release addon, and otherwise compiles binding.gyp with node-gyp, here with one job per core (node-gyp's
 * own default is one file at a time). Keeping an existing build matters in a clone: the first `npx grpo` there
 * installs the clone into npx's cache (npm's rule for a project's own bin), which runs this script again.
 * With no compiler or Node headers the build fails, is reported, and the wasm backend is used.
 * Is not: the TypeScript build (`prepare`) or a forced rebuild after editing the C sources
 * (`npm run build:native`).
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

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

buildNative();
