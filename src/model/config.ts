/**
 * The typed model configuration of a decoder-only transformer, parsed from (and written back to) a
 * Hugging Face `config.json` for model_type llama, mistral, qwen2, qwen3 (and "smollm", an alias of
 * llama: SmolLM v1/v2 ship Llama configs). Also the RoPE inverse frequencies, computed the way
 * transformers' `modeling_rope_utils.py` does (default, linear and llama3 scaling).
 *
 * This module does not build the model, read weights or know about tokenizers; it only turns JSON into
 * a validated `ModelConfig` and back, naming the file and field at fault on bad input.
 */

/** The architectures the forward pass implements. */
export type ModelType = 'llama' | 'mistral' | 'qwen2' | 'qwen3';

/** RoPE frequency scaling, as in transformers' `rope_scaling` (other kinds are refused by name). */
export type RopeScaling =
  | { type: 'none' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

/** Everything the forward pass needs to know about a model's shape. */
export interface ModelConfig {
  modelType: ModelType;
  vocabSize: number;
  hiddenSize: number;
  /** Width of the SwiGLU feed-forward layer. */
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Grouped-query attention: each key/value head serves numHeads / numKeyValueHeads query heads. */
  numKeyValueHeads: number;
  /** Per-head width; hiddenSize / numHeads unless the config says otherwise (Qwen3 does). */
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositionEmbeddings: number;
  /** When true, lm_head reuses model.embed_tokens.weight and the checkpoint has no lm_head.weight. */
  tieWordEmbeddings: boolean;
  /** Biases on q_proj, k_proj and v_proj (always on for Qwen2, `attention_bias` for Llama/Qwen3). */
  attentionBias: boolean;
  /** Bias on o_proj (Llama/Qwen3 `attention_bias`; Qwen2 has none even though q/k/v have one). */
  attentionOutputBias: boolean;
  /** Qwen3: RMSNorm over headDim applied to each query and key head before RoPE. */
  qkNorm: boolean;
  /** Mistral/Qwen sliding-window attention width, or null for full causal attention. */
  slidingWindow: number | null;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** config.json fields this library does not interpret, kept so a saved config loses nothing. */
  extraFields: Record<string, unknown>;
}

const SUPPORTED_TYPES = ['llama', 'mistral', 'qwen2', 'qwen3', 'smollm'];

export const ARCHITECTURES: Record<ModelType, string> = {
  llama: 'LlamaForCausalLM',
  mistral: 'MistralForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
};

// transformers' per-class defaults for fields a config.json may leave out.
const DEFAULT_MAX_POSITIONS: Record<ModelType, number> = { llama: 2048, mistral: 131072, qwen2: 32768, qwen3: 32768 };

// Upper bounds on a config.json's sizes, far above any released checkpoint (Llama 3.1 405B: hidden
// 16384, intermediate 53248, 126 layers, 128 heads; Gemma: 256k vocabulary; Llama 4: 10M positions).
// A value past them is a corrupt or hostile file, refused naming the field before anything is
// allocated (num_hidden_layers 1e9 otherwise spent ~25 s building tensor names, then crashed).
const MAXIMUM_SIZES: Record<string, number> = {
  vocab_size: 2 ** 21,
  hidden_size: 2 ** 16,
  intermediate_size: 2 ** 18,
  num_hidden_layers: 1024,
  num_attention_heads: 1024,
  num_key_value_heads: 1024,
  head_dim: 4096,
  max_position_embeddings: 2 ** 26,
  sliding_window: 2 ** 26,
  original_max_position_embeddings: 2 ** 26,
};

// Keys parseModelConfig consumes; everything else lands in extraFields.
const KNOWN_KEYS = new Set([
  'model_type',
  'architectures',
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'head_dim',
  'rms_norm_eps',
  'rope_theta',
  'rope_scaling',
  'max_position_embeddings',
  'tie_word_embeddings',
  'attention_bias',
  'mlp_bias',
  'hidden_act',
  'sliding_window',
  'use_sliding_window',
  'bos_token_id',
  'eos_token_id',
  'partial_rotary_factor',
  'torch_dtype',
]);

/** Reads fields of one JSON object, naming the file and field in every error. */
export class FieldReader {
  constructor(
    private readonly raw: Record<string, unknown>,
    readonly source: string,
  ) {}

  fail(field: string, problem: string): never {
    throw new Error(`${this.source}: field "${field}" ${problem}`);
  }

  has(field: string): boolean {
    return this.raw[field] !== undefined && this.raw[field] !== null;
  }

  positiveInteger(field: string, fallback?: number): number {
    if (!this.has(field)) {
      if (fallback === undefined) this.fail(field, 'is missing (a positive integer is required)');
      return fallback;
    }
    const value = this.raw[field];
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
      this.fail(field, `must be a positive integer, got ${JSON.stringify(value)}`);
    const maximum = MAXIMUM_SIZES[field];
    if (maximum !== undefined && value > maximum)
      this.fail(
        field,
        `is ${value}, over the limit of ${maximum} (larger than any real checkpoint; is the file corrupt?)`,
      );
    return value;
  }

  positiveNumber(field: string, fallback: number): number {
    if (!this.has(field)) return fallback;
    const value = this.raw[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      this.fail(field, `must be a positive number, got ${JSON.stringify(value)}`);
    return value;
  }

  boolean(field: string, fallback: boolean): boolean {
    if (!this.has(field)) return fallback;
    const value = this.raw[field];
    if (typeof value !== 'boolean') this.fail(field, `must be true or false, got ${JSON.stringify(value)}`);
    return value;
  }

  tokenIds(field: string): number[] {
    if (!this.has(field)) return [];
    const value = this.raw[field];
    const list = Array.isArray(value) ? value : [value];
    if (!list.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0)) {
      this.fail(field, `must be a token id or a list of token ids, got ${JSON.stringify(value)}`);
    }
    return list as number[];
  }
}

function parseRopeScaling(fields: FieldReader, raw: unknown): RopeScaling {
  if (raw === undefined || raw === null) return { type: 'none' };
  if (typeof raw !== 'object' || Array.isArray(raw))
    fields.fail('rope_scaling', `must be an object or null, got ${JSON.stringify(raw)}`);
  const scaling = raw as Record<string, unknown>;
  const kind = scaling.rope_type ?? scaling.type ?? 'default';
  const inner = new FieldReader(scaling, `${fields.source} rope_scaling`);
  if (kind === 'default') return { type: 'none' };
  if (kind === 'linear') {
    if (!inner.has('factor')) inner.fail('factor', 'is missing (required for rope_type "linear")');
    return { type: 'linear', factor: inner.positiveNumber('factor', 1) };
  }
  if (kind === 'llama3') {
    for (const key of ['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings']) {
      if (!inner.has(key)) inner.fail(key, 'is missing (required for rope_type "llama3")');
    }
    const result: RopeScaling = {
      type: 'llama3',
      factor: inner.positiveNumber('factor', 1),
      lowFreqFactor: inner.positiveNumber('low_freq_factor', 1),
      highFreqFactor: inner.positiveNumber('high_freq_factor', 4),
      originalMaxPositionEmbeddings: inner.positiveInteger('original_max_position_embeddings'),
    };
    if (result.highFreqFactor <= result.lowFreqFactor)
      inner.fail('high_freq_factor', 'must be greater than low_freq_factor');
    return result;
  }
  return fields.fail('rope_scaling', `has rope_type ${JSON.stringify(kind)}; supported: default, linear, llama3`);
}

function parseModelType(fields: FieldReader, raw: Record<string, unknown>): ModelType {
  const value = raw.model_type;
  if (typeof value !== 'string')
    fields.fail('model_type', `is missing or not a string (supported: ${SUPPORTED_TYPES.join(', ')})`);
  if (!SUPPORTED_TYPES.includes(value))
    fields.fail('model_type', `is "${value}", which is not supported (supported: ${SUPPORTED_TYPES.join(', ')})`);
  return value === 'smollm' ? 'llama' : (value as ModelType);
}

/** Parses and validates the object of an HF config.json; `source` names the file in errors. */
export function parseModelConfig(raw: unknown, source = 'config.json'): ModelConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${source}: must contain a JSON object`);
  const json = raw as Record<string, unknown>;
  const fields = new FieldReader(json, source);
  const modelType = parseModelType(fields, json);
  if (fields.has('hidden_act') && json.hidden_act !== 'silu')
    fields.fail('hidden_act', `is ${JSON.stringify(json.hidden_act)}; only "silu" (SwiGLU) is supported`);
  if (fields.boolean('mlp_bias', false)) fields.fail('mlp_bias', 'is true; MLP biases are not supported');
  if (fields.has('partial_rotary_factor') && json.partial_rotary_factor !== 1)
    fields.fail('partial_rotary_factor', 'must be 1 (partial RoPE is not supported)');
  const hiddenSize = fields.positiveInteger('hidden_size');
  const numHeads = fields.positiveInteger('num_attention_heads');
  const numKeyValueHeads = fields.positiveInteger('num_key_value_heads', numHeads);
  // Qwen3Config defaults head_dim to 128; the others derive it from hidden_size.
  const derivedHeadDim = modelType === 'qwen3' ? 128 : hiddenSize / numHeads;
  if (!fields.has('head_dim') && !Number.isInteger(derivedHeadDim))
    fields.fail('hidden_size', `(${hiddenSize}) is not divisible by num_attention_heads (${numHeads})`);
  const headDim = fields.positiveInteger('head_dim', derivedHeadDim);
  if (headDim % 2 !== 0) fields.fail('head_dim', `must be even for rotary embeddings, got ${headDim}`);
  if (numHeads % numKeyValueHeads !== 0)
    fields.fail('num_key_value_heads', `(${numKeyValueHeads}) must divide num_attention_heads (${numHeads})`);
  const attentionBiasFlag = fields.boolean('attention_bias', false);
  const usesWindow = modelType === 'mistral' || fields.boolean('use_sliding_window', false);
  const config: ModelConfig = {
    modelType,
    vocabSize: fields.positiveInteger('vocab_size'),
    hiddenSize,
    intermediateSize: fields.positiveInteger('intermediate_size'),
    numLayers: fields.positiveInteger('num_hidden_layers'),
    numHeads,
    numKeyValueHeads,
    headDim,
    rmsNormEps: fields.positiveNumber('rms_norm_eps', 1e-6),
    ropeTheta: fields.positiveNumber('rope_theta', 10000),
    ropeScaling: parseRopeScaling(fields, json.rope_scaling),
    maxPositionEmbeddings: fields.positiveInteger('max_position_embeddings', DEFAULT_MAX_POSITIONS[modelType]),
    tieWordEmbeddings: fields.boolean('tie_word_embeddings', false),
    attentionBias: modelType === 'qwen2' || (modelType !== 'mistral' && attentionBiasFlag),
    attentionOutputBias: (modelType === 'llama' || modelType === 'qwen3') && attentionBiasFlag,
    qkNorm: modelType === 'qwen3',
    slidingWindow: usesWindow && fields.has('sliding_window') ? fields.positiveInteger('sliding_window') : null,
    bosTokenId: fields.tokenIds('bos_token_id')[0] ?? null,
    eosTokenIds: fields.tokenIds('eos_token_id'),
    extraFields: Object.fromEntries(Object.entries(json).filter(([key]) => !KNOWN_KEYS.has(key))),
  };
  if (config.bosTokenId !== null && config.bosTokenId >= config.vocabSize)
    fields.fail('bos_token_id', `(${config.bosTokenId}) is not below vocab_size (${config.vocabSize})`);
  for (const id of config.eosTokenIds)
    if (id >= config.vocabSize) fields.fail('eos_token_id', `(${id}) is not below vocab_size (${config.vocabSize})`);
  return config;
}

/** The HF tensor names and shapes a model with this config has, in a stable order (embeddings, layers, norm, head). */
export function expectedTensorShapes(config: ModelConfig): Map<string, number[]> {
  const { hiddenSize: H, intermediateSize: I, headDim: D, numHeads, numKeyValueHeads, vocabSize: V } = config;
  const shapes = new Map<string, number[]>();
  shapes.set('model.embed_tokens.weight', [V, H]);
  for (let layer = 0; layer < config.numLayers; layer++) {
    const prefix = `model.layers.${layer}`;
    shapes.set(`${prefix}.input_layernorm.weight`, [H]);
    shapes.set(`${prefix}.self_attn.q_proj.weight`, [numHeads * D, H]);
    shapes.set(`${prefix}.self_attn.k_proj.weight`, [numKeyValueHeads * D, H]);
    shapes.set(`${prefix}.self_attn.v_proj.weight`, [numKeyValueHeads * D, H]);
    if (config.attentionBias) {
      shapes.set(`${prefix}.self_attn.q_proj.bias`, [numHeads * D]);
      shapes.set(`${prefix}.self_attn.k_proj.bias`, [numKeyValueHeads * D]);
      shapes.set(`${prefix}.self_attn.v_proj.bias`, [numKeyValueHeads * D]);
    }
    if (config.qkNorm) {
      shapes.set(`${prefix}.self_attn.q_norm.weight`, [D]);
      shapes.set(`${prefix}.self_attn.k_norm.weight`, [D]);
    }
    shapes.set(`${prefix}.self_attn.o_proj.weight`, [H, numHeads * D]);
    if (config.attentionOutputBias) shapes.set(`${prefix}.self_attn.o_proj.bias`, [H]);
    shapes.set(`${prefix}.post_attention_layernorm.weight`, [H]);
    shapes.set(`${prefix}.mlp.gate_proj.weight`, [I, H]);
    shapes.set(`${prefix}.mlp.up_proj.weight`, [I, H]);
    shapes.set(`${prefix}.mlp.down_proj.weight`, [H, I]);
  }
  shapes.set('model.norm.weight', [H]);
  if (!config.tieWordEmbeddings) shapes.set('lm_head.weight', [V, H]);
  return shapes;
}

/** Sizes for a small from-scratch model; everything not given gets a small sensible default. */
export interface SmallConfigOptions {
  vocabSize: number;
  hiddenSize?: number;
  numLayers?: number;
  numHeads?: number;
  numKeyValueHeads?: number;
  intermediateSize?: number;
  maxPositionEmbeddings?: number;
  tieWordEmbeddings?: boolean;
  ropeTheta?: number;
  bosTokenId?: number | null;
  eosTokenIds?: number[];
}

/** A Llama-architecture config for a small model trained from scratch (e.g. with the character tokenizer). */
export function createSmallConfig(options: SmallConfigOptions): ModelConfig {
  const hiddenSize = options.hiddenSize ?? 64;
  const numHeads = options.numHeads ?? 4;
  // SwiGLU keeps the MLP's parameter count near a 4x GELU MLP with 8/3 x hidden, rounded to a multiple of 8.
  const intermediateSize = options.intermediateSize ?? Math.ceil((hiddenSize * 8) / 3 / 8) * 8;
  const raw = {
    model_type: 'llama',
    vocab_size: options.vocabSize,
    hidden_size: hiddenSize,
    intermediate_size: intermediateSize,
    num_hidden_layers: options.numLayers ?? 2,
    num_attention_heads: numHeads,
    num_key_value_heads: options.numKeyValueHeads ?? numHeads,
    max_position_embeddings: options.maxPositionEmbeddings ?? 256,
    rope_theta: options.ropeTheta ?? 10000,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: options.tieWordEmbeddings ?? true,
    bos_token_id: options.bosTokenId ?? null,
    eos_token_id: options.eosTokenIds ?? null,
  };
  return parseModelConfig(raw, 'createSmallConfig options');
}

/**
 * RoPE inverse frequencies [headDim / 2], reproducing transformers' float32 arithmetic step by step
 * (each Math.fround is one float32 torch op), so results agree to within an ulp of powf.
 */
export function computeRopeInverseFrequencies(config: ModelConfig): Float32Array {
  const f = Math.fround;
  const dim = config.headDim;
  const base = f(config.ropeTheta);
  const out = new Float32Array(dim / 2);
  for (let i = 0; i < dim / 2; i++) out[i] = f(1 / f(base ** f((2 * i) / dim)));
  const scaling = config.ropeScaling;
  if (scaling.type === 'linear') {
    for (let i = 0; i < out.length; i++) out[i] = f(out[i] / f(scaling.factor));
  } else if (scaling.type === 'llama3') {
    const factor = f(scaling.factor);
    const oldContext = scaling.originalMaxPositionEmbeddings;
    const lowFreqWavelength = f(oldContext / scaling.lowFreqFactor);
    const highFreqWavelength = f(oldContext / scaling.highFreqFactor);
    for (let i = 0; i < out.length; i++) {
      const inverse = out[i];
      // torch evaluates `scalar / tensor` as reciprocal(tensor) * scalar.
      const wavelength = f(f(1 / inverse) * f(2 * Math.PI));
      const scaled = wavelength > lowFreqWavelength ? f(inverse / factor) : inverse;
      const smooth = f(
        f(f(f(1 / wavelength) * f(oldContext)) - f(scaling.lowFreqFactor)) /
          f(scaling.highFreqFactor - scaling.lowFreqFactor),
      );
      const smoothed = f(f(f(f(1 - smooth) * scaled) / factor) + f(smooth * scaled));
      const isMedium = !(wavelength < highFreqWavelength) && !(wavelength > lowFreqWavelength);
      out[i] = isMedium ? smoothed : scaled;
    }
  }
  return out;
}
