/**
 * HTTP to an OpenAI-compatible inference engine, for the 'openai' rollout: POST a JSON body, with
 * a per-request timeout, a Bearer key if configured, and retries with doubling back-off on what may
 * pass (connection refused or dropped, timeout, HTTP 5xx or 429, an answer that is not the JSON
 * expected). After the retries it throws one error saying what the engine did on the last try, so
 * the run stops with that reason (the loop marks it failed; saved checkpoints are untouched).
 *
 * Is not: the request or response shapes of any endpoint (openai-rollout.ts validates those).
 */

export interface EngineClientSettings {
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  retries: number;
  retryDelayMs: number;
}

/** A failure a retry cannot fix (HTTP 4xx other than 429): thrown at once. */
class PermanentEngineError extends Error {}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

function describeFailure(error: unknown, timeoutMs: number): string {
  const name = (error as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') return `no answer within rollout.timeoutMs (${timeoutMs} ms)`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return (error as Error).message;
}

export class EngineClient {
  constructor(private readonly settings: EngineClientSettings) {}

  /**
   * POSTs `body` to `{baseUrl}/{path}` and returns `parse(text)`; `parse` throws to reject an answer
   * (it then counts as malformed and is retried).
   */
  async post<T>(path: string, body: unknown, parse: (text: string) => T): Promise<T> {
    const { baseUrl, apiKey, timeoutMs, retries, retryDelayMs } = this.settings;
    const url = `${baseUrl.replace(/\/+$/, '')}/${path}`;
    let lastFailure = '';
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await sleep(retryDelayMs * 2 ** (attempt - 1));
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text();
        if (response.status >= 400) {
          const failure = `HTTP ${response.status}: ${text.slice(0, 500)}`;
          if (response.status < 500 && response.status !== 429) throw new PermanentEngineError(failure);
          lastFailure = failure;
          continue;
        }
        try {
          return parse(text);
        } catch (error) {
          lastFailure = `a malformed answer: ${(error as Error).message}`;
        }
      } catch (error) {
        if (error instanceof PermanentEngineError)
          throw new Error(`inference engine at ${url} refused the request: ${error.message}`);
        lastFailure = describeFailure(error, timeoutMs);
      }
    }
    throw new Error(
      `inference engine at ${url} failed ${retries + 1} time(s) (rollout.retries = ${retries}); last: ${lastFailure}`,
    );
  }
}
