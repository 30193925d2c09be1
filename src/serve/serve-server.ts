/**
 * `grpo serve`'s HTTP server: an OpenAI-compatible engine over one base checkpoint and any number of
 * PEFT LoRA adapters on top of it (vLLM's runtime LoRA API). Routes: GET /v1/models,
 * POST /v1/completions, POST /v1/chat/completions, POST /v1/load_lora_adapter and
 * POST /v1/unload_lora_adapter. Generation goes through the decode batcher, so concurrent requests
 * share decode batches, and batches decode in slices, so the routes keep answering while one runs.
 * Every request is held to the bounds of serve-limits.ts before the work they bound. Errors are
 * OpenAI's `{error: {message, type, param}}`; a `model` that is not served is a 404 on every route.
 * `stream: true` answers with server-sent events (serve-stream.ts) as the batch decodes; a client
 * that goes away (streaming or not) gives its place in the batcher back.
 *
 * Is not: a production server (no auth), or the `grpo serve` command line (serve-command.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, resolve } from 'node:path';
import { loadAdapter } from '../model/adapter-files.js';
import { renderChatTemplate, type ChatMessage } from '../model/chat-template.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { BodyError, readJsonBody } from './json-body.js';
import { DecodeBatcher, type BatcherOptions, type GenerationJob } from './serve-batcher.js';
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
  type SamplingFields,
  type TokenRun,
} from './serve-protocol.js';
import { ChoiceStreams, openEventStream, type StreamPiece } from './serve-stream.js';

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
  /** A Jinja chat template for /v1/chat/completions in place of the tokenizer's (`--chat-template`). */
  chatTemplate?: string;
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

  /** The generation job of a request, held to the fit, size and KV-cache bounds before it is queued. */
  const jobOf = (
    target: ReturnType<typeof served>,
    sampling: SamplingFields,
    prompts: number[][],
    maxTokensField: string,
  ): GenerationJob => {
    const longest = Math.max(...prompts.map((ids) => ids.length));
    // Chat without max_tokens: the rest of the context, at least 1 (so a full prompt is refused, not run).
    const maxNewTokens = sampling.maxNewTokens ?? Math.max(1, config.maxPositionEmbeddings - longest);
    checkFits(prompts, maxNewTokens, config.maxPositionEmbeddings, maxTokensField);
    checkGenerationSize(prompts.length, sampling.numSamples, maxNewTokens, batcher.limits, maxTokensField);
    checkKvCache(
      { model: target.model, prompts, numSamples: sampling.numSamples, maxNewTokens },
      batcher.limits.maxKvCacheBytes,
      maxTokensField,
    );
    return {
      modelName: target.name,
      model: target.model,
      prompts,
      numSamples: sampling.numSamples,
      maxNewTokens,
      temperature: sampling.temperature,
      topK: sampling.topK,
      topP: sampling.topP,
      minP: sampling.minP,
      stopTokenIds: [...new Set([...options.stopTokenIds, ...sampling.stopTokenIds])],
      seed: sampling.seed,
      topLogprobs: sampling.topLogprobs,
    };
  };

  const usageOf = (prompts: number[][], choices: FinishedChoice[]) => {
    const completionTokens = choices.reduce((total, choice) => total + choice.ids.length, 0);
    const promptTokens = prompts.reduce((total, ids) => total + ids.length, 0);
    return {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
  };

  /** Runs the job; returns its choices, finished (stop strings applied), in OpenAI index order. */
  const finishedChoices = async (job: GenerationJob, sampling: SamplingFields, signal: AbortSignal) => {
    const completions = await batcher.submit(job, { signal });
    const choices: FinishedChoice[] = [];
    for (const completion of completions) {
      choices.push(finishChoice(completion, sampling.stopStrings, tokenizer));
      // Decoding 512 long completions takes a while: other routes get turns in between.
      if (choices.length % 32 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    return choices;
  };

  /**
   * Runs the job and streams it: the `opening` chunks (chat's role deltas), a chunk per piece of
   * each choice as the batch decodes (`choiceOf` shapes its choice), the usage chunk when
   * stream_options.include_usage asks for it, and `[DONE]`.
   */
  const streamChoices = async (
    response: ServerResponse,
    signal: AbortSignal,
    job: GenerationJob,
    sampling: SamplingFields,
    envelope: { id: string; object: string; model: string },
    opening: Record<string, unknown>[],
    choiceOf: (piece: StreamPiece) => unknown,
  ): Promise<void> => {
    const events = openEventStream(response);
    const streamCreated = Math.floor(Date.now() / 1000); // one time for every chunk, as vLLM sends
    const chunk = (fields: Record<string, unknown>) => ({
      ...envelope,
      created: streamCreated,
      ...fields,
      ...(sampling.includeUsage && fields.usage === undefined ? { usage: null } : {}),
    });
    for (const fields of opening) events.send(chunk(fields));
    const streams = new ChoiceStreams(
      job.prompts.length * job.numSamples,
      sampling.stopStrings,
      tokenizer,
      job.maxNewTokens,
    );
    const send = (pieces: StreamPiece[]) => {
      for (const piece of pieces) events.send(chunk({ choices: [choiceOf(piece)] }));
    };
    const completions = await batcher.submit(job, { signal, onProgress: (growing) => send(streams.progress(growing)) });
    send(streams.finish(completions));
    if (sampling.includeUsage) events.send(chunk({ choices: [], usage: usageOf(job.prompts, streams.finished) }));
    events.end();
  };

  /** A completions answer (or, with stream: true, its stream: then null, the response is written). */
  const handleCompletions = async (body: Record<string, unknown>, response: ServerResponse, signal: AbortSignal) => {
    const target = served(body);
    checkPromptText(body.prompt, limits);
    const prompts = await parseCompletionPrompts(body, tokenizer, config.vocabSize);
    checkPromptTokens(prompts, limits, 'prompt');
    const sampling = parseSampling(body, config.vocabSize, false);
    const job = jobOf(target, sampling, prompts, 'max_tokens');
    const envelope = { id: `cmpl-${++counter}`, object: 'text_completion', model: target.name };
    const choiceOf = (
      index: number,
      text: string,
      run: TokenRun,
      firstOffset: number,
      finished: FinishedChoice | null,
      first: boolean,
    ) => ({
      index,
      text,
      logprobs: sampling.logprobs ? completionLogprobs(run, tokenizer, firstOffset) : null,
      finish_reason: finished?.finishReason ?? null,
      stop_reason: finished?.stopReason ?? null,
      ...(sampling.returnTokenIds
        ? {
            ...(first ? { prompt_token_ids: prompts[Math.floor(index / sampling.numSamples)] } : {}),
            token_ids: run.ids,
          }
        : {}),
    });
    if (sampling.stream) {
      await streamChoices(response, signal, job, sampling, envelope, [], (piece) =>
        choiceOf(piece.index, piece.text, piece, piece.firstOffset, piece.finished, piece.first),
      );
      return null;
    }
    const choices = await finishedChoices(job, sampling, signal);
    return {
      ...envelope,
      created: Math.floor(Date.now() / 1000),
      choices: choices.map((choice, index) => choiceOf(index, choice.text, choice, 0, choice, true)),
      usage: usageOf(prompts, choices),
    };
  };

  const chatTemplate = options.chatTemplate ?? tokenizer.chatTemplate;
  /** The chat prompt's ids: the template rendered with the generation prompt, tokenized without adding special tokens again. */
  const encodeMessages = (messages: ChatMessage[]): number[] => {
    if (chatTemplate === null)
      throw new RequestError(
        'messages: this model has no chat template (no "chat_template" in tokenizer_config.json, no chat_template.jinja); start grpo serve with --chat-template FILE, or send plain prompts to /v1/completions',
        'messages',
      );
    try {
      const text = renderChatTemplate(chatTemplate, messages, tokenizer, { addGenerationPrompt: true });
      return tokenizer.encode(text, { addSpecialTokens: false });
    } catch (error) {
      throw new RequestError(`messages: ${(error as Error).message}`, 'messages');
    }
  };

  /** A chat answer (or, with stream: true, its stream of chat.completion.chunk objects: then null). */
  const handleChat = async (body: Record<string, unknown>, response: ServerResponse, signal: AbortSignal) => {
    const target = served(body);
    checkMessageText(body.messages, limits);
    const promptIds = encodeMessages(parseChatMessages(body));
    checkPromptTokens([promptIds], limits, 'messages');
    const sampling = parseSampling(body, config.vocabSize, true);
    const job = jobOf(
      target,
      sampling,
      [promptIds],
      body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens',
    );
    const logprobsOf = (run: TokenRun) => (sampling.logprobs ? chatLogprobs(run, tokenizer) : null);
    const ends = (finished: FinishedChoice | null) => ({
      finish_reason: finished?.finishReason ?? null,
      stop_reason: finished?.stopReason ?? null,
    });
    const tokenIds = (ids: number[]) => (sampling.returnTokenIds ? { token_ids: ids } : {});
    const promptTokenIds = sampling.returnTokenIds ? { prompt_token_ids: promptIds } : {};
    const id = `chatcmpl-${++counter}`;
    if (sampling.stream) {
      // vLLM's opening: each choice's role, with empty content, before any text.
      const opening = Array.from({ length: sampling.numSamples }, (_, index) => ({
        ...(index === 0 ? promptTokenIds : {}),
        choices: [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      }));
      const envelope = { id, object: 'chat.completion.chunk', model: target.name };
      await streamChoices(response, signal, job, sampling, envelope, opening, (piece) => ({
        index: piece.index,
        delta: { content: piece.text },
        logprobs: logprobsOf(piece),
        ...ends(piece.finished),
        ...tokenIds(piece.ids),
      }));
      return null;
    }
    const choices = await finishedChoices(job, sampling, signal);
    return {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: target.name,
      ...promptTokenIds,
      choices: choices.map((choice, index) => ({
        index,
        message: { role: 'assistant', content: choice.text },
        logprobs: logprobsOf(choice),
        ...ends(choice),
        ...tokenIds(choice.ids),
      })),
      usage: usageOf([promptIds], choices),
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

  const route = async (request: IncomingMessage, response: ServerResponse, signal: AbortSignal): Promise<void> => {
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
    // A handler answers with JSON, plain text, or null when it wrote the response itself (a stream).
    const handlers: Record<
      string,
      (body: Record<string, unknown>, response: ServerResponse, signal: AbortSignal) => unknown
    > = {
      '/v1/completions': handleCompletions,
      '/v1/chat/completions': handleChat,
      '/v1/load_lora_adapter': handleLoad,
      '/v1/unload_lora_adapter': handleUnload,
    };
    const handler = handlers[path];
    if (!handler || request.method !== 'POST')
      throw new RequestError(`${request.method} ${path} is not a route of grpo serve`, null, 404, 'NotFoundError');
    const result = await handler(await readBody(request, limits), response, signal);
    if (result === null) return;
    if (typeof result === 'string') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(result);
    } else sendJson(response, 200, result);
  };

  const server = createServer((request, response) => {
    // A client that closes the connection before its answer is out gives its place in the batcher back.
    const gone = new AbortController();
    response.on('close', () => {
      if (!response.writableFinished) gone.abort();
    });
    route(request, response, gone.signal).catch((error: unknown) => {
      if (gone.signal.aborted || response.writableEnded) return; // nobody to answer
      const known = error instanceof RequestError;
      const status = known ? error.status : 500;
      const body = {
        error: {
          message: (error as Error).message,
          type: known ? error.type : 'InternalServerError',
          param: known ? error.param : null,
          code: status,
        },
      };
      // A stream already under way ends with an error event, as vLLM's do.
      if (response.headersSent) response.end(`data: ${JSON.stringify(body)}\n\ndata: [DONE]\n\n`);
      else sendJson(response, status, body);
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
