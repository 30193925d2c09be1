/**
 * The bounds `grpo serve` holds every request to, each checked before the work it bounds and each
 * refused with a 4xx naming the field: body bytes and JSON nesting (json-body.ts, before parsing),
 * the number of prompts and their characters (before tokenizing), prompt tokens (before prefill),
 * sequences and generated tokens (prompts × n × max_tokens, before queueing: one request is held to
 * one batch's limits), its KV cache (before queueing: within the server's KV-cache memory), and an
 * adapter's rank and file sizes (before allocating or reading it).
 *
 * Is not: the request's field-by-field parsing (serve-protocol.ts) or the batching (serve-batcher.ts).
 */
import type { AdapterLimits } from '../model/adapter-files.js';
import { jobKvBytes, type GenerationJob } from './serve-batcher.js';
import { RequestError } from './serve-protocol.js';

export interface ServeLimits extends AdapterLimits {
  /** Most bytes in a request body (413 above). */
  maxBodyBytes: number;
  /** Most levels of nested JSON arrays and objects in a body (a chat request needs 3). */
  maxJsonDepth: number;
  /** Most prompts in one /v1/completions request (a list of texts or of token-id lists). */
  maxPrompts: number;
  /** Most characters of prompt text (all prompts, or all message contents) in one request, counted before tokenizing. */
  maxPromptChars: number;
  /** Most prompt tokens in one request (all prompts together), counted before prefill. */
  maxPromptTokens: number;
}

/**
 * Defaults: bodies far above any real batch of prompts; 65,536 characters, which one core tokenizes
 * in about half a second (tokenizing cannot be sliced, so this is the longest a prompt holds the
 * thread; a list is tokenized one text per turn); prompt tokens a prefill slices anyway; 512
 * prompts, the most that fit the default 512 sequences per batch; rank 512 and 1 GiB per adapter.
 */
export const SERVE_LIMIT_DEFAULTS: ServeLimits = {
  maxBodyBytes: 8 * 1024 * 1024,
  maxJsonDepth: 32,
  maxPrompts: 512,
  maxPromptChars: 65_536,
  maxPromptTokens: 65_536,
  maxAdapterRank: 512,
  maxAdapterBytes: 1024 * 1024 * 1024,
};

/** The characters of a /v1/completions `prompt` (text or a list of texts), refused over the limits before tokenizing. */
export function checkPromptText(prompt: unknown, limits: ServeLimits): void {
  // A list of numbers is one prompt of token ids (its length is checked as tokens); any other list is prompts.
  const count = Array.isArray(prompt) && typeof prompt[0] !== 'number' ? prompt.length : 1;
  if (count > limits.maxPrompts)
    throw new RequestError(
      `prompt has ${count} entries, over this server's limit of ${limits.maxPrompts} prompts per request (--max-prompts)`,
      'prompt',
    );
  const texts = typeof prompt === 'string' ? [prompt] : Array.isArray(prompt) ? prompt : [];
  let characters = 0;
  for (const text of texts) if (typeof text === 'string') characters += text.length;
  if (characters > limits.maxPromptChars)
    throw new RequestError(
      `prompt has ${characters} characters, over this server's limit of ${limits.maxPromptChars} per request (--max-prompt-chars)`,
      'prompt',
    );
}

/** The characters of a chat request's message contents, refused over the limit before the template and tokenizer run. */
export function checkMessageText(messages: unknown, limits: ServeLimits): void {
  if (!Array.isArray(messages)) return;
  let characters = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (typeof content === 'string') characters += content.length;
  }
  if (characters > limits.maxPromptChars)
    throw new RequestError(
      `messages have ${characters} characters, over this server's limit of ${limits.maxPromptChars} per request (--max-prompt-chars)`,
      'messages',
    );
}

/** The prompt tokens of a request (after tokenizing or as sent), refused over the limit before any prefill. */
export function checkPromptTokens(prompts: number[][], limits: ServeLimits, field: string): void {
  const tokens = prompts.reduce((total, ids) => total + ids.length, 0);
  if (tokens > limits.maxPromptTokens)
    throw new RequestError(
      `${field} has ${tokens} tokens, over this server's limit of ${limits.maxPromptTokens} prompt tokens per request (--max-prompt-tokens)`,
      field,
    );
}

/**
 * prompts × n sequences and prompts × n × max_tokens generated tokens, refused when over one
 * batch's limits: a request is never larger than the batches every request shares.
 */
export function checkGenerationSize(
  promptCount: number,
  numSamples: number,
  maxNewTokens: number,
  batch: { maxSequences: number; maxBatchTokens: number },
  maxTokensField: string,
): void {
  const sequences = promptCount * numSamples;
  if (sequences > batch.maxSequences)
    throw new RequestError(
      `${promptCount} prompt(s) × n ${numSamples} = ${sequences} sequences, over this server's limit of ${batch.maxSequences} per batch (--max-sequences)`,
      'n',
    );
  const tokens = sequences * maxNewTokens;
  if (tokens > batch.maxBatchTokens)
    throw new RequestError(
      `${promptCount} prompt(s) × n ${numSamples} × ${maxTokensField} ${maxNewTokens} = ${tokens} generated tokens, over this server's limit of ${batch.maxBatchTokens} per batch (--max-batch-tokens)`,
      maxTokensField,
    );
}

/** Bytes as KiB below a MiB, else MiB, one decimal. */
const sizeText = (bytes: number): string =>
  bytes < 1024 ** 2 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

/**
 * The KV cache a request needs while it decodes (jobKvBytes: its prompts' prefill caches and its
 * sequences' max_tokens of keys and values), refused before queueing when over the memory every
 * batch shares (--max-kv-cache-mb); under it, the batcher makes it wait until its caches fit.
 */
export function checkKvCache(
  job: Pick<GenerationJob, 'model' | 'prompts' | 'numSamples' | 'maxNewTokens'>,
  maxKvCacheBytes: number,
  maxTokensField: string,
): void {
  const bytes = jobKvBytes(job);
  if (bytes <= maxKvCacheBytes) return;
  const promptTokens = job.prompts.reduce((total, ids) => total + ids.length, 0);
  const sequences = job.prompts.length * job.numSamples;
  throw new RequestError(
    `${promptTokens} prompt tokens and ${sequences} sequence(s) × ${maxTokensField} ${job.maxNewTokens} need ${sizeText(bytes)} of KV cache, over this server's limit of ${sizeText(maxKvCacheBytes)} (--max-kv-cache-mb)`,
    maxTokensField,
  );
}
