/**
 * `grpo web`: serves the built page (build-page.ts) on 127.0.0.1 with the headers that make it
 * cross-origin isolated (COOP/COEP, so SharedArrayBuffer is available to a threaded backend), or
 * writes it to a folder for any static host. GET and HEAD of the page's files only (PAGE_FILES);
 * every other path is a 404, so nothing on disk is reachable through it.
 *
 * Is not: the page or the training (src/browser/, web/); it imports neither.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildPage, PAGE_FILES, type BuiltPage } from './build-page.js';

/** A running page server. */
export interface WebHandle {
  url: string;
  page: BuiltPage;
  close(): Promise<void>;
}

const types: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'page.js': 'text/javascript; charset=utf-8',
  'worker.js': 'text/javascript; charset=utf-8',
  'wasm-thread.js': 'text/javascript; charset=utf-8',
  'webgpu-thread.js': 'text/javascript; charset=utf-8',
  'reward-worker.js': 'text/javascript; charset=utf-8',
  'kernels.wasm': 'application/wasm',
};

const headers = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; worker-src 'self'",
  'cache-control': 'no-store',
};

/**
 * The typed reward's worker compiles the user's text (new Function), which needs 'unsafe-eval'; it
 * gets that in a policy of its own (a worker takes its policy from its own response), which also
 * cuts it off from the network. The page and the training worker keep the strict one.
 */
const rewardWorkerPolicy = "default-src 'none'; script-src 'self' 'unsafe-eval'";

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

function handle(request: IncomingMessage, response: ServerResponse, page: BuiltPage, loopbackOnly: boolean): void {
  const send = (
    status: number,
    type: string,
    body: Uint8Array | string,
    policy = headers['content-security-policy'],
  ) => {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    response.writeHead(status, {
      ...headers,
      'content-security-policy': policy,
      'content-type': type,
      'content-length': bytes.length,
    });
    response.end(request.method === 'HEAD' ? undefined : bytes);
  };
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    return send(405, 'text/plain; charset=utf-8', `${request.method} is not allowed: the page is static`);
  }
  // A foreign page can point its own host name at 127.0.0.1 (DNS rebinding): answer loopback names only.
  const hostName = (request.headers.host ?? '').replace(/:\d+$/, '');
  if (loopbackOnly && !loopbackHosts.has(hostName)) return send(403, 'text/plain; charset=utf-8', 'host not allowed');
  const path = (request.url ?? '/').split('?')[0];
  const name = path === '/' ? 'index.html' : path.slice(1);
  const body = Object.hasOwn(types, name) ? page.files.get(name) : undefined;
  if (!body) return send(404, 'text/plain; charset=utf-8', `no such file: the page has ${PAGE_FILES.join(', ')}`);
  return send(200, types[name], body, name === 'reward-worker.js' ? rewardWorkerPolicy : undefined);
}

/** Builds the page and serves it; resolves once listening. */
export async function startWebServer(options: { port?: number; host?: string } = {}): Promise<WebHandle> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 6070;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port must be an integer from 0 to 65535, got ${String(port)}`);
  const page = await buildPage();
  const server = createServer((request, response) => handle(request, response, page, loopbackHosts.has(host)));
  await new Promise<void>((done, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${port} on ${host} is in use; pass --port N (0: any free port)`)
          : error,
      ),
    );
    server.listen(port, host, () => done());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}/`,
    page,
    close: () =>
      new Promise<void>((done, fail) => {
        server.closeAllConnections();
        server.close((error) => (error ? fail(error) : done()));
      }),
  };
}

/**
 * Writes the built page into `folder` (created if missing). A folder holding anything other than the
 * page's own files is refused, so --out never overwrites or mixes with unrelated files.
 */
export async function writePage(folder: string): Promise<BuiltPage> {
  const target = resolve(folder);
  await mkdir(target, { recursive: true });
  const foreign = (await readdir(target)).filter((name) => !Object.hasOwn(types, name));
  if (foreign.length > 0)
    throw new Error(
      `--out ${folder} holds other files (${foreign.slice(0, 3).join(', ')}); give an empty or new folder`,
    );
  const page = await buildPage();
  for (const [name, bytes] of page.files) await writeFile(join(target, name), bytes);
  return page;
}

/** `grpo web [--port N] [--host H] [--out DIR]`: serve the page, or write it to DIR and return null. */
export async function runWebCommand(
  options: { port?: number; host?: string; out?: string; log?: (line: string) => void } = {},
): Promise<WebHandle | null> {
  const log = options.log ?? ((line: string) => console.log(line));
  if (options.out !== undefined) {
    const page = await writePage(options.out);
    const kib = (page.workerBytes / 1024).toFixed(0);
    log(
      `grpo web: wrote the page to ${options.out} (worker.js ${kib} KiB); serve it with COOP/COEP headers for threads`,
    );
    return null;
  }
  const handle = await startWebServer(options);
  log(
    `grpo web: ${handle.url} (GRPO in this browser tab: the addition task, or a model folder you pick with a reward you type; Ctrl+C stops the server)`,
  );
  return handle;
}
