/**
 * Tests for config.json parsing, defaults, validation errors, writing back, createSmallConfig, and the
 * RoPE inverse frequencies against the float32 values PyTorch computed for each fixture
 * (scripts/reference/make_fixtures.py, transformers' modeling_rope_utils arithmetic).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeRopeInverseFrequencies, createSmallConfig, parseModelConfig } from './config.js';
import { loadModelConfig } from './checkpoint.js';
import { toHfConfig } from './config-hf.js';
import { testFixture, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const fixtures = testFixture('models');
const FIXTURE_NAMES = [
  'qwen2-bias-untied',
  'qwen3-qk-norm',
  'llama-rope-llama3',
  'llama-rope-linear-bias',
  'mistral-sharded-f16',
];

const readJson = (file: string): Record<string, unknown> => JSON.parse(readFileSync(file, 'utf8'));
const minimal = {
  model_type: 'llama',
  vocab_size: 100,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
};

describe('parseModelConfig', () => {
  it('reads the TinyStories Llama config', () => {
    const config = loadModelConfig(join(tinyStoriesModel, 'config.json'));
    expect(config).toMatchObject({
      modelType: 'llama',
      vocabSize: 2048,
      hiddenSize: 128,
      intermediateSize: 384,
      numLayers: 2,
      numHeads: 8,
      numKeyValueHeads: 4,
      headDim: 16,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: { type: 'none' },
      maxPositionEmbeddings: 512,
      tieWordEmbeddings: true,
      attentionBias: false,
      attentionOutputBias: false,
      qkNorm: false,
      slidingWindow: null,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    expect(config.extraFields).toMatchObject({ initializer_range: 0.02, transformers_version: '4.41.2' });
  });

  it('reads each architecture feature from the fixtures', () => {
    const qwen2 = loadModelConfig(join(fixtures, 'qwen2-bias-untied/config.json'));
    expect([qwen2.attentionBias, qwen2.attentionOutputBias, qwen2.tieWordEmbeddings, qwen2.slidingWindow]).toEqual([
      true,
      false,
      false,
      null,
    ]);
    const qwen3 = loadModelConfig(join(fixtures, 'qwen3-qk-norm/config.json'));
    expect([qwen3.qkNorm, qwen3.headDim, qwen3.numKeyValueHeads, qwen3.attentionBias]).toEqual([true, 16, 1, false]);
    expect(loadModelConfig(join(fixtures, 'llama-rope-llama3/config.json')).ropeScaling).toEqual({
      type: 'llama3',
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 256,
    });
    const linear = loadModelConfig(join(fixtures, 'llama-rope-linear-bias/config.json'));
    expect([linear.ropeScaling, linear.attentionBias, linear.attentionOutputBias]).toEqual([
      { type: 'linear', factor: 4 },
      true,
      true,
    ]);
    const mistral = loadModelConfig(join(fixtures, 'mistral-sharded-f16/config.json'));
    expect([mistral.modelType, mistral.slidingWindow, mistral.attentionBias]).toEqual(['mistral', 4096, false]);
  });

  it('fills transformers defaults for omitted fields', () => {
    const config = parseModelConfig(minimal);
    expect(config).toMatchObject({
      numKeyValueHeads: 4,
      headDim: 8,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      maxPositionEmbeddings: 2048,
      tieWordEmbeddings: false,
      bosTokenId: null,
      eosTokenIds: [],
    });
    expect(parseModelConfig({ ...minimal, model_type: 'qwen3' }).headDim).toBe(128);
    expect(parseModelConfig({ ...minimal, model_type: 'smollm' }).modelType).toBe('llama');
    expect(parseModelConfig({ ...minimal, eos_token_id: [7, 9] }).eosTokenIds).toEqual([7, 9]);
    expect(parseModelConfig({ ...minimal, rope_scaling: { rope_type: 'default' } }).ropeScaling).toEqual({
      type: 'none',
    });
  });

  const failures: [string, Record<string, unknown>, RegExp][] = [
    [
      'an unsupported model_type',
      { ...minimal, model_type: 'gpt2' },
      /my\.json: field "model_type" is "gpt2", which is not supported \(supported: llama, mistral, qwen2, qwen3, smollm\)/,
    ],
    ['a missing model_type', { ...minimal, model_type: undefined }, /my\.json: field "model_type" is missing/],
    ['a missing required size', { ...minimal, hidden_size: undefined }, /my\.json: field "hidden_size" is missing/],
    [
      'a non-integer size',
      { ...minimal, vocab_size: 10.5 },
      /my\.json: field "vocab_size" must be a positive integer, got 10\.5/,
    ],
    [
      'kv heads that do not divide the heads',
      { ...minimal, num_key_value_heads: 3 },
      /field "num_key_value_heads" \(3\) must divide num_attention_heads \(4\)/,
    ],
    [
      'a hidden size not divisible by heads',
      { ...minimal, hidden_size: 30 },
      /field "hidden_size" \(30\) is not divisible by num_attention_heads \(4\)/,
    ],
    ['an odd head_dim', { ...minimal, head_dim: 7 }, /field "head_dim" must be even/],
    ['a negative eps', { ...minimal, rms_norm_eps: -1 }, /field "rms_norm_eps" must be a positive number/],
    [
      'a non-boolean flag',
      { ...minimal, tie_word_embeddings: 'yes' },
      /field "tie_word_embeddings" must be true or false/,
    ],
    ['an unsupported activation', { ...minimal, hidden_act: 'gelu' }, /field "hidden_act" is "gelu"; only "silu"/],
    ['MLP biases', { ...minimal, mlp_bias: true }, /field "mlp_bias" is true/],
    [
      'an unsupported rope type',
      { ...minimal, rope_scaling: { type: 'yarn', factor: 4 } },
      /field "rope_scaling" has rope_type "yarn"; supported: default, linear, llama3/,
    ],
    [
      'llama3 scaling without its factors',
      { ...minimal, rope_scaling: { rope_type: 'llama3', factor: 8 } },
      /my\.json rope_scaling: field "low_freq_factor" is missing/,
    ],
    [
      'linear scaling without a factor',
      { ...minimal, rope_scaling: { rope_type: 'linear' } },
      /rope_scaling: field "factor" is missing/,
    ],
    [
      'an eos id outside the vocabulary',
      { ...minimal, eos_token_id: 100 },
      /field "eos_token_id" \(100\) is not below vocab_size \(100\)/,
    ],
    [
      'a malformed eos id',
      { ...minimal, eos_token_id: 'x' },
      /field "eos_token_id" must be a token id or a list of token ids/,
    ],
    // Sizes past any real checkpoint: refused before the loader builds a billion tensor names.
    [
      'a billion layers',
      { ...minimal, num_hidden_layers: 1e9 },
      /my\.json: field "num_hidden_layers" is 1000000000, over the limit of 1024/,
    ],
    [
      'a 2^32 hidden size',
      { ...minimal, hidden_size: 2 ** 32 },
      /my\.json: field "hidden_size" is 4294967296, over the limit of 65536/,
    ],
    [
      'a huge vocabulary',
      { ...minimal, vocab_size: 1e12 },
      /my\.json: field "vocab_size" is 1000000000000, over the limit/,
    ],
    [
      'huge positions',
      { ...minimal, max_position_embeddings: 2 ** 40 },
      /my\.json: field "max_position_embeddings" is 1099511627776, over the limit/,
    ],
  ];
  for (const [what, raw, message] of failures) {
    it(`names the file and field for ${what}`, () => {
      expect(() => parseModelConfig(raw, 'my.json')).toThrow(message);
    });
  }

  it('names a missing or unreadable config file', () => {
    expect(() => loadModelConfig('/nonexistent/config.json')).toThrow(
      /\/nonexistent\/config\.json: cannot read the model config \(ENOENT\)/,
    );
  });
});

describe('toHfConfig', () => {
  for (const name of FIXTURE_NAMES) {
    it(`${name}: parses back to the same config and keeps the HF field values`, () => {
      const raw = readJson(join(fixtures, name, 'config.json'));
      const config = parseModelConfig(raw);
      const written = toHfConfig(config);
      expect(parseModelConfig(written)).toEqual(config);
      for (const key of [
        'model_type',
        'vocab_size',
        'hidden_size',
        'num_key_value_heads',
        'tie_word_embeddings',
        'rope_theta',
        'architectures',
      ]) {
        expect(written[key]).toEqual(raw[key]);
      }
    });
  }

  it('writes llama3 rope scaling with the keys transformers requires', () => {
    const written = toHfConfig(loadModelConfig(join(fixtures, 'llama-rope-llama3/config.json')));
    expect(written.rope_scaling).toEqual({
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 256,
    });
  });
});

describe('createSmallConfig', () => {
  it('gives a valid tied Llama config with small defaults', () => {
    const config = createSmallConfig({ vocabSize: 40, eosTokenIds: [1] });
    expect(config).toMatchObject({
      modelType: 'llama',
      vocabSize: 40,
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      headDim: 16,
      intermediateSize: 176,
      tieWordEmbeddings: true,
      eosTokenIds: [1],
    });
    expect(parseModelConfig(toHfConfig(config))).toEqual(config);
  });

  it('refuses impossible sizes with a clear error', () => {
    expect(() => createSmallConfig({ vocabSize: 40, hiddenSize: 30, numHeads: 4 })).toThrow(
      /createSmallConfig options: field "hidden_size" \(30\)/,
    );
  });
});

describe('computeRopeInverseFrequencies', () => {
  for (const name of FIXTURE_NAMES) {
    it(`${name}: matches PyTorch's float32 inverse frequencies`, () => {
      const config = loadModelConfig(join(fixtures, name, 'config.json'));
      const expected = (readJson(join(fixtures, name, 'reference.json')).rope as { inverse_frequencies: number[] })
        .inverse_frequencies;
      const ours = computeRopeInverseFrequencies(config);
      expect(ours.length).toBe(config.headDim / 2);
      for (let i = 0; i < expected.length; i++) {
        // powf in libm and Math.pow may differ in the last bit; one float32 ulp is 2^-23 relative.
        expect(Math.abs(ours[i] - expected[i]) / expected[i]).toBeLessThanOrEqual(2 ** -23);
      }
    });
  }

  it('llama3 scaling leaves high frequencies, divides low ones and blends the middle band', () => {
    const config = loadModelConfig(join(fixtures, 'llama-rope-llama3/config.json'));
    const plain = computeRopeInverseFrequencies({ ...config, ropeScaling: { type: 'none' } });
    const scaled = computeRopeInverseFrequencies(config);
    expect(scaled[0]).toBe(plain[0]); // wavelength 2π < 64: unchanged
    expect(scaled[1] / plain[1]).toBeGreaterThan(1 / 8); // wavelength ~166, inside [64, 256]: blended
    expect(scaled[1] / plain[1]).toBeLessThan(1);
    expect(scaled[3] / plain[3]).toBeCloseTo(1 / 8, 6); // long wavelength: divided by the factor
  });
});
