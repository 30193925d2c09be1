/**
 * The HTTP server of `grpo serve-rewards`: `POST /get_reward` and `POST /` score the rows of one
 * request with the served rewards (rewards/run.ts: per-call timeout, bounded concurrency, the
 * failure policy) and answer in the request's protocol (reward-protocols.ts).
 *
 * Each request is scored on its own, so requests overlap as far as the rewards let them. With
 * `workers` (what `grpo serve-rewards` uses) every reward call runs in a worker thread that is
 * stopped when the call overruns its time limit, so even a synchronous reward that never returns is
 * a failed reward and the other clients keep being served (rewards/workers.ts). With `rewards` the
 * calls run on this thread: an async reward is timed out, a synchronous one holds the thread.
 * A failed reward is never 0: OpenRLHF gets `null` for that row plus the reason in `errors`; slime
 * gets HTTP 500 with the reason. Bodies are bounded in bytes and JSON nesting before parsing.
 * Is not: the reward resolver (serve-rewards-command.ts) nor a reward itself.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  describeMissingColumn,
  missingRewardColumns,
  scoreRewards,
  weightedSum,
  weightsAt,
  type NamedReward,
} from '../rewards/index.js';
import { BodyError, readJsonBody } from './json-body.js';
import {
  groupByPrompt,
  openRlhfResponseBody,
  parseRewardRequest,
  RequestError,
  scoresByRow,
  type ServedRow,
} from './reward-protocols.js';
import type { RewardWorkerPool } from '../rewards/workers.js';

/** Largest request body read; a batch of completions is far smaller, and bodies are read into memory. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** Deepest JSON nesting read; OpenRLHF's and slime's bodies nest 3 or 4 levels, a label's columns a few more. */
export const MAX_JSON_DEPTH = 64;

export interface RewardServerOptions {
  /** The rewards and their weights, run on this thread (no time limit for synchronous work). */
  rewards?: readonly NamedReward[];
  /** Or: the rewards run in worker threads that are stopped at the time limit (owned by the caller). */
  workers?: RewardWorkerPool;
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default 0: any free one). */
  port?: number;
  /** Per reward call, as `scoreRewards` takes it (default 30 000 ms, the trainer's). */
  timeoutMs?: number;
  /** Reward calls in flight per request (default 8, the trainer's). */
  concurrency?: number;
  /** Largest request body accepted (default MAX_BODY_BYTES); a larger one is answered 413. */
  maxBodyBytes?: number;
  /** Deepest nesting of JSON arrays and objects accepted (default MAX_JSON_DEPTH); deeper is a 400. */
  maxJsonDepth?: number;
  /**
   * Texts cut from the end of each completion (the first that matches), e.g. the end-of-sequence
   * token OpenRLHF leaves in `query` (it decodes with special tokens); the trainer's completions
   * never hold their stop token, so exact-match rewards need it gone.
   */
  stripSuffixes?: readonly string[];
}

export interface RunningRewardServer {
  server: Server;
  /** `http://host:port`, with the port actually bound. */
  url: string;
  close(): Promise<void>;
}

function send(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(body);
}

const sendError = (response: ServerResponse, status: number, message: string): void =>
  send(response, status, JSON.stringify({ error: message }));

/**
 * A 400 naming each reward column (`NamedReward.columns`) some row of the request lacks, before any
 * reward runs, as `grpo train` checks its rows: otherwise each reward failed row by row, in its own words.
 */
function checkColumns(rows: readonly ServedRow[], options: RewardServerOptions): void {
  const served = options.workers
    ? options.workers.names.map((name, i) => ({ name, columns: options.workers!.columns[i] }))
    : options.rewards!;
  const missing = missingRewardColumns(
    served,
    rows.map((row) => row.columns),
  );
  if (missing.length === 0) return;
  throw new RequestError(
    missing
      .map((each) => `rewards[${each.position}]: ${describeMissingColumn(each, `request row ${each.rowIndex}`)}`)
      .join('; '),
  );
}

/** Scores one parsed request body; returns the HTTP status and the body to send. */
async function answer(body: unknown, options: RewardServerOptions): Promise<{ status: number; body: string }> {
  const request = parseRewardRequest(body, options.maxJsonDepth ?? MAX_JSON_DEPTH);
  for (const row of request.rows) {
    const suffix = options.stripSuffixes?.find((text) => text !== '' && row.completion.endsWith(text));
    if (suffix !== undefined) row.completion = row.completion.slice(0, -suffix.length);
  }
  checkColumns(request.rows, options);
  const { groups, rowOfSample } = groupByPrompt(request.rows);
  const matrix = options.workers
    ? await options.workers.score(groups)
    : await scoreRewards(options.rewards!, groups, { timeoutMs: options.timeoutMs, concurrency: options.concurrency });
  // The server has no training step: a step-dependent (annealed) weight is read at step 0.
  const combined = weightedSum(matrix, options.workers ? options.workers.weights : weightsAt(options.rewards!, 0));
  const scores = scoresByRow(matrix, combined.rewards, rowOfSample);
  if (request.protocol === 'openrlhf') return { status: 200, body: openRlhfResponseBody(scores) };
  const reward = scores.rewards[0];
  if (reward === null || reward === undefined) {
    const reasons = scores.failures.map((failure) => `${failure.reward} ${failure.status}: ${failure.message}`);
    return { status: 500, body: JSON.stringify({ error: `reward failed: ${reasons.join('; ')}` }) };
  }
  return { status: 200, body: JSON.stringify(reward) };
}

async function handle(request: IncomingMessage, response: ServerResponse, options: RewardServerOptions) {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  if (path !== '/' && path !== '/get_reward')
    return sendError(response, 404, `no route ${path}; POST /get_reward or / with a reward request`);
  if (request.method !== 'POST') {
    response.setHeader('allow', 'POST');
    return sendError(response, 405, `${request.method} ${path}: use POST with a JSON body`);
  }
  let body: unknown;
  try {
    body = await readJsonBody(request, {
      maxBytes: options.maxBodyBytes ?? MAX_BODY_BYTES,
      maxDepth: options.maxJsonDepth ?? MAX_JSON_DEPTH,
    });
  } catch (error) {
    return sendError(response, error instanceof BodyError ? error.status : 400, (error as Error).message);
  }
  try {
    const result = await answer(body, options);
    send(response, result.status, result.body);
  } catch (error) {
    sendError(response, error instanceof RequestError ? 400 : 500, (error as Error).message);
  }
}

/** Starts the server; resolves once it listens. */
export async function startRewardServer(options: RewardServerOptions): Promise<RunningRewardServer> {
  if ((options.rewards === undefined) === (options.workers === undefined))
    throw new Error('serve-rewards: give either rewards or workers');
  if (options.rewards?.length === 0) throw new Error('serve-rewards: no rewards to serve');
  const server = createServer((request, response) => {
    handle(request, response, options).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, (error as Error).message);
      else response.destroy();
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
