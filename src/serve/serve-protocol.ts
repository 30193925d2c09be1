/**
 * The OpenAI-compatible request and response shapes `grpo serve` speaks (vLLM's dialect): a
 * /v1/completions or /v1/chat/completions body checked field by field into a typed generation job,
 * and the generated completions written back as OpenAI choices, with vLLM's `return_token_ids`
 * fields (`prompt_token_ids`, `token_ids`), the sampled tokens' logprobs and their top alternatives.
 *
 * Is not: the HTTP server (serve-server.ts), the event stream (serve-stream.ts) or the batching
 * (serve-batcher.ts). A field we cannot honour (echo, penalties, more than MAX_TOP_LOGPROBS
 * alternatives) is refused by name, never ignored.
 */
import type { ChatMessage } from '../model/chat-template.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import type { Completion, TokenLogprob } from '../sampling/index.js';

/** Most alternatives per token a request may ask for (vLLM's default --max-logprobs, OpenAI's top_logprobs bound). */
export const MAX_TOP_LOGPROBS = 20;

/** An OpenAI-shaped client error: HTTP 400 with `{error: {message, type, param}}`. */
export class RequestError extends Error {
  constructor(
    message: string,
    readonly param: string | null,
    readonly status = 400,
    readonly type = 'BadRequestError',
  ) {
    super(message);
  }
}

/** The sampling fields shared by both endpoints, checked. */
export interface SamplingFields {
  numSamples: number;
  /** null: chat without max_tokens, i.e. up to the model's last position (vLLM's default). */
  maxNewTokens: number | null;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  /** Extra stop ids (the model's end-of-sequence ids always stop too, as in vLLM). */
  stopTokenIds: number[];
  stopStrings: string[];
  seed: number | null;
  logprobs: boolean;
  /** Most likely alternatives per token (completions' `logprobs: N`, chat's `top_logprobs`); 0 = none. */
  topLogprobs: number;
  returnTokenIds: boolean;
  /** Server-sent events instead of one JSON answer; `includeUsage`: a last chunk with the usage. */
  stream: boolean;
  includeUsage: boolean;
}

type Body = Record<string, unknown>;

const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

function numberField(body: Body, name: string, fallback: number, ok: (v: number) => boolean, rule: string): number {
  const value = body[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || !ok(value))
    throw new RequestError(`${name} must be ${rule}, got ${JSON.stringify(value)}`, name);
  return value;
}

function tokenIdList(value: unknown, name: string, vocabularySize: number): number[] {
  if (!Array.isArray(value)) throw new RequestError(`${name} must be a list of token ids`, name);
  const bad = value.findIndex((id) => !isInteger(id) || id < 0 || id >= vocabularySize);
  if (bad >= 0)
    throw new RequestError(
      `${name}[${bad}] is ${JSON.stringify(value[bad])}, not a token id in [0, ${vocabularySize})`,
      name,
    );
  return value as number[];
}

/** The sampling fields of a request body; `chat` takes chat's forms (max_completion_tokens, boolean logprobs). */
export function parseSampling(body: Body, vocabularySize: number, chat: boolean): SamplingFields {
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw new RequestError('stream must be true or false', 'stream');
  const stream = body.stream === true;
  const streamOptions = body.stream_options;
  if (streamOptions !== undefined && streamOptions !== null) {
    const includeUsage = (streamOptions as Body).include_usage;
    if (!stream) throw new RequestError('stream_options needs stream: true', 'stream_options');
    if (typeof streamOptions !== 'object' || Array.isArray(streamOptions))
      throw new RequestError('stream_options must be an object like {"include_usage": true}', 'stream_options');
    if (includeUsage !== undefined && includeUsage !== null && typeof includeUsage !== 'boolean')
      throw new RequestError('stream_options.include_usage must be true or false', 'stream_options');
  }
  if (body.echo === true) throw new RequestError('echo: echoing the prompt is not supported', 'echo');
  if (body.best_of !== undefined && body.best_of !== null && body.best_of !== body.n && body.best_of !== 1)
    throw new RequestError('best_of: only best_of equal to n is supported', 'best_of');
  for (const penalty of ['presence_penalty', 'frequency_penalty', 'repetition_penalty']) {
    const neutral = penalty === 'repetition_penalty' ? 1 : 0;
    if (body[penalty] !== undefined && body[penalty] !== null && body[penalty] !== neutral)
      throw new RequestError(`${penalty}: penalties are not supported (only ${neutral})`, penalty);
  }
  const maxTokensName = chat && body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
  const topK = numberField(body, 'top_k', 0, (v) => Number.isInteger(v) && v >= -1, 'an integer >= -1 (-1 or 0 = off)');
  let logprobs = false;
  let topLogprobs = 0;
  const topRule = (v: number) => Number.isInteger(v) && v >= 0 && v <= MAX_TOP_LOGPROBS;
  if (chat) {
    if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean')
      throw new RequestError('logprobs must be true or false on chat completions', 'logprobs');
    logprobs = body.logprobs === true;
    topLogprobs = numberField(body, 'top_logprobs', 0, topRule, `an integer from 0 to ${MAX_TOP_LOGPROBS}`);
    if (topLogprobs > 0 && !logprobs) throw new RequestError('top_logprobs needs logprobs: true', 'top_logprobs');
  } else if (body.logprobs !== undefined && body.logprobs !== null) {
    topLogprobs = numberField(
      body,
      'logprobs',
      0,
      topRule,
      `an integer from 0 (the sampled tokens' logprobs) to ${MAX_TOP_LOGPROBS} (that many alternatives too)`,
    );
    logprobs = true;
  }
  const stop = body.stop;
  let stopStrings: string[] = [];
  // An empty stop string would cut every completion at its start (vLLM refuses it too).
  if (typeof stop === 'string' && stop.length > 0) stopStrings = [stop];
  else if (Array.isArray(stop) && stop.every((item) => typeof item === 'string' && item.length > 0))
    stopStrings = stop as string[];
  else if (stop !== undefined && stop !== null)
    throw new RequestError('stop must be a non-empty string or a list of them', 'stop');
  if (body.return_token_ids !== undefined && typeof body.return_token_ids !== 'boolean')
    throw new RequestError('return_token_ids must be true or false', 'return_token_ids');
  return {
    numSamples: numberField(
      body,
      'n',
      1,
      (v) => Number.isInteger(v) && v >= 1 && v <= 1024,
      'an integer from 1 to 1024',
    ),
    // OpenAI's legacy default of 16 for completions; chat defaults to the rest of the context.
    maxNewTokens:
      chat && body[maxTokensName] === undefined
        ? null
        : numberField(body, maxTokensName, 16, (v) => Number.isInteger(v) && v >= 1, 'a positive integer'),
    // Below 1e-5 (vLLM's own greedy threshold) logits / temperature can overflow float32 to ±Infinity
    // and the draw's logprobs become NaN; 0 is greedy.
    temperature: numberField(
      body,
      'temperature',
      1,
      (v) => v === 0 || (v >= 1e-5 && v <= 100),
      '0 (greedy) or a number from 1e-5 to 100',
    ),
    topK: topK === -1 ? 0 : topK,
    topP: numberField(body, 'top_p', 1, (v) => v > 0 && v <= 1, 'a number above 0 and at most 1'),
    minP: numberField(body, 'min_p', 0, (v) => v >= 0 && v < 1, 'a number from 0 to below 1'),
    stopTokenIds:
      body.stop_token_ids === undefined || body.stop_token_ids === null
        ? []
        : tokenIdList(body.stop_token_ids, 'stop_token_ids', vocabularySize),
    stopStrings,
    seed:
      body.seed === undefined || body.seed === null
        ? null
        : numberField(body, 'seed', 0, (v) => Number.isSafeInteger(v), 'an integer'),
    logprobs,
    topLogprobs,
    returnTokenIds: body.return_token_ids === true,
    stream,
    includeUsage: stream && (streamOptions as Body | undefined)?.include_usage === true,
  };
}

/**
 * The prompts of a /v1/completions body: text, a list of texts, token ids, or a list of id lists.
 * A list of texts is tokenized one text per turn of the event loop, so a long list does not hold
 * the server's other routes.
 */
export async function parseCompletionPrompts(
  body: Body,
  tokenizer: TextTokenizer,
  vocabularySize: number,
): Promise<number[][]> {
  const prompt = body.prompt;
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: true });
  let prompts: number[][];
  if (typeof prompt === 'string') prompts = [encode(prompt)];
  else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((item) => typeof item === 'string')) {
    prompts = [];
    for (const text of prompt as string[]) {
      prompts.push(encode(text));
      await new Promise((resolve) => setImmediate(resolve));
    }
  } else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((item) => typeof item === 'number'))
    prompts = [tokenIdList(prompt, 'prompt', vocabularySize)];
  else if (Array.isArray(prompt) && prompt.length > 0 && prompt.every(Array.isArray))
    prompts = prompt.map((ids, index) => tokenIdList(ids, `prompt[${index}]`, vocabularySize));
  else
    throw new RequestError(
      'prompt must be a string, a list of strings, a list of token ids or a list of token-id lists',
      'prompt',
    );
  const empty = prompts.findIndex((ids) => ids.length === 0);
  if (empty >= 0) throw new RequestError(`prompt ${empty} has no tokens (it needs at least one, e.g. BOS)`, 'prompt');
  return prompts;
}

/** The messages of a /v1/chat/completions body (string contents only). */
export function parseChatMessages(body: Body): ChatMessage[] {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new RequestError('messages must be a non-empty list of {role, content}', 'messages');
  return messages.map((message, index) => {
    const { role, content } = (message ?? {}) as Body;
    if (typeof role !== 'string' || typeof content !== 'string')
      throw new RequestError(`messages[${index}] needs a string role and a string content`, 'messages');
    return { role, content } as ChatMessage;
  });
}

/** Refuses prompts that do not fit the model's positions with max_tokens (vLLM: max_model_len). */
export function checkFits(prompts: number[][], maxNewTokens: number, maxPositions: number, field: string): void {
  const index = prompts.findIndex((ids) => ids.length + maxNewTokens > maxPositions);
  if (index >= 0)
    throw new RequestError(
      `prompt ${index} has ${prompts[index].length} tokens and ${field} is ${maxNewTokens}, together over the model's ${maxPositions} positions`,
      field,
    );
}

/** Generated tokens with their logprobs (and alternatives, when asked): a whole choice or a streamed piece. */
export interface TokenRun {
  ids: number[];
  logprobs: number[];
  topLogprobs?: TokenLogprob[][];
}

export interface FinishedChoice extends TokenRun {
  text: string;
  finishReason: 'stop' | 'length';
  /** The stop string or stop id that ended it, or null (vLLM's stop_reason). */
  stopReason: string | number | null;
}

/**
 * Applies stop strings after generation: the text is cut before the first stop string, and the ids
 * (and logprobs) end with the token that completed it, so ids and text stay consistent.
 */
export function finishChoice(completion: Completion, stopStrings: string[], tokenizer: TextTokenizer): FinishedChoice {
  const decode = (ids: number[]) => tokenizer.decode(ids, { skipSpecialTokens: true });
  const text = decode(completion.ids);
  const last = completion.ids[completion.ids.length - 1];
  const plain: FinishedChoice = {
    ids: completion.ids,
    logprobs: completion.logprobs,
    topLogprobs: completion.topLogprobs,
    text,
    finishReason: completion.finishReason,
    stopReason: completion.finishReason === 'stop' ? last : null,
  };
  const hits = stopStrings.map((stop) => ({ stop, at: text.indexOf(stop) })).filter(({ at }) => at >= 0);
  if (hits.length === 0) return plain;
  const first = hits.reduce((best, hit) => (hit.at < best.at ? hit : best));
  let end = 1;
  while (end < completion.ids.length && !decode(completion.ids.slice(0, end)).includes(first.stop)) end++;
  return {
    ids: completion.ids.slice(0, end),
    logprobs: completion.logprobs.slice(0, end),
    topLogprobs: completion.topLogprobs?.slice(0, end),
    text: text.slice(0, first.at),
    finishReason: 'stop',
    stopReason: first.stop,
  };
}

/** A token's text as the logprobs objects show it: the token decoded alone. */
const tokenText = (id: number, tokenizer: TextTokenizer): string => tokenizer.decode([id]);

/**
 * OpenAI's legacy completion logprobs object: the tokens, their logprobs, with `logprobs: N` a
 * {token: logprob} object of the N most likely per token (plus the sampled token when it is not
 * among them, as OpenAI and vLLM do; texts decoding alike keep the likelier), and each token's
 * offset in the text, counted from `firstOffset` (a streamed piece continues its choice's offsets).
 */
export function completionLogprobs(run: TokenRun, tokenizer: TextTokenizer, firstOffset = 0) {
  const tokens = run.ids.map((id) => tokenText(id, tokenizer));
  const offsets: number[] = [];
  tokens.reduce((offset, token) => (offsets.push(offset), offset + token.length), firstOffset);
  const top = run.topLogprobs?.map((alternatives, t) => {
    const entries: Record<string, number> = {};
    for (const { id, logprob } of alternatives) entries[tokenText(id, tokenizer)] ??= logprob;
    entries[tokens[t]] ??= run.logprobs[t];
    return entries;
  });
  return { tokens, token_logprobs: run.logprobs, top_logprobs: top ?? null, text_offset: offsets };
}

/** A token's text, logprob and UTF-8 bytes, as OpenAI's chat logprobs give each. */
const chatToken = (id: number, logprob: number, tokenizer: TextTokenizer) => {
  const token = tokenText(id, tokenizer);
  return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
};

/** OpenAI's chat logprobs object: each sampled token and, with `top_logprobs: N`, its N most likely alternatives. */
export function chatLogprobs(run: TokenRun, tokenizer: TextTokenizer) {
  return {
    content: run.ids.map((id, t) => ({
      ...chatToken(id, run.logprobs[t], tokenizer),
      top_logprobs: (run.topLogprobs?.[t] ?? []).map((top) => chatToken(top.id, top.logprob, tokenizer)),
    })),
  };
}
