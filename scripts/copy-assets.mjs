/**
 * Copies the non-TypeScript runtime assets of src/ into dist/ after `tsc` (`npm run build`):
 * the committed .wasm kernels and the plain-JS worker files (.mjs), at the same relative paths,
 * because the compiled loaders find them by URL relative to themselves.
 * Is not: a bundler; C sources, tests and TypeScript are left to tsc (or left out).
 */
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src');
const target = join(root, 'dist');
const assetExtensions = ['.wasm', '.mjs'];

let copied = 0;
for (const entry of readdirSync(source, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !assetExtensions.some((extension) => entry.name.endsWith(extension))) continue;
  const from = join(entry.parentPath ?? entry.path, entry.name);
  const to = join(target, relative(source, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}
console.log(`copy-assets: ${copied} file(s) from src/ to dist/`);
