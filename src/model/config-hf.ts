/**
 * A ModelConfig written back as the config.json object transformers loads: HF field names, the
 * architecture's class name, the type-specific fields (biases, sliding window) and RoPE scaling.
 *
 * Is not: the reader (config.ts parses and checks a config.json into a ModelConfig).
 */
import { ARCHITECTURES, type ModelConfig, type RopeScaling } from './config.js';

function ropeScalingToHf(scaling: RopeScaling): Record<string, unknown> | null {
  if (scaling.type === 'none') return null;
  if (scaling.type === 'linear') return { rope_type: 'linear', factor: scaling.factor };
  return {
    rope_type: 'llama3',
    factor: scaling.factor,
    low_freq_factor: scaling.lowFreqFactor,
    high_freq_factor: scaling.highFreqFactor,
    original_max_position_embeddings: scaling.originalMaxPositionEmbeddings,
  };
}

/** Writes a config back as the config.json object transformers loads (float32 weights assumed). */
export function toHfConfig(config: ModelConfig): Record<string, unknown> {
  const eos =
    config.eosTokenIds.length === 0
      ? null
      : config.eosTokenIds.length === 1
        ? config.eosTokenIds[0]
        : config.eosTokenIds;
  const out: Record<string, unknown> = {
    ...config.extraFields,
    architectures: [ARCHITECTURES[config.modelType]],
    model_type: config.modelType,
    vocab_size: config.vocabSize,
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.numLayers,
    num_attention_heads: config.numHeads,
    num_key_value_heads: config.numKeyValueHeads,
    head_dim: config.headDim,
    hidden_act: 'silu',
    rms_norm_eps: config.rmsNormEps,
    rope_theta: config.ropeTheta,
    rope_scaling: ropeScalingToHf(config.ropeScaling),
    max_position_embeddings: config.maxPositionEmbeddings,
    tie_word_embeddings: config.tieWordEmbeddings,
    bos_token_id: config.bosTokenId,
    eos_token_id: eos,
    torch_dtype: 'float32',
  };
  if (config.modelType === 'llama' || config.modelType === 'qwen3') out.attention_bias = config.attentionBias;
  if (config.modelType === 'llama') out.mlp_bias = false;
  if (config.modelType === 'mistral') out.sliding_window = config.slidingWindow;
  if (config.modelType === 'qwen2' || config.modelType === 'qwen3') {
    out.use_sliding_window = config.slidingWindow !== null;
    out.sliding_window = config.slidingWindow;
  }
  return out;
}
