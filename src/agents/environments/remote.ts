/**
 * A client for remote environments speaking OpenEnv's HTTP shape (meta-pytorch/OpenEnv,
 * `HTTPEnvServer`): `POST /reset` with a JSON body (here `{}` or `{ seed }`) and `POST /step` with
 * `{ "action": {...} }`, each answered by `{ "observation": {...}, "reward": number | null, "done": bool }`.
 *
 * Is: an `EnvironmentFactory` whose episodes reset a server, send each model turn that called no
 * tool as an action, and show the observation as the next user message; per-request timeouts,
 * retries where a retry cannot repeat an action, and errors naming the URL, the endpoint and what
 * was wrong. Is not: OpenEnv's WebSocket or MCP session protocol — an HTTP server holds one episode
 * at a time, so concurrent episodes need one server each (`urls`), and two live episodes on one URL
 * are refused.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../../rewards/types.js';
import type { Environment, EnvironmentFactory, EnvironmentFeedback } from '../types.js';

/** What an OpenEnv server answers to /reset and /step. */
export interface OpenEnvResult {
  observation: unknown;
  reward: number | null;
  done: boolean;
}

/** Options of {@link openEnvEnvironment}. */
export interface OpenEnvOptions {
  /** Server base URLs; episode i uses urls[i mod urls.length], so give one per concurrent episode. */
  urls: readonly string[];
  /** The action sent for a model turn's text (default `{ message: text }`, OpenEnv's echo env). */
  action?: (assistantText: string) => Record<string, unknown>;
  /** The text shown to the model for an observation (default: its one string field, else its JSON). */
  observationText?: (observation: unknown) => string;
  /** Send the episode's seed in the /reset body (default false: `{}`). */
  sendSeed?: boolean;
  /** Per-request limit in milliseconds (default 10000). */
  timeoutMs?: number;
  /** Extra attempts for a request that may be repeated (default 2). */
  retries?: number;
  /** Delay before the first retry, doubled each time (default 200 ms). */
  retryDelayMs?: number;
}

/** One string field → that string; a string → itself; anything else → its JSON. */
function defaultObservationText(observation: unknown): string {
  if (typeof observation === 'string') return observation;
  if (observation !== null && typeof observation === 'object') {
    const strings = Object.values(observation).filter((value): value is string => typeof value === 'string');
    if (strings.length === 1) return strings[0];
  }
  return JSON.stringify(observation);
}

/** Checks the reply's shape; every problem names the URL and endpoint. */
function parseResult(body: string, where: string): OpenEnvResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Error(`${where}: the reply is not JSON: ${body.slice(0, 200)}`);
  }
  const result = parsed as Partial<OpenEnvResult> | null;
  if (result === null || typeof result !== 'object' || !('observation' in result)) {
    throw new Error(`${where}: the reply has no "observation" field: ${body.slice(0, 200)}`);
  }
  if (typeof result.done !== 'boolean')
    throw new Error(`${where}: "done" must be true or false, got ${JSON.stringify(result.done)}`);
  const reward = result.reward ?? null;
  if (reward !== null && (typeof reward !== 'number' || !Number.isFinite(reward))) {
    throw new Error(`${where}: "reward" must be a finite number or null, got ${JSON.stringify(result.reward)}`);
  }
  return { observation: result.observation, reward, done: result.done };
}

/** True when the request never reached the server (safe to repeat even for /step). */
function neverSent(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

interface RequestPolicy {
  timeoutMs: number;
  retries: number;
  retryDelayMs: number;
}

/**
 * POSTs `body` to `url + endpoint`. /reset is repeated on any failure (a reset is idempotent);
 * /step only when the connection was refused, since a lost reply may hide an action already taken.
 */
async function post(
  url: string,
  endpoint: '/reset' | '/step',
  body: unknown,
  policy: RequestPolicy,
): Promise<OpenEnvResult> {
  const where = `remote environment ${url}${endpoint}`;
  let lastError: unknown;
  for (let attempt = 0; attempt <= policy.retries; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, policy.retryDelayMs * 2 ** (attempt - 1)));
    try {
      const response = await fetch(`${url}${endpoint}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(policy.timeoutMs),
      });
      const text = await response.text();
      if (!response.ok) {
        const error = new Error(`${where}: HTTP ${response.status}: ${text.slice(0, 200)}`);
        // A 5xx /reset may be a server still starting; a 4xx is our request and will not improve.
        if (endpoint === '/reset' && response.status >= 500) {
          lastError = error;
          continue;
        }
        throw error;
      }
      return parseResult(text, where);
    } catch (error) {
      if ((error as Error).message.startsWith(where)) throw error;
      const timedOut = (error as Error).name === 'TimeoutError';
      lastError = new Error(
        timedOut ? `${where}: no reply within ${policy.timeoutMs} ms` : `${where}: ${(error as Error).message}`,
        { cause: error },
      );
      if (endpoint === '/step' && !neverSent(error)) break;
    }
  }
  throw lastError;
}

/** The environment of one remote episode. */
class OpenEnvEpisode implements Environment {
  private finished = false;
  private lastObservation = '';
  private rewardSum: number | null = null;

  constructor(
    private readonly url: string,
    private readonly options: Required<Omit<OpenEnvOptions, 'urls'>>,
    private readonly seed: number,
    private readonly release: () => void,
  ) {}

  async reset(): Promise<{ messages: ChatMessage[] }> {
    const result = await post(this.url, '/reset', this.options.sendSeed ? { seed: this.seed } : {}, this.options);
    this.take(result);
    return { messages: [{ role: 'user', content: this.lastObservation }] };
  }

  async respond(assistantText: string): Promise<EnvironmentFeedback> {
    const result = await post(this.url, '/step', { action: this.options.action(assistantText) }, this.options);
    this.take(result);
    return { observation: this.lastObservation, reward: result.reward ?? undefined, done: result.done };
  }

  done(): boolean {
    return this.finished;
  }

  /** A digest of the last observation: equal observations are the same anchor state. */
  stateKey(): string {
    return createHash('sha256').update(this.lastObservation).digest('hex').slice(0, 16);
  }

  /** The sum of the rewards the server gave (null when it gave none). */
  reward(): number | null {
    return this.rewardSum;
  }

  close(): void {
    this.release();
  }

  private take(result: OpenEnvResult): void {
    this.lastObservation = this.options.observationText(result.observation);
    this.finished = result.done;
    if (result.reward !== null) this.rewardSum = (this.rewardSum ?? 0) + result.reward;
  }
}

/**
 * An environment factory for OpenEnv-style HTTP servers.
 * @example openEnvEnvironment({ urls: ['http://127.0.0.1:8000', 'http://127.0.0.1:8001'], timeoutMs: 5000 })
 */
export function openEnvEnvironment({
  urls,
  action = (text) => ({ message: text }),
  observationText = defaultObservationText,
  sendSeed = false,
  timeoutMs = 10_000,
  retries = 2,
  retryDelayMs = 200,
}: OpenEnvOptions): EnvironmentFactory {
  if (urls.length === 0)
    throw new Error('openEnvEnvironment: urls is empty; give one server URL per concurrent episode.');
  for (const url of urls) {
    if (!/^https?:\/\/[^/]+/.test(url)) throw new Error(`openEnvEnvironment: "${url}" is not an http(s) URL.`);
  }
  if (!(timeoutMs > 0)) throw new Error(`openEnvEnvironment: timeoutMs must be > 0, got ${timeoutMs}.`);
  if (!Number.isInteger(retries) || retries < 0)
    throw new Error(`openEnvEnvironment: retries must be a whole number ≥ 0, got ${retries}.`);
  const options = { action, observationText, sendSeed, timeoutMs, retries, retryDelayMs };
  const busy = new Map<string, number>();
  return (_row, { seed, episodeIndex }) => {
    const url = urls[episodeIndex % urls.length].replace(/\/+$/, '');
    const holder = busy.get(url);
    if (holder !== undefined) {
      throw new Error(
        `remote environment ${url}: still serving episode ${holder} when episode ${episodeIndex} started; an OpenEnv HTTP server holds one episode, so give at least as many urls as episodes run at once (prompts per step × group size).`,
      );
    }
    busy.set(url, episodeIndex);
    return new OpenEnvEpisode(url, options, seed, () => busy.delete(url));
  };
}
