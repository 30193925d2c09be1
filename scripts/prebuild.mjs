/**
 * The package's `prepack` script: puts the native addon that `npm install` built here (build/Release) into
 * prebuilds/<platform>-<arch>/grpo.napi.node, where node-gyp-build looks (at install and at load), so that a
 * project installing the packed tarball on this platform loads it and compiles nothing. The addon uses only
 * N-API (NAPI_VERSION=8), so one binary serves every Node version from 20 on.
 * Is: a copy, not a build (prebuildify would rebuild the same binary with the same node-gyp and flags, and
 * delete build/ meanwhile). Refuses an addon older than its C sources: that package would ship stale kernels.
 * Without a build (no compiler here) the package ships no prebuild and compiles, or falls back to wasm, where
 * it is installed.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(root, 'build', 'Release', 'grpo_native.node');
const prebuilds = join(root, 'prebuilds');
const nativeSources = join(root, 'src', 'tensor', 'backends', 'native');

rmSync(prebuilds, { recursive: true, force: true });
if (!existsSync(built)) {
  console.warn(`grpo prepack: no ${built}; the package ships no prebuilt addon (it compiles where installed)`);
} else {
  const builtAt = statSync(built).mtimeMs;
  const sources = [
    join(root, 'binding.gyp'),
    ...readdirSync(nativeSources)
      .filter((name) => name.endsWith('.c') || name.endsWith('.h'))
      .map((name) => join(nativeSources, name)),
  ];
  const newer = sources.filter((source) => statSync(source).mtimeMs > builtAt);
  if (newer.length > 0) {
    console.error(`grpo prepack: ${built} is older than ${newer.join(', ')}; run \`npm run build:native\` first`);
    process.exit(1);
  }
  const folder = join(prebuilds, `${platform()}-${arch()}`);
  mkdirSync(folder, { recursive: true });
  copyFileSync(built, join(folder, 'grpo.napi.node'));
  console.error(`grpo prepack: ${join(folder, 'grpo.napi.node')}`);
}
