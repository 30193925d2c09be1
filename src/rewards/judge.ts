/**
 * LLM-as-judge and rubric rewards: ask an OpenAI-compatible chat endpoint to grade a completion
 * against a rubric, parse the score, retry with exponential back-off on transport errors, 429/5xx
 * and unparseable replies, and cache results by input (identical requests are sent once).
 *
 * Configuration comes from options or the environment: base URL (`OPENAI_BASE_URL`), model
 * (`JUDGE_MODEL`, then `OPENAI_MODEL`), key (`OPENAI_API_KEY`, or the variable named by
 * `apiKeyEnv`). Not here: pairwise preference judging (see `group.ts` `pairwiseWinRate`, which
 * takes any async `prefers` function, e.g. one built on {@link chatCompletion}).
 */
import { promptText, stringColumn, type RewardFn } from './types.js';

/** Endpoint settings shared by the judge helpers. */
export interface JudgeEndpoint {
  /** e.g. `http://127.0.0.1:8000/v1`; default `OPENAI_BASE_URL`. */
  baseUrl?: string;
  /** Default `JUDGE_MODEL`, then `OPENAI_MODEL`. */
  model?: string;
  /** Environment variable with the API key (default `OPENAI_API_KEY`); no key sends no header. */
  apiKeyEnv?: string;
  /** Attempts per request (default 4). */
  maxAttempts?: number;
  /** First back-off delay; doubles per attempt (default 500 ms). */
  backoffMs?: number;
  /** Per-request time limit (default 60 000 ms). */
  requestTimeoutMs?: number;
  temperature?: number;
  maxTokens?: number;
}

/** One chat message. */
interface Message {
  role: 'system' | 'user';
  content: string;
}

function resolveEndpoint(endpoint: JudgeEndpoint): { url: string; model: string; key: string | undefined } {
  const baseUrl = endpoint.baseUrl ?? process.env.OPENAI_BASE_URL;
  const model = endpoint.model ?? process.env.JUDGE_MODEL ?? process.env.OPENAI_MODEL;
  if (!baseUrl) throw new Error('llmJudge: no endpoint; set the baseUrl option or OPENAI_BASE_URL');
  if (!model) throw new Error('llmJudge: no model; set the model option or JUDGE_MODEL / OPENAI_MODEL');
  return {
    url: `${baseUrl.replace(/\/+$/, '')}/chat/completions`,
    model,
    key: process.env[endpoint.apiKeyEnv ?? 'OPENAI_API_KEY'],
  };
}

class RetryableError extends Error {}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new Error('aborted'));
      },
      { once: true },
    );
  });

/**
 * Sends one chat request and returns `parse(reply text)`, retrying transport errors, 429/5xx and
 * replies `parse` rejects (by throwing), with exponential back-off.
 */
export async function chatCompletion<T>(
  messages: Message[],
  parse: (reply: string) => T,
  endpoint: JudgeEndpoint = {},
  signal?: AbortSignal,
): Promise<T> {
  const { url, model, key } = resolveEndpoint(endpoint);
  const attempts = endpoint.maxAttempts ?? 4;
  const body = JSON.stringify({
    model,
    messages,
    temperature: endpoint.temperature ?? 0,
    max_tokens: endpoint.maxTokens ?? 512,
  });
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await sleep((endpoint.backoffMs ?? 500) * 2 ** (attempt - 1), signal);
    try {
      const timeout = AbortSignal.timeout(endpoint.requestTimeoutMs ?? 60_000);
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      if (response.status === 429 || response.status >= 500) throw new RetryableError(`HTTP ${response.status}`);
      if (!response.ok)
        throw new Error(`llmJudge: HTTP ${response.status} from ${url}: ${(await response.text()).slice(0, 200)}`);
      const json = (await response.json()) as { choices?: Array<{ message?: { content?: string } }> };
      const content = json.choices?.[0]?.message?.content;
      if (typeof content !== 'string') throw new RetryableError('reply has no choices[0].message.content');
      try {
        return parse(content);
      } catch (error) {
        throw new RetryableError(error instanceof Error ? error.message : String(error));
      }
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!(error instanceof RetryableError) && error instanceof Error && error.message.startsWith('llmJudge:'))
        throw error;
      lastError = error;
    }
  }
  throw new Error(
    `llmJudge: gave up after ${attempts} attempts: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  );
}

/** The last "Score: N" (or, failing that, the last number) in a reply, checked against [min, max]. */
export function parseScore(reply: string, min: number, max: number): number {
  const labelled = [...reply.matchAll(/score\s*[:=]?\s*(-?\d+(?:\.\d+)?)/gi)];
  const numbers = labelled.length ? labelled.map((match) => match[1]!) : (reply.match(/-?\d+(?:\.\d+)?/g) ?? []);
  if (numbers.length === 0) throw new Error(`no score in reply ${JSON.stringify(reply.slice(0, 100))}`);
  const value = Number(numbers[numbers.length - 1]);
  if (value < min || value > max) throw new Error(`score ${value} outside [${min}, ${max}]`);
  return value;
}

/** YES → 1, NO → 0 from a strict yes/no reply (MediX-R1 style). */
export function parseYesNo(reply: string): number {
  const answer = /\b(yes|no)\b/i.exec(reply);
  if (!answer) throw new Error(`no YES/NO in reply ${JSON.stringify(reply.slice(0, 100))}`);
  return answer[1]!.toLowerCase() === 'yes' ? 1 : 0;
}

/** Rubric score r = Σ w_k s_k / Σ w_k (ALGORITHMS.md §5.11: [1,0,1] with weights [2,1,1] → 0.75). */
export function rubricScore(scores: readonly number[], weights: readonly number[]): number {
  if (scores.length !== weights.length)
    throw new Error(`rubricScore: ${scores.length} scores for ${weights.length} weights`);
  const total = weights.reduce((a, b) => a + b, 0);
  if (!(total > 0)) throw new Error('rubricScore: weights must sum to more than 0');
  return scores.reduce((sum, score, index) => sum + weights[index]! * score, 0) / total;
}

/** One rubric criterion, judged YES/NO. */
export interface Criterion {
  description: string;
  weight?: number;
}

/** Options of {@link llmJudge}. */
export interface LlmJudgeOptions extends JudgeEndpoint {
  /** What a good answer is; goes into the system message. */
  rubric?: string;
  /** `score`: one number in [min, max], scaled to [0, 1]; `yes-no`: 1/0; `criteria`: weighted YES/NO per criterion. */
  mode?: 'score' | 'yes-no' | 'criteria';
  min?: number;
  max?: number;
  criteria?: Criterion[];
  /** Optional column with a reference answer shown to the judge. */
  referenceColumn?: string;
  /** Most cached results kept (default 10 000). */
  cacheSize?: number;
}

function judgeMessages(
  options: LlmJudgeOptions,
  prompt: string,
  completion: string,
  reference: string | null,
): Message[] {
  const {
    mode = 'score',
    min = 0,
    max = 10,
    rubric = 'Judge how correct, complete and helpful the response is.',
  } = options;
  const instructions =
    mode === 'score'
      ? `Reply with "Score: N" where N is a number from ${min} to ${max}.`
      : mode === 'yes-no'
        ? 'Reply with exactly YES or NO.'
        : `For each criterion reply with one line "k: YES" or "k: NO".\n${(options.criteria ?? []).map((criterion, index) => `${index + 1}. ${criterion.description}`).join('\n')}`;
  const user = [
    `Prompt:\n${prompt}`,
    `Response:\n${completion}`,
    reference === null ? '' : `Reference answer:\n${reference}`,
  ]
    .filter(Boolean)
    .join('\n\n');
  return [
    { role: 'system', content: `You are a strict grader. ${rubric}\n${instructions}` },
    { role: 'user', content: user },
  ];
}

function criteriaParser(criteria: readonly Criterion[]): (reply: string) => number {
  return (reply) => {
    const scores = criteria.map((_, index) => {
      const line = new RegExp(`^\\s*${index + 1}\\s*[:.)]\\s*(yes|no)\\b`, 'im').exec(reply);
      if (!line) throw new Error(`no verdict for criterion ${index + 1}`);
      return line[1]!.toLowerCase() === 'yes' ? 1 : 0;
    });
    return rubricScore(
      scores,
      criteria.map((criterion) => criterion.weight ?? 1),
    );
  };
}

/**
 * A reward graded by an LLM judge over an OpenAI-compatible endpoint, in [0, 1]; cached by input.
 * @example llmJudge({ rubric: 'Is the answer polite and correct?', mode: 'yes-no' })
 */
export function llmJudge(options: LlmJudgeOptions = {}): RewardFn {
  const { mode = 'score', min = 0, max = 10, criteria = [], cacheSize = 10_000 } = options;
  if (mode === 'criteria' && criteria.length === 0)
    throw new Error('llmJudge: mode "criteria" needs at least one criterion');
  if (!(max > min)) throw new Error(`llmJudge: need max > min, got [${min}, ${max}]`);
  resolveEndpoint(options); // a missing URL or model is reported when the reward is built, before any compute
  const parse =
    mode === 'score'
      ? (reply: string) => (parseScore(reply, min, max) - min) / (max - min)
      : mode === 'yes-no'
        ? parseYesNo
        : criteriaParser(criteria);
  const cache = new Map<string, Promise<number>>();
  return ({ prompt, completion, row, signal }) => {
    const reference = options.referenceColumn ? stringColumn(row, options.referenceColumn, 'llmJudge') : null;
    const messages = judgeMessages(options, promptText(prompt), completion, reference);
    const key = JSON.stringify(messages);
    let result = cache.get(key);
    if (!result) {
      result = chatCompletion(messages, parse, options, signal);
      result.catch(() => cache.delete(key)); // failures are not cached
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      cache.set(key, result);
    }
    return result;
  };
}
