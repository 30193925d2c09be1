/**
 * `grpo serve`'s HTTP server: an OpenAI-compatible engine over one base checkpoint and any number of
 * PEFT LoRA adapters on top of it (vLLM's runtime LoRA API). Routes: GET /v1/models,
 * POST /v1/completions, POST /v1/chat/completions, POST /v1/load_lora_adapter and
 * POST /v1/unload_lora_adapter. Generation goes through the decode batcher, so concurrent requests
 * share decode batches, and batches decode in slices, so the routes keep answering while one runs.
 * Every request is held to the bounds of serve-limits.ts before the work they bound. Errors are
 * OpenAI's `{error: {message, type, param}}`.
 *
 * Is not: a production server (no auth, no streaming, no top-k alternatives in logprobs), or the
 * `grpo serve` command line (serve-command.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, resolve } from 'node:path';
import { loadAdapter } from '../model/adapter-files.js';
import { encodeChat } from '../model/chat-template.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { BodyError, readJsonBody } from './json-body.js';
import { DecodeBatcher, type BatcherOptions } from './serve-batcher.js';
import {
  checkGenerationSize,
  checkKvCache,
  checkMessageText,
  checkPromptText,
  checkPromptTokens,
  SERVE_LIMIT_DEFAULTS,
  type ServeLimits,
} from './serve-limits.js';
import {
  chatLogprobs,
  checkFits,
  completionLogprobs,
  finishChoice,
  parseChatMessages,
  parseCompletionPrompts,
  parseSampling,
  RequestError,
  type FinishedChoice,
} from './serve-protocol.js';

export interface ServeOptions extends BatcherOptions {
  /** The base model (no adapters attached) and the name it is served under. */
  model: Transformer;
  modelName: string;
  tokenizer: TextTokenizer;
  /** The model's end-of-sequence ids: they always stop generation. */
  stopTokenIds: number[];
  /** Adapters to load at start, by served name. */
  adapters?: Record<string, string>;
  /** The model a request without `model` gets: the base, or an adapter's name. */
  defaultModel?: string;
  host?: string;
  port?: number;
  /** Bounds on requests and runtime-loaded adapters (SERVE_LIMIT_DEFAULTS for those left out). */
  limits?: Partial<ServeLimits>;
}

export interface RunningServer {
  url: string;
  server: Server;
  batcher: DecodeBatcher;
  close(): Promise<void>;
}

/** The JSON object a request sends, within the body limits (413 or 400 naming the bound otherwise). */
async function readBody(request: IncomingMessage, limits: ServeLimits): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await readJsonBody(request, { maxBytes: limits.maxBodyBytes, maxDepth: limits.maxJsonDepth });
  } catch (error) {
    if (error instanceof BodyError) throw new RequestError(error.message, null, error.status);
    throw error;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new RequestError('request body must be a JSON object', null);
  return value as Record<string, unknown>;
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(value));
}

/** Starts the server; resolves once it listens (port 0 = any free port). */
export async function startServe(options: ServeOptions): Promise<RunningServer> {
  const { tokenizer, modelName } = options;
  const config = options.model.config;
  const limits: ServeLimits = { ...SERVE_LIMIT_DEFAULTS, ...options.limits };
  const models = new Map<string, { model: Transformer; root: string }>([
    [modelName, { model: options.model, root: modelName }],
  ]);
  /** `confined`: the folder came from a client, so no file may link out of it (see adapter-files.ts). */
  const loadNamed = (name: string, path: string, confined: boolean): void => {
    // The base weights are shared, never copied: an adapter costs only its own tensors.
    const model = new Transformer(config, options.model.parameters);
    model.attachAdapters(loadAdapter(path, config, { limits, confined }));
    models.set(name, { model, root: resolve(path) });
  };
  // The operator's own folders (--adapter) may be links, e.g. into a Hugging Face cache.
  for (const [name, path] of Object.entries(options.adapters ?? {})) loadNamed(name, path, false);
  const defaultModel = options.defaultModel ?? modelName;
  const batcher = new DecodeBatcher(options);
  const created = Math.floor(Date.now() / 1000);
  let counter = 0;

  const served = (body: Record<string, unknown>) => {
    const name = body.model === undefined || body.model === null ? defaultModel : body.model;
    const entry = typeof name === 'string' ? models.get(name) : undefined;
    if (!entry)
      throw new RequestError(
        `model ${JSON.stringify(name)} is not served; served: ${[...models.keys()].join(', ')}`,
        'model',
        404,
        'NotFoundError',
      );
    return { name: name as string, model: entry.model };
  };

  /** Runs the prompts through the batcher; returns each prompt's choices in OpenAI index order. */
  const complete = async (body: Record<string, unknown>, prompts: number[][], chat: boolean) => {
    const { name, model } = served(body);
    const sampling = parseSampling(body, config.vocabSize, chat);
    const longest = Math.max(...prompts.map((ids) => ids.length));
    // Chat without max_tokens: the rest of the context, at least 1 (so a full prompt is refused, not run).
    const maxNewTokens = sampling.maxNewTokens ?? Math.max(1, config.maxPositionEmbeddings - longest);
    const maxTokensField = chat && body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';
    checkFits(prompts, maxNewTokens, config.maxPositionEmbeddings, maxTokensField);
    checkGenerationSize(prompts.length, sampling.numSamples, maxNewTokens, batcher.limits, maxTokensField);
    checkKvCache(
      { model, prompts, numSamples: sampling.numSamples, maxNewTokens },
      batcher.limits.maxKvCacheBytes,
      maxTokensField,
    );
    const completions = await batcher.submit({
      modelName: name,
      model,
      prompts,
      numSamples: sampling.numSamples,
      maxNewTokens,
      temperature: sampling.temperature,
      topK: sampling.topK,
      topP: sampling.topP,
      minP: sampling.minP,
      stopTokenIds: [...new Set([...options.stopTokenIds, ...sampling.stopTokenIds])],
      seed: sampling.seed,
    });
    const choices: { promptIndex: number; choice: FinishedChoice }[] = [];
    for (const completion of completions) {
      choices.push({
        promptIndex: completion.promptIndex,
        choice: finishChoice(completion, sampling.stopStrings, tokenizer),
      });
      // Decoding 512 long completions takes a while: other routes get turns in between.
      if (choices.length % 32 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const completionTokens = choices.reduce((total, { choice }) => total + choice.ids.length, 0);
    const promptTokens = prompts.reduce((total, ids) => total + ids.length, 0);
    return {
      name,
      sampling,
      choices,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    };
  };

  const handleCompletions = async (body: Record<string, unknown>) => {
    checkPromptText(body.prompt, limits);
    const prompts = await parseCompletionPrompts(body, tokenizer, config.vocabSize);
    checkPromptTokens(prompts, limits, 'prompt');
    const { name, sampling, choices, usage } = await complete(body, prompts, false);
    return {
      id: `cmpl-${++counter}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: name,
      choices: choices.map(({ promptIndex, choice }, index) => ({
        index,
        text: choice.text,
        logprobs: sampling.logprobs ? completionLogprobs(choice, tokenizer) : null,
        finish_reason: choice.finishReason,
        stop_reason: choice.stopReason,
        ...(sampling.returnTokenIds ? { prompt_token_ids: prompts[promptIndex], token_ids: choice.ids } : {}),
      })),
      usage,
    };
  };

  const handleChat = async (body: Record<string, unknown>) => {
    checkMessageText(body.messages, limits);
    const messages = parseChatMessages(body);
    let promptIds: number[];
    try {
      promptIds = encodeChat(tokenizer, messages, { addGenerationPrompt: true });
    } catch (error) {
      throw new RequestError(`messages: ${(error as Error).message}`, 'messages');
    }
    checkPromptTokens([promptIds], limits, 'messages');
    const { name, sampling, choices, usage } = await complete(body, [promptIds], true);
    return {
      id: `chatcmpl-${++counter}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: name,
      ...(sampling.returnTokenIds ? { prompt_token_ids: promptIds } : {}),
      choices: choices.map(({ choice }: { choice: FinishedChoice }, index) => ({
        index,
        message: { role: 'assistant', content: choice.text },
        logprobs: sampling.logprobs ? chatLogprobs(choice, tokenizer) : null,
        finish_reason: choice.finishReason,
        stop_reason: choice.stopReason,
        ...(sampling.returnTokenIds ? { token_ids: choice.ids } : {}),
      })),
      usage,
    };
  };

  const handleLoad = (body: Record<string, unknown>): string => {
    const { lora_name: name, lora_path: path, load_inplace: inPlace } = body;
    if (typeof name !== 'string' || name.length === 0)
      throw new RequestError('lora_name must be a non-empty string', 'lora_name');
    if (typeof path !== 'string' || path.length === 0)
      throw new RequestError('lora_path must be a non-empty string', 'lora_path');
    if (name === modelName) throw new RequestError(`lora_name "${name}" is the base model's name`, 'lora_name');
    if (models.has(name) && inPlace !== true)
      throw new RequestError(
        `lora_name: the lora adapter '${name}' has already been loaded; pass load_inplace: true to replace it`,
        'lora_name',
      );
    try {
      loadNamed(name, path, true);
    } catch (error) {
      throw new RequestError(`lora_path: ${(error as Error).message}`, 'lora_path');
    }
    return `Success: LoRA adapter '${name}' added successfully.`;
  };

  const handleUnload = (body: Record<string, unknown>): string => {
    const name = body.lora_name;
    if (typeof name !== 'string' || name === modelName || !models.has(name))
      throw new RequestError(
        `lora_name ${JSON.stringify(name)} is not a loaded adapter`,
        'lora_name',
        404,
        'NotFoundError',
      );
    models.delete(name);
    return `Success: LoRA adapter '${name}' removed successfully.`;
  };

  const route = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/v1/models') {
      sendJson(response, 200, {
        object: 'list',
        data: [...models].map(([id, entry]) => ({
          id,
          object: 'model',
          created,
          owned_by: 'grpo',
          root: entry.root,
          parent: id === modelName ? null : modelName,
          max_model_len: config.maxPositionEmbeddings,
        })),
      });
      return;
    }
    const handlers: Record<string, (body: Record<string, unknown>) => unknown> = {
      '/v1/completions': handleCompletions,
      '/v1/chat/completions': handleChat,
      '/v1/load_lora_adapter': handleLoad,
      '/v1/unload_lora_adapter': handleUnload,
    };
    const handler = handlers[path];
    if (!handler || request.method !== 'POST')
      throw new RequestError(`${request.method} ${path} is not a route of grpo serve`, null, 404, 'NotFoundError');
    const result = await handler(await readBody(request, limits));
    if (typeof result === 'string') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(result);
    } else sendJson(response, 200, result);
  };

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      const known = error instanceof RequestError;
      const status = known ? error.status : 500;
      sendJson(response, status, {
        error: {
          message: (error as Error).message,
          type: known ? error.type : 'InternalServerError',
          param: known ? error.param : null,
          code: status,
        },
      });
    });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8000, options.host ?? '127.0.0.1', () => resolveListen());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    server,
    batcher,
    close: () =>
      new Promise((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}

/** The name a model folder is served under by default: its folder name. */
export const servedNameOf = (directory: string): string => basename(resolve(directory));
