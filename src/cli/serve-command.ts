/**
 * `grpo serve`: loads a checkpoint (and optionally a PEFT LoRA adapter) and serves it behind the
 * OpenAI-compatible API of serve-server.ts until the process is stopped.
 *
 * Is not: the server itself; this file only loads the model and prints where it listens.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { renderChatTemplate } from '../model/chat-template.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { checkTokenizerFitsModel, loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import type { ServeLimits } from '../serve/serve-limits.js';
import { servedNameOf, startServe, type RunningServer } from '../serve/serve-server.js';

export interface ServeCommandOptions {
  /** Checkpoint folder (HF layout) served as the base model. */
  model: string;
  /** A PEFT LoRA adapter folder served on top of the base, and the default for requests that name no model. */
  adapter?: string;
  /** The name the base model is served under (default: its folder name). */
  servedModelName?: string;
  /** A Jinja chat template file for /v1/chat/completions, in place of the tokenizer's (vLLM's --chat-template). */
  chatTemplate?: string;
  port?: number;
  host?: string;
  /** Most sequences and generated tokens per decode batch (and so per request). */
  maxSequences?: number;
  maxBatchTokens?: number;
  /** Most bytes of KV cache held by every decoding batch together. */
  maxKvCacheBytes?: number;
  /** Bounds on requests and adapters; undefined fields keep SERVE_LIMIT_DEFAULTS. */
  limits?: Partial<ServeLimits>;
}

/**
 * The --chat-template file's text, checked before the model loads: the file exists and the template
 * renders a one-message conversation (a template that cannot do that cannot serve chat requests).
 */
function readChatTemplate(path: string): string {
  if (!existsSync(path) || !statSync(path).isFile())
    throw new Error(`--chat-template: ${path} is not a file (a Jinja chat template, e.g. chat_template.jinja)`);
  const template = readFileSync(path, 'utf8');
  try {
    renderChatTemplate(template, [{ role: 'user', content: 'Hello' }], { bosToken: null, eosToken: null });
  } catch (error) {
    throw new Error(`--chat-template ${path}: ${(error as Error).message}`);
  }
  return template;
}

export async function runServeCommand(
  options: ServeCommandOptions,
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<RunningServer> {
  const chatTemplate = options.chatTemplate === undefined ? undefined : readChatTemplate(options.chatTemplate);
  const checkpoint = loadCheckpoint(options.model);
  const tokenizer = loadTokenizer(options.model);
  checkTokenizerFitsModel(tokenizer, checkpoint.config, options.model);
  const modelName = options.servedModelName ?? servedNameOf(options.model);
  const adapterName = options.adapter !== undefined ? servedNameOf(options.adapter) : undefined;
  const running = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName,
    tokenizer,
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    adapters: adapterName !== undefined ? { [adapterName]: options.adapter! } : {},
    defaultModel: adapterName,
    chatTemplate,
    host: options.host,
    port: options.port,
    maxSequences: options.maxSequences,
    maxBatchTokens: options.maxBatchTokens,
    maxKvCacheBytes: options.maxKvCacheBytes,
    // Flags left out arrive as undefined: drop them so the defaults hold.
    limits: Object.fromEntries(Object.entries(options.limits ?? {}).filter(([, value]) => value !== undefined)),
  });
  write(
    `grpo serve: ${modelName}${adapterName ? ` (+ adapter ${adapterName}, the default)` : ''} at ${running.url}/v1`,
  );
  return running;
}
