/**
 * Parsing an idefics3 config.json shaped like SmolVLM-256M-Instruct's (its sizes and the extra keys
 * it carries in text_config and vision_config), the tensor inventory it implies, writing it back, and
 * isIdefics3Checkpoint on the text-only TinyStories fixture.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isIdefics3Checkpoint, parseIdefics3Config, toHfIdefics3Config } from './idefics3-config.js';
import { expectedVisionLanguageShapes } from './vision-language.js';
import { tinyStoriesModel } from '../../../test/helpers/fixtures.js';

const smolVlm256 = {
  architectures: ['Idefics3ForConditionalGeneration'],
  model_type: 'idefics3',
  image_token_id: 49190,
  scale_factor: 4,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
  vocab_size: 49280,
  hidden_size: 576,
  transformers_version: '4.46.0',
  text_config: {
    model_type: 'llama',
    vocab_size: 49280,
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: 30,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    head_dim: 64,
    max_position_embeddings: 8192,
    rope_theta: 100000,
    rope_scaling: null,
    attention_bias: false,
    hidden_act: 'silu',
    rms_norm_eps: 1e-5,
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: 2,
    tie_word_embeddings: false,
    perceiver_config: { model_type: 'vllama3' },
    pixel_shuffle_factor: 4,
    use_resampler: false,
    _flash_attn_2_enabled: true,
  },
  vision_config: {
    model_type: 'siglip_vision_model',
    use_base_siglip: true,
    hidden_size: 768,
    image_size: 512,
    patch_size: 16,
    num_hidden_layers: 12,
    num_attention_heads: 12,
    intermediate_size: 3072,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
    size: { longest_edge: 2048 },
    max_image_size: { longest_edge: 512 },
  },
};

describe('parseIdefics3Config', () => {
  it('reads a SmolVLM-256M config: 64 image tokens per 512 tile, 197 vision tensors, a [576, 12288] projection', () => {
    const config = parseIdefics3Config(smolVlm256, 'SmolVLM-256M/config.json');
    expect(config.tokensPerImage).toBe(64);
    expect(config.imageTokenId).toBe(49190);
    expect(config.text).toMatchObject({
      hiddenSize: 576,
      numLayers: 30,
      numKeyValueHeads: 3,
      tieWordEmbeddings: false,
    });
    expect(config.vision).toMatchObject({
      hiddenSize: 768,
      imageSize: 512,
      patchSize: 16,
      hiddenAct: 'gelu_pytorch_tanh',
    });
    const shapes = expectedVisionLanguageShapes(config);
    expect([...shapes.keys()].filter((name) => name.startsWith('model.vision_model.'))).toHaveLength(197);
    expect(shapes.get('model.connector.modality_projection.proj.weight')).toEqual([576, 12288]);
    expect(shapes.get('model.vision_model.embeddings.position_embedding.weight')).toEqual([1024, 768]);
    expect(shapes.get('lm_head.weight')).toEqual([49280, 576]);
    expect(shapes.get('model.text_model.layers.29.self_attn.k_proj.weight')).toEqual([192, 576]);
  });

  it('writes back a config that parses to the same thing', () => {
    const config = parseIdefics3Config(smolVlm256, 'SmolVLM-256M/config.json');
    const written = toHfIdefics3Config(config);
    expect(written).toMatchObject({
      model_type: 'idefics3',
      scale_factor: 4,
      image_token_id: 49190,
      vocab_size: 49280,
    });
    expect(parseIdefics3Config(JSON.parse(JSON.stringify(written)), 'written')).toEqual(config);
  });

  it('names the field at fault', () => {
    expect(() => parseIdefics3Config({ ...smolVlm256, model_type: 'llama' }, 'c.json')).toThrow(
      /c.json: field "model_type" is "llama"; a vision-language checkpoint needs "idefics3"/,
    );
    expect(() => parseIdefics3Config({ ...smolVlm256, text_config: undefined }, 'c.json')).toThrow(
      /field "text_config" is missing/,
    );
    expect(() =>
      parseIdefics3Config({ ...smolVlm256, vision_config: { ...smolVlm256.vision_config, patch_size: 15 } }, 'c.json'),
    ).toThrow(/c.json vision_config: field "image_size" \(512\) is not a multiple of patch_size \(15\)/);
  });
});

describe('isIdefics3Checkpoint', () => {
  it('is false for a text-only checkpoint and for a folder without config.json', () => {
    const root = new URL('../../../', import.meta.url).pathname;
    expect(isIdefics3Checkpoint(tinyStoriesModel)).toBe(false);
    expect(isIdefics3Checkpoint(join(root, 'no-such-folder'))).toBe(false);
  });
});
