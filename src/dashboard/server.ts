/*
 * The dashboard's HTTP server (`grpo dashboard`): a read-only local viewer of run folders built
 * on node:http. It serves a fixed set of static files (public/) and a JSON API over the runs
 * folder; GET and HEAD only, 127.0.0.1 by default, and nothing outside the runs folder.
 * It does not import the trainer (it reads the files the trainer writes, docs/run-folder.md) and
 * it has no build step: public/app.js is plain browser JavaScript.
 *
 * API (all JSON):
 *   GET /api/runs                          runs, newest first, with status, last step, key metrics
 *   GET /api/runs/:id                      one run: list entry + checkpoints
 *   GET /api/runs/:id/metrics?fromLine=N   metrics rows from line N on, and the line to ask next;
 *       &maxRows=M (100..100000) thins a long answer to about M rows (every k-th, evaluation rows and the
 *       last row kept) and says so in `sampled`: a 200 MB metrics.jsonl is drawn from a few thousand points
 *   GET /api/runs/:id/samples              the steps that have samples
 *   GET /api/runs/:id/samples?phase=P&step=N   the prompt groups logged at that step
 *   GET /api/runs/:id/config | /summary    config.json, summary.json
 *   GET /api/runs/:id/images               the run's image grids (samples-step-N.png of flow runs), by step
 *   GET /api/runs/:id/images/:name         one image grid, or a vision-language run's sample image
 *                                          (images/NAME.png); no other file is served
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFile, realpath, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { NotFoundError, RefusedPathError, RunFolderReader } from './run-files.js';

/** Options of `startDashboard`. */
export interface DashboardOptions {
  /** The folder holding one sub-folder per run (`runs/` by default in the CLI). */
  runsDirectory: string;
  /** TCP port; 0 picks a free one. */
  port?: number;
  /** Interface to listen on; loopback unless the user asks otherwise. */
  host?: string;
}

/** A running dashboard. */
export interface DashboardHandle {
  url: string;
  close(): Promise<void>;
}

/** Default port of `grpo dashboard`. */
export const defaultDashboardPort = 6060;

const publicDirectory = fileURLToPath(new URL('./public/', import.meta.url));

/** URL path → file in public/ and its type; nothing else is served from disk outside the API. */
const staticFiles: Record<string, [string, string]> = {
  '': ['index.html', 'text/html; charset=utf-8'],
  'index.html': ['index.html', 'text/html; charset=utf-8'],
  'app.js': ['app.js', 'text/javascript; charset=utf-8'],
  'chart.js': ['chart.js', 'text/javascript; charset=utf-8'],
  'series.js': ['series.js', 'text/javascript; charset=utf-8'],
  'samples.js': ['samples.js', 'text/javascript; charset=utf-8'],
  'dom.js': ['dom.js', 'text/javascript; charset=utf-8'],
};

const securityHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
};

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Start serving `runsDirectory`; resolves once listening. */
export async function startDashboard(options: DashboardOptions): Promise<DashboardHandle> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? defaultDashboardPort;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`dashboard port must be an integer from 0 to 65535, got ${String(port)}`);
  }
  const root = await realRunsFolder(options.runsDirectory);
  const reader = new RunFolderReader(root);
  const server = createServer((request, response) => {
    handleRequest(request, response, reader, loopbackHosts.has(host)).catch((error: unknown) => {
      sendError(response, request, error);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${port} on ${host} is already in use; pass --port N (0 picks a free port)`)
          : error,
      );
    });
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${actualPort}/`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Options of the `grpo dashboard` command as the CLI parses them. */
export interface DashboardCommandOptions {
  runs?: string;
  port?: string | number;
  host?: string;
  /** Where the "listening" line goes; console.log by default. */
  log?: (line: string) => void;
}

/** `grpo dashboard [--runs DIR] [--port N] [--host H]`: validate flags, start, print the URL. */
export async function runDashboardCommand(options: DashboardCommandOptions = {}): Promise<DashboardHandle> {
  const runsDirectory = options.runs ?? 'runs';
  const port = options.port === undefined ? defaultDashboardPort : Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer from 0 to 65535, got ${JSON.stringify(options.port)}`);
  }
  const handle = await startDashboard({ runsDirectory, port, host: options.host });
  const log = options.log ?? ((line: string) => console.log(line));
  log(`grpo dashboard: ${handle.url} (runs from ${runsDirectory}; read-only; Ctrl+C stops it)`);
  return handle;
}

async function realRunsFolder(runsDirectory: string): Promise<string> {
  let info;
  try {
    info = await stat(runsDirectory);
  } catch {
    throw new Error(`runs folder ${runsDirectory} does not exist; pass --runs DIR (the folder holding runs/<id>/)`);
  }
  if (!info.isDirectory()) throw new Error(`runs folder ${runsDirectory} is not a folder`);
  return realpath(runsDirectory);
}

/** Split the raw request path into decoded segments, refusing any that could climb out. */
function pathSegments(rawUrl: string): { segments: string[]; query: URLSearchParams } {
  const questionMark = rawUrl.indexOf('?');
  const rawPath = questionMark === -1 ? rawUrl : rawUrl.slice(0, questionMark);
  const query = new URLSearchParams(questionMark === -1 ? '' : rawUrl.slice(questionMark + 1));
  if (!rawPath.startsWith('/')) throw new HttpError(400, 'request path must start with /');
  const segments = rawPath
    .slice(1)
    .split('/')
    .map((raw) => {
      let segment: string;
      try {
        segment = decodeURIComponent(raw);
      } catch {
        throw new HttpError(400, 'malformed percent-encoding in path');
      }
      if (segment === '..' || segment === '.' || /[/\\\0]/.test(segment)) {
        throw new HttpError(403, 'path leaves the runs folder');
      }
      return segment;
    });
  return { segments: segments.length === 1 && segments[0] === '' ? [''] : segments, query };
}

async function handleRequest(
  request: IncomingMessage,
  response: ServerResponse,
  reader: RunFolderReader,
  loopbackOnly: boolean,
): Promise<void> {
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    throw new HttpError(405, `${request.method} is not allowed: the dashboard is read-only`);
  }
  // A page on another site can point its own host name at 127.0.0.1 (DNS rebinding); such
  // requests carry that foreign name in Host, so a loopback server answers only loopback names.
  const hostName = (request.headers.host ?? '').replace(/:\d+$/, '');
  if (loopbackOnly && !loopbackHosts.has(hostName)) throw new HttpError(403, `host ${hostName} not allowed`);
  const { segments, query } = pathSegments(request.url ?? '/');
  if (segments.length === 1 && Object.hasOwn(staticFiles, segments[0])) {
    const [fileName, type] = staticFiles[segments[0]];
    const body = await readFile(join(publicDirectory, fileName));
    return send(response, request, 200, type, body);
  }
  if (segments[0] !== 'api' || segments[1] !== 'runs') throw new HttpError(404, 'no such page');
  if (segments.length === 5 && segments[3] === 'images') {
    return send(response, request, 200, 'image/png', await reader.readImage(segments[2], segments[4]));
  }
  const data = await apiResponse(segments.slice(2), query, reader);
  return send(response, request, 200, 'application/json; charset=utf-8', JSON.stringify(data));
}

/**
 * About `maxRows` of `rows`: every k-th row (k = ⌈rows / maxRows⌉), and every row that holds an
 * evaluation metric (they are sparse: striding would lose them) and the last row (the latest values).
 */
function thinnedRows(
  rows: Record<string, unknown>[],
  maxRows: number,
): { rows: Record<string, unknown>[]; sampled: { every: number; of: number } } {
  const every = Math.ceil(rows.length / maxRows);
  const kept = rows.filter(
    (row, index) =>
      index % every === 0 || index === rows.length - 1 || Object.keys(row).some((key) => key.startsWith('eval/')),
  );
  return { rows: kept, sampled: { every, of: rows.length } };
}

async function apiResponse(rest: string[], query: URLSearchParams, reader: RunFolderReader): Promise<unknown> {
  if (rest.length === 0) return { runs: await reader.listRuns() };
  const [id, resource, ...extra] = rest;
  if (extra.length > 0) throw new HttpError(404, 'no such API path');
  if (resource === undefined) {
    return { ...(await reader.describeRun(id)), checkpoints: await reader.listCheckpoints(id) };
  }
  if (resource === 'config') return reader.readJson(id, 'config.json');
  if (resource === 'summary') return reader.readJson(id, 'summary.json');
  if (resource === 'metrics') {
    const fromLine = Number(query.get('fromLine') ?? '1');
    if (!Number.isInteger(fromLine) || fromLine < 1) throw new HttpError(400, 'fromLine must be an integer ≥ 1');
    const maxRows = query.has('maxRows') ? Number(query.get('maxRows')) : null;
    if (maxRows !== null && !(Number.isInteger(maxRows) && maxRows >= 100 && maxRows <= 100_000))
      throw new HttpError(400, 'maxRows must be an integer from 100 to 100000');
    const metrics = await reader.readMetrics(id);
    const rows = metrics.rows.filter((row) => row.line >= fromLine).map((row) => row.value);
    if (maxRows === null || rows.length <= maxRows) return { ...metrics, rows };
    return { ...metrics, ...thinnedRows(rows, maxRows) };
  }
  if (resource === 'samples') return samplesResponse(id, query, reader);
  if (resource === 'images') return { images: await reader.listImages(id) };
  throw new HttpError(404, `no such run resource: ${resource}`);
}

async function samplesResponse(id: string, query: URLSearchParams, reader: RunFolderReader): Promise<unknown> {
  const samples = await reader.readSamples(id);
  const stepText = query.get('step');
  if (stepText === null) {
    const steps = new Map<string, { phase: string; step: number; groups: number }>();
    for (const { value } of samples.rows) {
      const phase = String(value.phase ?? '');
      const key = `${phase}/${String(value.step)}`;
      const entry = steps.get(key) ?? { phase, step: value.step as number, groups: 0 };
      entry.groups += 1;
      steps.set(key, entry);
    }
    return { steps: [...steps.values()], problems: samples.problems };
  }
  const step = Number(stepText);
  const phase = query.get('phase');
  const groups = samples.rows
    .map((row) => row.value)
    .filter((value) => value.step === step && (phase === null || value.phase === phase));
  if (groups.length === 0) throw new HttpError(404, `no samples at step ${stepText}${phase ? ` (${phase})` : ''}`);
  return { step, phase, groups };
}

function send(
  response: ServerResponse,
  request: IncomingMessage,
  status: number,
  type: string,
  body: string | Buffer,
): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  response.writeHead(status, {
    ...securityHeaders,
    'content-type': type,
    'content-length': bytes.length,
    'cache-control': 'no-store',
  });
  response.end(request.method === 'HEAD' ? undefined : bytes);
}

function sendError(response: ServerResponse, request: IncomingMessage, error: unknown): void {
  const status =
    error instanceof HttpError
      ? error.status
      : error instanceof RefusedPathError
        ? 403
        : error instanceof NotFoundError
          ? 404
          : 500;
  const message = error instanceof Error ? error.message : String(error);
  if (response.headersSent) {
    response.destroy();
    return;
  }
  send(response, request, status, 'application/json; charset=utf-8', JSON.stringify({ error: message }));
}
