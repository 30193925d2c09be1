/**
 * Batched, KV-cached group sampling over token ids: each prompt is prefilled once and its cache is
 * shared by its G samples (never copied: attention reads it once per group), and all live
 * sequences decode together with per-sequence positions. Finished sequences leave the batch, so a step costs what the live
 * ones need; with maxBatchSize below the sample count, a finished sequence's slot goes to the next
 * waiting one instead (continuous batching: rows at different steps, each with its own key count). Returns ids and the per-token logprobs of the sampled ids (GRPO's old-policy logprobs), and when asked each token's most likely alternatives.
 *
 * Legend: B = live sequences, Hkv, D as in the model; the batched cache holds generated keys only.
 * Vision-language prompts bring their image features (promptImageFeatures), used in their prefill only.
 * startGeneration runs the same steps in time slices (a server answers other requests between them).
 * Is not: tokenizer-aware (ids in, ids out) or a training forward. Each sequence draws from its own
 * generator derived from (seed, prompt, sample), so results do not depend on batch composition.
 */
import type { KvCache, Transformer } from '../model/transformer.js';
import { DecodeBuffers } from '../model/decode-buffers.js';
import { concat, linearInto, noGrad, Random, Tensor, withConstantWeights, withStepArena } from '../tensor/index.js';
import { chooseTokens, topLogprobsOf, type SamplingSettings, type TokenLogprob } from './logits.js';

export interface GenerateRequest extends Partial<SamplingSettings> {
  /** Prompt token ids, one array per prompt (each non-empty). */
  prompts: number[][];
  /** Completions per prompt (the GRPO group size G). */
  numSamples?: number;
  maxNewTokens: number;
  /** Generation stops after any of these ids (the stop id is kept in the completion). */
  stopTokenIds?: number[];
  seed: number;
  /**
   * Most sequences decoded together (default: every sample at once). Below P·G, the rest wait and
   * each finished sequence's slot goes to the next waiting one (continuous batching): memory stays
   * bounded and the batch stays full while lengths vary. Results are the same either way.
   */
  maxBatchSize?: number;
  /**
   * Vision-language prompts: the image features ([count, H], VisionLanguageModel.imageFeatures) that
   * replace prompt k's image tokens (model.imageTokenId) in its prefill; null for a prompt without
   * images. Generation then continues as usual (decode steps never see image tokens' features).
   */
  promptImageFeatures?: (Tensor | null)[];
  /**
   * How many most likely alternatives to report for each generated token (0, the default: none). They
   * are read from the logits the token was drawn from, after the draw, so the draws are the same.
   */
  topLogprobs?: number;
}

export interface Completion {
  promptIndex: number;
  sampleIndex: number;
  ids: number[];
  /** Logprob of each generated id under logits / temperature (raw logits when greedy). */
  logprobs: number[];
  /** With `topLogprobs` asked: each generated token's most likely alternatives, most likely first. */
  topLogprobs?: TokenLogprob[][];
  finishReason: 'stop' | 'length';
}

function validate(request: GenerateRequest, model: Transformer): void {
  const limit = model.config.vocabSize;
  if (!Number.isInteger(request.maxNewTokens) || request.maxNewTokens < 0)
    throw new Error(`generate: maxNewTokens must be a non-negative integer, got ${request.maxNewTokens}`);
  const numSamples = request.numSamples ?? 1;
  if (!Number.isInteger(numSamples) || numSamples < 1)
    throw new Error(`generate: numSamples must be a positive integer, got ${numSamples}`);
  if (request.maxBatchSize !== undefined && !(Number.isInteger(request.maxBatchSize) && request.maxBatchSize >= 1))
    throw new Error(`generate: maxBatchSize must be a positive integer, got ${request.maxBatchSize}`);
  const topLogprobs = request.topLogprobs ?? 0;
  if (!Number.isInteger(topLogprobs) || topLogprobs < 0)
    throw new Error(`generate: topLogprobs must be a non-negative integer, got ${topLogprobs}`);
  const temperature = request.temperature ?? 1;
  if (!(temperature >= 0)) throw new Error(`generate: temperature must be >= 0, got ${temperature}`);
  if (request.topP !== undefined && !(request.topP > 0 && request.topP <= 1))
    throw new Error(`generate: topP must be in (0, 1], got ${request.topP}`);
  if (request.minP !== undefined && !(request.minP >= 0 && request.minP < 1))
    throw new Error(`generate: minP must be in [0, 1), got ${request.minP}`);
  request.prompts.forEach((prompt, index) => {
    if (prompt.length === 0)
      throw new Error(`generate: prompt ${index} is empty (it needs at least one token, e.g. BOS)`);
    const bad = prompt.findIndex((id) => !(Number.isInteger(id) && id >= 0 && id < limit));
    if (bad >= 0)
      throw new Error(`generate: prompt ${index} token ${bad} is ${prompt[bad]}, outside the vocabulary [0, ${limit})`);
    // Positions past the trained range are extrapolation the model never saw: refuse rather than
    // return text that silently degrades.
    checkPromptImages(request, model, prompt, index);
    const positions = model.config.maxPositionEmbeddings;
    if (prompt.length + request.maxNewTokens > positions) {
      throw new Error(
        `generate: prompt ${index} has ${prompt.length} tokens and maxNewTokens is ${request.maxNewTokens}, together ${prompt.length + request.maxNewTokens}, over the model's maxPositionEmbeddings (max_position_embeddings) of ${positions}`,
      );
    }
  });
}

/**
 * Prompt `index`'s image features agree with its image tokens (count and width), checked before any
 * compute; a vision-language model's prompt with image tokens and no features is refused too.
 */
function checkPromptImages(request: GenerateRequest, model: Transformer, prompt: number[], index: number): void {
  const all = request.promptImageFeatures;
  if (all && all.length !== request.prompts.length)
    throw new Error(`generate: promptImageFeatures has ${all.length} entries for ${request.prompts.length} prompts`);
  const features = all?.[index] ?? null;
  const tokenId = model.imageTokenId;
  const count = tokenId === null ? 0 : prompt.filter((id) => id === tokenId).length;
  const rows = features ? features.shape[0] : 0;
  if (features && tokenId === null)
    throw new Error(
      `generate: prompt ${index} has image features but the model has no image token (not a vision-language model)`,
    );
  if (features && (features.rank !== 2 || features.shape[1] !== model.config.hiddenSize))
    throw new Error(
      `generate: prompt ${index}'s image features have shape [${features.shape.join(', ')}], expected [count, ${model.config.hiddenSize}]`,
    );
  if (count !== rows)
    throw new Error(
      `generate: prompt ${index} holds ${count} image tokens (id ${tokenId}) but its image features have ${rows} rows`,
    );
}

/** The given rows of a [B, Hkv, capacity, D] cache tensor (first `used` positions) as a new one. */
export function keepRows(tensor: Tensor, rows: readonly number[], used: number): Tensor {
  const [, heads, capacity, headDim] = tensor.shape;
  const output = new Float32Array(rows.length * heads * capacity * headDim);
  rows.forEach((row, b) => {
    for (let h = 0; h < heads; h++) {
      const from = (row * heads + h) * capacity * headDim;
      output.set(tensor.data.subarray(from, from + used * headDim), (b * heads + h) * capacity * headDim);
    }
  });
  return new Tensor(output, [rows.length, heads, capacity, headDim]);
}

// Prompts prefilled together stay under this many tokens per forward (attention scores grow as T²).
const PREFILL_TOKENS_PER_FORWARD = 4096;

/** Prompts prefilled so far: each one's cache and last-position logits, filled in chunk by chunk. */
interface Prefill {
  caches: KvCache[];
  lastLogits: Float32Array[];
  /** The forwards still to run, each a list of prompt indices of one length. */
  chunks: number[][];
}

/**
 * Plans the prefill of every prompt, each once: prompts of equal length share a forward (a [P, T]
 * batch, no padding needed), at most PREFILL_TOKENS_PER_FORWARD tokens each.
 */
function planPrefill(prompts: number[][]): Prefill {
  const byLength = new Map<number, number[]>();
  prompts.forEach((prompt, index) => byLength.set(prompt.length, [...(byLength.get(prompt.length) ?? []), index]));
  const chunks: number[][] = [];
  for (const [T, members] of byLength) {
    const perForward = Math.max(1, Math.floor(PREFILL_TOKENS_PER_FORWARD / T));
    for (let first = 0; first < members.length; first += perForward)
      chunks.push(members.slice(first, first + perForward));
  }
  return { caches: new Array(prompts.length), lastLogits: new Array(prompts.length), chunks };
}

/** Runs the next planned forward; each prompt's cache is a zero-copy view of its row of the batched cache. */
function prefillNextChunk(
  model: Transformer,
  prompts: number[][],
  imageFeatures: (Tensor | null)[] | undefined,
  prefill: Prefill,
): void {
  const V = model.config.vocabSize;
  const chunk = prefill.chunks.shift()!;
  const P = chunk.length;
  const T = prompts[chunk[0]].length;
  const cache = model.createCache();
  const ids = Int32Array.from(chunk.flatMap((index) => prompts[index]));
  // The chunk's image features in the order of its flat ids (prompts without images add none).
  const features = chunk.flatMap((index) => imageFeatures?.[index] ?? []);
  const logits = model.forward(ids, P, {
    cache,
    logitRows: Int32Array.from(chunk, (_, p) => p * T + T - 1),
    imageFeatures: features.length > 0 ? { tokenId: model.imageTokenId!, features: concat(features, 0) } : undefined,
  }); // [P, V]
  chunk.forEach((index, p) => {
    prefill.lastLogits[index] = logits.data.subarray(p * V, (p + 1) * V);
    const row = (stored: Tensor | null): Tensor => {
      const [, heads, capacity, headDim] = stored!.shape;
      const size = heads * capacity * headDim;
      return new Tensor(stored!.data.subarray(p * size, (p + 1) * size), [1, heads, capacity, headDim]);
    };
    prefill.caches[index] = { keys: cache.keys.map(row), values: cache.values.map(row), length: T };
  });
}

interface LiveSequence {
  completion: Completion;
  random: Random;
  nextId: number;
  position: number;
}

/** Samples `numSamples` completions for every prompt. */
export function generate(model: Transformer, request: GenerateRequest): Completion[] {
  const run = startGeneration(model, request);
  run.advance(Infinity);
  return run.completions;
}

/**
 * A generation run in slices, so a server can answer others between them: `advance(deadline)` runs
 * the prefill and then decode steps until every sequence has finished (returns true) or
 * `performance.now()` has passed `deadline` after a step (returns false; call it again to go on).
 * `completions` fill in as it runs and are final once it returns true. The same steps as one
 * `generate` call, so the same results however it is sliced.
 */
export interface GenerationRun {
  advance(deadline: number): boolean;
  readonly completions: Completion[];
}

/** The decode loop's state between slices. */
interface DecodeState {
  active: LiveSequence[];
  waiting: LiveSequence[];
  continuous: boolean;
  prompts: KvCache[];
  cache: KvCache;
  outputBuffers: DecodeBuffers;
}

/** Validates `request` (throwing before any compute) and returns its run, not yet started. */
export function startGeneration(model: Transformer, request: GenerateRequest): GenerationRun {
  validate(request, model);
  const settings: SamplingSettings = {
    temperature: request.temperature ?? 1,
    topK: request.topK ?? 0,
    topP: request.topP ?? 1,
    minP: request.minP ?? 0,
  };
  const numSamples = request.numSamples ?? 1;
  const stop = new Set(request.stopTokenIds ?? model.config.eosTokenIds);
  const completions: Completion[] = [];
  if (request.maxNewTokens === 0) {
    request.prompts.forEach((_, promptIndex) => {
      for (let s = 0; s < numSamples; s++)
        completions.push({ promptIndex, sampleIndex: s, ids: [], logprobs: [], finishReason: 'length' });
    });
    return { completions, advance: () => true };
  }
  const unfinished = (sequence: LiveSequence) =>
    sequence.completion.finishReason === 'length' && sequence.completion.ids.length < request.maxNewTokens;
  const generatedKeys = (s: LiveSequence) => s.position - request.prompts[s.completion.promptIndex].length;
  const topCount = request.topLogprobs ?? 0;
  /** Records the alternatives of the token just drawn from `row`, when they are asked for. */
  const keepAlternatives = (sequence: LiveSequence, row: Float32Array): void => {
    if (topCount > 0) (sequence.completion.topLogprobs ??= []).push(topLogprobsOf(row, settings.temperature, topCount));
  };

  /** Samples every sequence's first token from its prompt's prefill and sets the decode loop up. */
  const begin = (prefilled: Prefill): DecodeState => {
    const live: LiveSequence[] = [];
    // Each prompt's G samples start from the same last-position logits.
    request.prompts.forEach((prompt, promptIndex) => {
      for (let sampleIndex = 0; sampleIndex < numSamples; sampleIndex++) {
        const random = new Random(request.seed * 1_000_003 + promptIndex * 7919 + sampleIndex);
        const completion: Completion = { promptIndex, sampleIndex, ids: [], logprobs: [], finishReason: 'length' };
        completions.push(completion);
        live.push({ completion, random, nextId: -1, position: prompt.length });
        const row = prefilled.lastLogits[promptIndex];
        accept(live[live.length - 1], chooseTokens(row, 1, settings, [random])[0], stop, request.maxNewTokens);
        keepAlternatives(live[live.length - 1], row);
      }
    });
    // Each prompt's keys stay in its own prefill cache, read once per group by the attention
    // (sharedPrefix); the batched cache holds only the generated keys, so it needs no padding.
    const waiting = live.filter(unfinished);
    const slots = Math.min(waiting.length, request.maxBatchSize ?? waiting.length);
    return {
      // Continuous batching only when some sequences wait: rows are then at different steps.
      continuous: slots < waiting.length,
      active: waiting.splice(0, slots),
      waiting,
      prompts: prefilled.caches,
      cache: model.createCache(request.maxNewTokens), // room for every step: nothing regrows
      outputBuffers: new DecodeBuffers(), // every step's projections and logits, reused
    };
  };

  /** One decode step of every active sequence. */
  const step = (state: DecodeState): void => {
    const { active, cache, outputBuffers } = state;
    const B = active.length;
    const rowPrefix = Int32Array.from(active, (s) => s.completion.promptIndex);
    const hidden = model.hiddenStates(
      Int32Array.from(active, (s) => s.nextId),
      B,
      {
        cache,
        outputBuffers,
        positions: Int32Array.from(active, (s) => s.position),
        sharedPrefix: {
          prompts: state.prompts,
          rowPrefix,
          rowLengths: state.continuous ? Int32Array.from(active, generatedKeys) : undefined,
        },
      },
    ); // [B, 1, H]
    const V = model.config.vocabSize;
    const logits = headInto(model, hidden, outputBuffers.array('lm_head', B * V)); // [B, V]
    const chosen = chooseTokens(
      logits,
      B,
      settings,
      active.map((sequence) => sequence.random),
    );
    active.forEach((sequence, b) => {
      sequence.position++;
      accept(sequence, chosen[b], stop, request.maxNewTokens);
      keepAlternatives(sequence, logits.subarray(b * V, (b + 1) * V));
    });
    // A finished row's slot goes to the next waiting sequence (its keys overwrite the slot's from
    // column 0); with none waiting, finished rows leave the batch (order kept, so the rows of one
    // prompt stay contiguous).
    const slotted = active.map((s) => (unfinished(s) ? s : state.waiting.shift()));
    const keep = slotted.map((s, b) => ({ s, b })).filter((row): row is { s: LiveSequence; b: number } => !!row.s);
    if (keep.length < active.length && keep.length > 0) {
      for (let layer = 0; layer < model.config.numLayers; layer++) {
        cache.keys[layer] = keepRows(
          cache.keys[layer]!,
          keep.map(({ b }) => b),
          cache.length,
        );
        cache.values[layer] = keepRows(
          cache.values[layer]!,
          keep.map(({ b }) => b),
          cache.length,
        );
      }
    }
    state.active = keep.map(({ s }) => s);
  };

  // Nothing changes the weights while a slice runs: the backend may keep them packed for every step,
  // LoRA adapters included; a bfloat16 base is widened once per slice (once for a whole `generate`).
  // The scopes close at the end of each slice, so whatever runs between slices sees none of them.
  const adapterTensors = (model.adapters?.namedParameters() ?? []).map(([, adapter]) => adapter);
  const constant = [...model.parameters.values(), ...adapterTensors];
  const prefill = planPrefill(request.prompts);
  let state: DecodeState | null = null;
  const advance = (deadline: number): boolean =>
    model.withWidenedWeights(() =>
      withConstantWeights(constant, () =>
        noGrad(() => {
          if (state === null) {
            // The prefill's forwards are slices too: a long prompt list cannot hold the thread in one go.
            while (prefill.chunks.length > 0) {
              prefillNextChunk(model, request.prompts, request.promptImageFeatures, prefill);
              if (prefill.chunks.length > 0 && performance.now() >= deadline) return false;
            }
            state = begin(prefill);
            if (state.active.length > 0 && performance.now() >= deadline) return false;
          }
          const current = state;
          // Every other array a step's ops make (norms, RoPE, SwiGLU, sums) is read within the step: reused too.
          withStepArena((nextStep) => {
            while (current.active.length > 0) {
              nextStep();
              step(current);
              if (performance.now() >= deadline) break;
            }
          });
          return current.active.length === 0;
        }),
      ),
    );
  return { completions, advance };
}

/**
 * Transformer.logits of a decode step's hidden states [B, 1, H] written into `out` ([B, V]): the same
 * backend product (so the same floats), into one array that every step reuses. A fresh [B, V] array per
 * token was an eighth of a decode step's new bytes, which pace V8's full collections (DecodeBuffers).
 */
function headInto(model: Transformer, hidden: Tensor, out: Float32Array): Float32Array {
  const { hiddenSize: H, vocabSize: V } = model.config;
  return linearInto(hidden.data, model.headWeight().data, out, hidden.size / H, H, V);
}

/** Records one sequence's chosen token and why it stopped, if it did. */
function accept(
  sequence: LiveSequence,
  { id, logprob }: { id: number; logprob: number },
  stop: Set<number>,
  maxNewTokens: number,
): void {
  const completion = sequence.completion;
  completion.ids.push(id);
  completion.logprobs.push(logprob);
  sequence.nextId = id;
  if (stop.has(id)) completion.finishReason = 'stop';
  else if (completion.ids.length >= maxNewTokens) completion.finishReason = 'length';
}
