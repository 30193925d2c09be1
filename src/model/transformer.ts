/**
 * The decoder-only transformer of Llama, Mistral, Qwen2 and Qwen3 checkpoints, in one readable file:
 * token embedding → N × [RMSNorm → GQA attention with rotate-half RoPE (+ q/k/v biases for Qwen2,
 * q/k RMSNorm for Qwen3) → residual → RMSNorm → SwiGLU MLP → residual] → RMSNorm → lm_head (tied to
 * the embedding or not). Parameters keep their Hugging Face names, weights stored [out, in].
 *
 * Legend: B = batch, T = new tokens this call, S = keys visible (cache + new), H = hidden size,
 * Hq/Hkv = query/key-value heads, D = head dim, I = MLP width, V = vocabulary.
 *
 * Is not: a sampler (src/sampling drives `forward` with a KV cache) or a checkpoint reader
 * (checkpoint.ts). The same `forward` serves training (graph recorded) and generation (noGrad + cache).
 * With LoRA adapters attached (lora.ts) every adapted linear adds its low-rank update; the base
 * weights are then frozen, and `withoutAdapters()` is the same weights without them (the KL reference).
 * LoRA dropout (`adapterDropout`) applies only to forwards given a `dropoutSeed`, i.e. training ones.
 * `imageFeatures` puts a vision tower's features in place of the image tokens' embeddings (vision-language.ts).
 */
import {
  add,
  causalAttention,
  embedding,
  matmul,
  permute,
  Random,
  reshape,
  rmsNorm,
  rope,
  isGradEnabled,
  Tensor,
  tensor,
  HalfMatrix,
  combineSeeds,
  getBackend,
  type RecomputedInput,
} from '../tensor/index.js';
import { ropeTable, swiglu, type RopeTable } from '../tensor/fused.js';
import { causalAttentionTokensFirst, type AttentionReplay } from '../tensor/attention.js';
import { prefixAttention } from '../tensor/prefix-attention.js';
import { recompute, recomputeAll, residualAdd } from '../tensor/recompute.js';
import { recomputedNormInput, residual } from './activation-memory.js';
import type { StoredTensor } from './safetensors.js';
import { computeRopeInverseFrequencies, expectedTensorShapes, type ModelConfig } from './config.js';
import { linearWithAdapter, moduleSeed, swigluLinearWithAdapter, type LoraAdapters } from './lora.js';
import { concatToCache, writeRowsToCache, writeToCache, type KvCache } from './kv-cache.js';
import { mergeImageFeatures } from './vision/image-merge.js';
import type { ForwardOptions } from './forward-options.js';

export type { KvCache } from './kv-cache.js';
export type { ForwardOptions } from './forward-options.js';

export class Transformer {
  readonly inverseFrequencies: Float32Array;
  /** LoRA adapters on the linear layers, or null (full fine-tuning, or a view without them). */
  adapters: LoraAdapters | null = null;
  /**
   * Activation recomputation in training forwards (no cache), same gradients in every mode. 'layers':
   * each decoder layer keeps only its input and is rerun in backward (one more forward pass).
   * 'selective': the linears' outputs are kept; the attention between q/k/v and o_proj is rerun (RoPE; the
   * kernel's output and log-sum-exp are replayed) and swiglu(gate, up) recomputed in backward; sums keep no branch.
   */
  recompute: 'none' | 'selective' | 'layers' = 'none';
  /** LoRA dropout probability on the adapters' input (PEFT's lora_dropout), used only by forwards given a dropoutSeed. */
  adapterDropout = 0;
  /** The image token of a vision-language model (set by VisionLanguageModel), for the sampler's image prompts. */
  imageTokenId: number | null = null;
  /** Float32 copies of halfWeights while withWidenedWeights runs, else null. */
  private widened: Map<string, Tensor> | null = null;

  constructor(
    readonly config: ModelConfig,
    readonly parameters: Map<string, Tensor>,
    /** Frozen decoder-layer linear weights kept as bfloat16 (keepFrozenLinearsInBfloat16), by HF name. */
    readonly halfWeights = new Map<string, HalfMatrix>(),
  ) {
    this.inverseFrequencies = computeRopeInverseFrequencies(config);
  }

  /** Attaches adapters and freezes the base weights: from here on only the adapters get gradients. */
  attachAdapters(adapters: LoraAdapters): void {
    for (const parameter of this.parameters.values()) parameter.requiresGrad = false;
    this.adapters = adapters;
  }

  /** The same base weights (shared, not copied) without adapters: the model as it was before LoRA. */
  withoutAdapters(): Transformer {
    const view = new Transformer(this.config, this.parameters, this.halfWeights);
    view.imageTokenId = this.imageTokenId;
    return view;
  }

  /**
   * Moves the frozen q/k/v/o/gate/up/down weights to bfloat16 (half the bytes; each product widens
   * its matrix into a scratch float32 copy). Rounds float32 values; exact for a bfloat16 checkpoint.
   * Only frozen weights may move: a trained weight needs its float32 value and gradient.
   */
  keepFrozenLinearsInBfloat16(): void {
    for (const [name, parameter] of this.parameters) {
      if (!/\.(q|k|v|o|gate|up|down)_proj\.weight$/.test(name)) continue;
      if (parameter.requiresGrad)
        throw new Error(`Transformer: "${name}" is trained; only frozen (LoRA base) weights can be kept in bfloat16`);
      const half = HalfMatrix.fromFloat32(parameter.data, parameter.shape);
      half.name = name;
      this.halfWeights.set(name, half);
      this.parameters.delete(name);
    }
  }

  /**
   * Runs `fn` (a generation) with float32 copies of the bfloat16 weights, made once here and dropped
   * when it returns, where the backend cannot read bfloat16 (js, wasm: widening per decode product
   * would cost as much as the product); with matmulBfloat16B (native) `fn` just runs, with no copy.
   */
  withWidenedWeights<T>(fn: () => T): T {
    if (this.halfWeights.size === 0 || this.widened || getBackend().matmulBfloat16B) return fn();
    this.widened = new Map([...this.halfWeights].map(([name, half]) => [name, tensor(half.toFloat32(), half.shape)]));
    try {
      return fn();
    } finally {
      this.widened = null;
    }
  }

  /** x Wᵀ + b (+ adapter) of the linear at `module` (HF path); x = [gate, up] (selective) means swiglu(gate, up), recomputed. */
  private project(x: Tensor | [Tensor, Tensor], module: string, options: ForwardOptions, recomputed?: RecomputedInput) {
    const [adapters, { dropoutSeed, outputBuffers }] = [this.adapters, options];
    const dropping = dropoutSeed !== undefined && this.adapterDropout > 0;
    const rest = [
      this.widened?.get(`${module}.weight`) ??
        this.halfWeights.get(`${module}.weight`) ??
        this.weight(`${module}.weight`),
      this.optional(`${module}.bias`),
      adapters?.pairs.get(module) ?? null,
      adapters?.scaling ?? 0,
      dropping ? { probability: this.adapterDropout, seed: combineSeeds(dropoutSeed, moduleSeed(module)) } : undefined,
    ] as const;
    const [weight, bias, pair] = rest; // a plain float32 linear of a generation step: into its reused array
    if (outputBuffers && !Array.isArray(x) && weight instanceof Tensor && !bias && !pair && !recomputed)
      return outputBuffers.linear(x, weight, module);
    return Array.isArray(x) ? swigluLinearWithAdapter(x[0], x[1], ...rest) : linearWithAdapter(x, ...rest, recomputed);
  }

  /** Builds the model from checked float32 tensors (see loadCheckpoint); they become trainable parameters. */
  static fromTensors(config: ModelConfig, tensors: Map<string, StoredTensor>): Transformer {
    const parameters = new Map<string, Tensor>();
    for (const [name, shape] of expectedTensorShapes(config)) {
      const stored = tensors.get(name);
      if (!stored) throw new Error(`Transformer: missing tensor "${name}" (expected shape [${shape.join(', ')}])`);
      const parameter = tensor(stored.data, shape, { requiresGrad: true });
      parameter.name = name;
      parameters.set(name, parameter);
    }
    return new Transformer(config, parameters);
  }

  /** A freshly initialised model: N(0, 0.02) matrices, unit norms, zero biases (as HF's init). */
  static random(config: ModelConfig, seed: number, standardDeviation = 0.02): Transformer {
    const random = new Random(seed);
    const tensors = new Map<string, StoredTensor>();
    for (const [name, shape] of expectedTensorShapes(config)) {
      const size = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(size);
      if (name.endsWith('norm.weight')) data.fill(1);
      else if (!name.endsWith('.bias')) for (let i = 0; i < size; i++) data[i] = random.normal() * standardDeviation;
      tensors.set(name, { shape, data });
    }
    return Transformer.fromTensors(config, tensors);
  }

  /**
   * The weights as stored tensors for saveCheckpoint, in checkpoint order (float32 ones share memory:
   * copy before mutating; bfloat16 ones are widened into new arrays).
   */
  toStoredTensors(): Map<string, StoredTensor> {
    const stored = new Map<string, StoredTensor>();
    for (const name of expectedTensorShapes(this.config).keys()) {
      const half = this.halfWeights.get(name);
      const parameter = half ? { shape: half.shape, data: half.toFloat32() } : this.weight(name);
      stored.set(name, { shape: [...parameter.shape], data: parameter.data });
    }
    return stored;
  }

  /** An empty cache; `capacity` (e.g. prompt + max new tokens) avoids regrowing it while decoding. */
  createCache(capacity = 0): KvCache {
    const layers = this.config.numLayers;
    return {
      keys: new Array(layers).fill(null),
      values: new Array(layers).fill(null),
      length: 0,
      capacityHint: capacity,
    };
  }

  private weight(name: string): Tensor {
    const parameter = this.parameters.get(name);
    if (!parameter) throw new Error(`Transformer: no parameter "${name}"`);
    return parameter;
  }

  private optional(name: string): Tensor | null {
    return this.parameters.get(name) ?? null;
  }

  /** Logits [B, T, V] (or [rows, V] with logitRows) for token ids laid out [B, T]. */
  forward(ids: Int32Array, batchSize: number, options: ForwardOptions = {}): Tensor {
    const hidden = this.hiddenStates(ids, batchSize, options); // [B, T, H]
    return this.logits(hidden, options.logitRows);
  }

  /** The lm_head weight [V, H]: the embedding matrix when the embeddings are tied. */
  headWeight(): Tensor {
    return this.config.tieWordEmbeddings ? this.weight('model.embed_tokens.weight') : this.weight('lm_head.weight');
  }

  /** lm_head over the final hidden states, optionally only at the given rows of [B·T]. */
  logits(hidden: Tensor, rows?: Int32Array): Tensor {
    const H = this.config.hiddenSize;
    const head = this.headWeight();
    const flat = reshape(hidden, [-1, H]); // [B·T, H]
    const selected = rows ? embedding(flat, rows) : flat; // gather rows; its gradient scatters back
    const logits = matmul(selected, head, { transposeB: true }); // [rows, V]
    return rows ? logits : reshape(logits, [...hidden.shape.slice(0, -1), this.config.vocabSize]);
  }

  /** Final-norm hidden states [B, T, H]. */
  hiddenStates(ids: Int32Array, batchSize: number, options: ForwardOptions = {}): Tensor {
    const { config } = this;
    const [B, T] = [batchSize, ids.length / batchSize];
    if (!Number.isInteger(T)) throw new Error(`Transformer.forward: ${ids.length} ids do not split into ${B} rows`);
    for (let i = 0; i < ids.length; i++) {
      if (!(ids[i] >= 0 && ids[i] < config.vocabSize)) {
        throw new Error(
          `Transformer.forward: token id ${ids[i]} at position ${i} is outside the vocabulary [0, ${config.vocabSize})`,
        );
      }
    }
    if (options.sharedPrefix && (!options.cache || !options.positions || T !== 1)) {
      throw new Error('Transformer.forward: sharedPrefix needs a cache, explicit positions and one token per row');
    }
    const rowLengths = options.sharedPrefix?.rowLengths;
    const past = rowLengths ? Math.max(0, ...rowLengths) : (options.cache?.length ?? 0);
    const positions = options.positions ?? Int32Array.from({ length: T }, (_, t) => past + t);
    const angles = ropeTable(positions, this.inverseFrequencies); // shared by every layer's q and k
    let embedded = embedding(this.weight('model.embed_tokens.weight'), ids); // [B·T, H]
    if (options.imageFeatures) embedded = mergeImageFeatures(embedded, ids, options.imageFeatures);
    let x = reshape(embedded, [B, T, config.hiddenSize]); // [B, T, H]
    const recomputing = this.recompute === 'layers' && isGradEnabled() && !options.cache;
    for (let layer = 0; layer < config.numLayers; layer++) {
      const rotary = { positions, angles };
      // A recomputed layer keeps its input for the rerun in backward, so the first sum must not overwrite it.
      const run = (input: Tensor) => this.decoderLayer(input, layer, B, T, rotary, options, !recomputing);
      x = recomputing ? recompute(run, x, this.layerParameters(layer)) : run(x); // [B, T, H]
    }
    if (options.cache) options.cache.length = past + T;
    return rmsNorm(x, this.weight('model.norm.weight'), config.rmsNormEps);
  }

  /** One decoder layer: x + attention(norm(x)), then + MLP(norm(·)). `overwriteInput`: x is this forward's own. */
  private decoderLayer(
    x: Tensor,
    layer: number,
    B: number,
    T: number,
    rotary: { positions: Int32Array; angles: RopeTable },
    options: ForwardOptions,
    overwriteInput: boolean,
  ): Tensor {
    const { config } = this;
    const prefix = `model.layers.${layer}`;
    const [inputNorm, postNorm] = ['input_layernorm', 'post_attention_layernorm'].map((name) =>
      this.weight(`${prefix}.${name}.weight`),
    );
    const normedInput = rmsNorm(x, inputNorm, config.rmsNormEps);
    const qkv = ['q', 'k', 'v'].map((name) => `${prefix}.self_attn.${name}_proj`);
    const attended = this.attention(
      normedInput,
      this.recomputedNorm(normedInput, x, inputNorm, qkv, options),
      layer,
      B,
      T,
      rotary,
      options,
    );
    const selective = this.selective(options);
    // Selective: the sums keep neither branch's values (residualAdd); they are needed by nothing else.
    const mixed = selective ? residualAdd(x, attended) : overwriteInput ? residual(x, attended) : add(x, attended);
    const normed = rmsNorm(mixed, postNorm, config.rmsNormEps);
    const [gateModule, upModule] = [`${prefix}.mlp.gate_proj`, `${prefix}.mlp.up_proj`];
    const mlpInput = this.recomputedNorm(normed, mixed, postNorm, [gateModule, upModule], options);
    const gate = this.project(normed, gateModule, options, mlpInput); // [B, T, I]
    const up = this.project(normed, upModule, options, mlpInput); // [B, T, I]
    // Selective: swiglu(gate, up) is recomputed in down_proj's backward, not kept.
    const down = this.project(selective ? [gate, up] : swiglu(gate, up), `${prefix}.mlp.down_proj`, options);
    return selective ? residualAdd(mixed, down) : residual(mixed, down); // [B, T, H]
  }

  /** A training forward (no cache) under recompute 'selective'. */
  private selective(options: ForwardOptions): boolean {
    return this.recompute === 'selective' && isGradEnabled() && !options.cache;
  }

  /** Selective, and every module reading normed is a lowRankLinear: normed recomputed in their backward. */
  private recomputedNorm(normed: Tensor, x: Tensor, weight: Tensor, modules: string[], options: ForwardOptions) {
    if (!this.selective(options)) return undefined;
    return recomputedNormInput(normed, x, weight, this.config.rmsNormEps);
  }

  /** The trainable leaves a decoder layer reads: its weights and its adapters (recompute's parameters). */
  private layerParameters(layer: number): Tensor[] {
    const prefix = `model.layers.${layer}.`;
    const weights = [...this.parameters].filter(([name]) => name.startsWith(prefix)).map(([, weight]) => weight);
    const adapters = [...(this.adapters?.pairs ?? [])]
      .filter(([path]) => path.startsWith(prefix))
      .flatMap(([, pair]) => [pair.a, pair.b]);
    return [...weights, ...adapters];
  }

  private attention(
    x: Tensor,
    recomputed: RecomputedInput | undefined,
    layer: number,
    B: number,
    T: number,
    rotary: { positions: Int32Array; angles: RopeTable },
    options: ForwardOptions,
  ): Tensor {
    const prefix = `model.layers.${layer}.self_attn`;
    // [B, T, heads·D] each, by a loop: a closure over x would share `core`'s context, which recompute keeps.
    const projected: Tensor[] = [];
    for (const name of ['q', 'k', 'v']) projected.push(this.project(x, `${prefix}.${name}_proj`, options, recomputed));
    const replay = this.selective(options) ? { output: null, logSumExp: null } : undefined; // for core's rerun
    const core = (inputs: Tensor[]) => this.attentionCore(inputs, layer, B, T, rotary, options, replay);
    const norms = ['q', 'k'].flatMap((name) => this.parameters.get(`${prefix}.${name}_norm.weight`) ?? []);
    const merged = replay ? recomputeAll(core, projected, norms) : core(projected); // [B, T, Hq·D]
    return this.project(merged, `${prefix}.o_proj`, options); // [B, T, H]
  }

  /** q, k, v projections [B, T, heads·D] → merged heads [B, T, Hq·D] (no cache: read in place, no permute copies). */
  private attentionCore(
    [qProjected, kProjected, vProjected]: Tensor[],
    layer: number,
    B: number,
    T: number,
    rotary: { positions: Int32Array; angles: RopeTable },
    options: ForwardOptions,
    replay?: AttentionReplay,
  ): Tensor {
    const { config } = this;
    const prefix = `model.layers.${layer}.self_attn`;
    const D = config.headDim;
    const projections: Record<string, Tensor> = { q: qProjected, k: kProjected, v: vProjected };
    const project = (name: string, heads: number): Tensor => {
      let perHead = reshape(projections[name], [B, T, heads, D]); // [B, T, heads, D]
      const norm = name === 'v' ? null : this.optional(`${prefix}.${name}_norm.weight`);
      if (norm) perHead = rmsNorm(perHead, norm, config.rmsNormEps); // Qwen3: per-head RMSNorm before RoPE
      return name === 'v' ? perHead : rope(perHead, rotary.positions, this.inverseFrequencies, rotary.angles);
    };
    const [Hq, Hkv, window, cache] = [config.numHeads, config.numKeyValueHeads, config.slidingWindow, options.cache];
    const [qTokens, kTokens, vTokens] = [project('q', Hq), project('k', Hkv), project('v', Hkv)]; // [B, T, heads, D]
    if (!cache) {
      const windowed = window !== null && window < T ? window : undefined;
      const attentionOptions = { keyMask: options.keyMask, segmentIds: options.segmentIds, window: windowed, replay };
      return reshape(causalAttentionTokensFirst(qTokens, kTokens, vTokens, attentionOptions), [B, T, Hq * D]); // [B, T, Hq·D]
    }
    // One token per row (a decode step): [B, 1, heads, D] is already [B, heads, 1, D] in memory, so no copy.
    const headsFirst = (x: Tensor) => (T === 1 ? reshape(x, [B, x.shape[2], 1, D]) : permute(x, [0, 2, 1, 3]));
    const q = headsFirst(qTokens); // [B, Hq, T, D]
    let [k, v] = [kTokens, vTokens].map(headsFirst); // [B, Hkv, T, D]
    let S = T;
    const shared = options.sharedPrefix;
    const rowLengths = shared?.rowLengths;
    if (rowLengths) {
      S = Math.max(0, ...rowLengths) + 1;
      [k, v] = writeRowsToCache(cache, layer, k, v, rowLengths, S); // [B, Hkv, capacity ≥ S, D]
    } else {
      S = cache.length + T;
      if (k.requiresGrad || v.requiresGrad)
        [k, v] = concatToCache(cache, layer, k, v); // keeps the graph
      else [k, v] = writeToCache(cache, layer, k, v); // [B, Hkv, capacity ≥ S, D]
    }
    const attended = shared
      ? prefixAttention(q, k, v, S, {
          keys: shared.prompts.map((prompt) => prompt.keys[layer]!),
          values: shared.prompts.map((prompt) => prompt.values[layer]!),
          lengths: shared.prompts.map((prompt) => prompt.length),
          rowPrefix: shared.rowPrefix,
          window: window ?? undefined,
          ownLengths: rowLengths && Int32Array.from(rowLengths, (length) => length + 1),
          output: options.outputBuffers?.array(`${prefix}.attention`, B * config.numHeads * D), // read by o_proj only
        })
      : causalAttention(q, k, v, {
          positionOffset: S - T,
          keyMask: options.keyMask,
          segmentIds: options.segmentIds,
          window: window !== null && window < S ? window : undefined,
          keyLength: S,
        }); // [B, Hq, T, D]
    return reshape(T === 1 ? attended : permute(attended, [0, 2, 1, 3]), [B, T, Hq * D]); // [B, T, Hq·D]
  }
}
