/**
 * Copies the non-TypeScript runtime assets of src/ into dist/ after `tsc` (`npm run build`):
 * the committed .wasm kernels, the plain-JS worker files (.mjs) and the dashboard's public/ page,
 * at the same relative paths,
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
  const from = join(entry.parentPath ?? entry.path, entry.name);
  // The dashboard's static page (plain browser files served from dist/dashboard/public/).
  const isPublicAsset = relative(source, from).startsWith(join('dashboard', 'public'));
  if (!entry.isFile() || !(isPublicAsset || assetExtensions.some((extension) => entry.name.endsWith(extension))))
    continue;
  const to = join(target, relative(source, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}
console.log(`copy-assets: ${copied} file(s) from src/ to dist/`);
