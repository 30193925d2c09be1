/**
 * Builds the page of `grpo web` with esbuild: web/index.html and web/page.js as they are,
 * src/browser/worker.ts bundled for a browser with the Node-only leaves replaced by their browser
 * stand-ins (the table below), the typed reward's worker (src/browser/reward-worker.ts), the webgpu
 * backend's device thread (src/browser/webgpu-thread.mjs), the wasm
 * backend's kernel thread (src/browser/wasm-thread.mjs) and its
 * kernels (kernels.wasm, copied as it is, fetched by the worker). A Node module reached any other way stops the build, naming the
 * importer, so none can slip into the page.
 *
 * Is not: the server (server.ts). esbuild is a devDependency: this runs from a checkout.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { basename, join, relative, resolve } from 'node:path';

const repository = fileURLToPath(new URL('../../', import.meta.url));

/** Node-only modules (repository paths) and the browser module with the same exports that stands for each. */
const browserStandIns: Record<string, string> = {
  'src/tensor/backends/host-backends.ts': 'src/browser/host-backends.ts',
  'src/tensor/garbage.ts': 'src/browser/garbage.ts',
  'src/model/vision/image-decode.ts': 'src/browser/image-decode.ts',
  'src/data/image-files.ts': 'src/browser/image-files.ts',
  'src/config/template-file.ts': 'src/browser/template-file.ts',
};

/** The page's files, in the order a folder listing shows them. */
export const PAGE_FILES = [
  'index.html',
  'kernels.wasm',
  'page.js',
  'reward-worker.js',
  'wasm-thread.js',
  'webgpu-thread.js',
  'worker.js',
];

/** The built page: file name → bytes, and the worker bundle's size. */
export interface BuiltPage {
  files: Map<string, Uint8Array>;
  workerBytes: number;
}

/** Bundles the page (minified unless `minify` is false); throws naming any Node module the worker reaches. */
export async function buildPage({ minify = true } = {}): Promise<BuiltPage> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error('grpo web builds its page with esbuild, a devDependency: run it from a checkout after npm install');
  }
  const result = await esbuild
    .build({
      entryPoints: {
        worker: join(repository, 'src/browser/worker.ts'),
        'wasm-thread': join(repository, 'src/browser/wasm-thread.mjs'),
        'reward-worker': join(repository, 'src/browser/reward-worker.ts'),
        'webgpu-thread': join(repository, 'src/browser/webgpu-thread.mjs'),
      },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify,
      write: false,
      outdir: '/',
      logLevel: 'silent',
      plugins: [
        {
          name: 'browser-stand-ins',
          setup(build) {
            build.onResolve({ filter: /^\.\.?\// }, (args) => {
              const target = relative(repository, resolve(args.resolveDir, args.path)).replace(/\.js$/, '.ts');
              const standIn = browserStandIns[target];
              return standIn ? { path: join(repository, standIn) } : undefined;
            });
            build.onResolve(
              { filter: /^(node:|(fs|path|os|url|module|worker_threads|child_process|crypto)$)/ },
              (args) => ({
                errors: [
                  {
                    text: `${relative(repository, args.importer)} imports ${args.path}, a Node module, which the page cannot load: give it a browser stand-in (src/web/build-page.ts) or cut the import`,
                  },
                ],
              }),
            );
          },
        },
      ],
    })
    .catch((error: { errors?: { text: string }[] }) => {
      throw new Error(
        `grpo web: the page bundle failed: ${(error.errors ?? []).map((e) => e.text).join('; ') || String(error)}`,
      );
    });
  const files = new Map<string, Uint8Array>();
  for (const output of result.outputFiles) files.set(basename(output.path), output.contents);
  for (const name of ['index.html', 'page.js']) files.set(name, await readFile(join(repository, 'web', name)));
  files.set('kernels.wasm', await readFile(join(repository, 'src/tensor/backends/wasm/kernels.wasm')));
  return { files, workerBytes: files.get('worker.js')!.length };
}
