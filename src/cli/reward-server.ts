/**
 * The HTTP server of `grpo serve-rewards`: `POST /get_reward` and `POST /` score the rows of one
 * request with the served rewards (rewards/run.ts: per-call timeout, bounded concurrency, the
 * failure policy) and answer in the request's protocol (reward-protocols.ts).
 *
 * Each request is scored on its own, so requests overlap as far as the rewards let them (an async
 * reward, or one that runs a sandboxed process, waits without holding the others back; a
 * synchronous reward holds the one JavaScript thread while it runs). A failed reward is never 0:
 * OpenRLHF gets `null` for that row plus the reason in `errors`; slime gets HTTP 500 with the reason.
 * Is not: the reward resolver (serve-rewards-command.ts) nor a reward itself.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scoreRewards, weightedSum, weightsAt, type NamedReward } from '../rewards/index.js';
import {
  groupByPrompt,
  openRlhfResponseBody,
  parseRewardRequest,
  RequestError,
  scoresByRow,
} from './reward-protocols.js';

/** Largest request body read; a batch of completions is far smaller, and bodies are read into memory. */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface RewardServerOptions {
  /** The rewards and their weights, as the trainer would combine them. */
  rewards: readonly NamedReward[];
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

class BodyTooLarge extends Error {}

function readBody(request: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Past the limit the rest is read and dropped, so the 413 reaches a client still sending.
      if (size > limit) reject(new BodyTooLarge(`the body is over the limit of ${limit} bytes`));
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(body);
}

const sendError = (response: ServerResponse, status: number, message: string): void =>
  send(response, status, JSON.stringify({ error: message }));

/** Scores one parsed request body; returns the HTTP status and the body to send. */
async function answer(body: unknown, options: RewardServerOptions): Promise<{ status: number; body: string }> {
  const request = parseRewardRequest(body);
  for (const row of request.rows) {
    const suffix = options.stripSuffixes?.find((text) => text !== '' && row.completion.endsWith(text));
    if (suffix !== undefined) row.completion = row.completion.slice(0, -suffix.length);
  }
  const { groups, rowOfSample } = groupByPrompt(request.rows);
  const matrix = await scoreRewards(options.rewards, groups, {
    timeoutMs: options.timeoutMs,
    concurrency: options.concurrency,
  });
  // The server has no training step: a step-dependent (annealed) weight is read at step 0.
  const combined = weightedSum(matrix, weightsAt(options.rewards, 0));
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
  let text: string;
  try {
    text = await readBody(request, options.maxBodyBytes ?? MAX_BODY_BYTES);
  } catch (error) {
    return sendError(response, error instanceof BodyTooLarge ? 413 : 400, (error as Error).message);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return sendError(response, 400, `the body is not valid JSON: ${(error as Error).message}`);
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
  if (options.rewards.length === 0) throw new Error('serve-rewards: no rewards to serve');
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
