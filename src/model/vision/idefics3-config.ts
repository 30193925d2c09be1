/**
 * The configuration of an Idefics3 (SmolVLM) vision-language checkpoint, parsed from and written back
 * to its Hugging Face config.json: `model_type: "idefics3"`, a SigLIP `vision_config`, a Llama
 * `text_config` (parsed by config.ts's parseModelConfig), `scale_factor` (the connector's pixel
 * shuffle) and `image_token_id`. Defaults are transformers' Idefics3Config / Idefics3VisionConfig ones.
 *
 * Is not: the model (vision-language.ts), the weights (vision-language-checkpoint.ts) or the image
 * processor's settings (preprocessor_config.json, image-processor.ts). Errors name the file and field.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FieldReader, parseModelConfig, type ModelConfig } from '../config.js';
import { toHfConfig } from '../config-hf.js';
import { readJsonObject } from '../json-file.js';

/** The SigLIP vision tower's shape (HF Idefics3VisionConfig). */
export interface VisionConfig {
  hiddenSize: number;
  /** Width of the fc1 → GELU → fc2 MLP. */
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  /** Side of the square tile the tower sees (the processor's max_image_size). */
  imageSize: number;
  /** Side of a patch: the patch embedding is a Conv2d with kernel = stride = patchSize. */
  patchSize: number;
  numChannels: number;
  layerNormEps: number;
  /** SigLIP's default is the tanh approximation; exact GELU is also accepted. */
  hiddenAct: 'gelu_pytorch_tanh' | 'gelu';
}

export interface VisionLanguageConfig {
  modelType: 'idefics3';
  /** The language model (Llama family); tieWordEmbeddings comes from the top-level field. */
  text: ModelConfig;
  vision: VisionConfig;
  /** Pixel-shuffle factor: scaleFactor² neighbouring patches become one image token. */
  scaleFactor: number;
  /** The id of the `<image>` token whose embeddings the image features replace. */
  imageTokenId: number;
  /** Image tokens per tile: (imageSize / patchSize)² / scaleFactor². */
  tokensPerImage: number;
  /** Top-level config.json fields this library does not interpret, written back unchanged. */
  extraFields: Record<string, unknown>;
}

const TOP_LEVEL_KEYS = new Set([
  'model_type',
  'architectures',
  'vision_config',
  'text_config',
  'scale_factor',
  'image_token_id',
  'tie_word_embeddings',
  'torch_dtype',
]);
const ACTIVATIONS = ['gelu_pytorch_tanh', 'gelu'] as const;

function parseVisionConfig(raw: unknown, source: string): VisionConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${source}: field "vision_config" must be an object`);
  const json = raw as Record<string, unknown>;
  const fields = new FieldReader(json, `${source} vision_config`);
  const hiddenAct = json.hidden_act ?? 'gelu_pytorch_tanh';
  if (!ACTIVATIONS.includes(hiddenAct as VisionConfig['hiddenAct']))
    fields.fail('hidden_act', `is ${JSON.stringify(hiddenAct)}; supported: ${ACTIVATIONS.join(', ')}`);
  const config: VisionConfig = {
    hiddenSize: fields.positiveInteger('hidden_size', 1152),
    intermediateSize: fields.positiveInteger('intermediate_size', 3072),
    numLayers: fields.positiveInteger('num_hidden_layers', 12),
    numHeads: fields.positiveInteger('num_attention_heads', 16),
    imageSize: fields.positiveInteger('image_size', 224),
    patchSize: fields.positiveInteger('patch_size', 32),
    numChannels: fields.positiveInteger('num_channels', 3),
    layerNormEps: fields.positiveNumber('layer_norm_eps', 1e-6),
    hiddenAct: hiddenAct as VisionConfig['hiddenAct'],
  };
  if (config.hiddenSize % config.numHeads !== 0)
    fields.fail('hidden_size', `(${config.hiddenSize}) is not divisible by num_attention_heads (${config.numHeads})`);
  if (config.imageSize % config.patchSize !== 0)
    fields.fail('image_size', `(${config.imageSize}) is not a multiple of patch_size (${config.patchSize})`);
  return config;
}

/** Parses and validates the object of an idefics3 config.json; `source` names the file in errors. */
export function parseIdefics3Config(raw: unknown, source = 'config.json'): VisionLanguageConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${source}: must contain a JSON object`);
  const json = raw as Record<string, unknown>;
  const fields = new FieldReader(json, source);
  if (json.model_type !== 'idefics3')
    fields.fail('model_type', `is ${JSON.stringify(json.model_type)}; a vision-language checkpoint needs "idefics3"`);
  const textRaw = json.text_config;
  if (typeof textRaw !== 'object' || textRaw === null || Array.isArray(textRaw))
    fields.fail('text_config', 'is missing or not an object (the language model: a Llama config)');
  const tied = fields.boolean('tie_word_embeddings', false);
  const text = parseModelConfig(
    { model_type: 'llama', ...(textRaw as Record<string, unknown>), tie_word_embeddings: tied },
    `${source} text_config`,
  );
  const vision = parseVisionConfig(json.vision_config ?? {}, source);
  const scaleFactor = fields.positiveInteger('scale_factor', 2);
  const side = vision.imageSize / vision.patchSize;
  if (side % scaleFactor !== 0)
    fields.fail('scale_factor', `(${scaleFactor}) does not divide the ${side} patches per side of vision_config`);
  const imageTokenId = fields.tokenIds('image_token_id')[0] ?? 128257;
  if (imageTokenId >= text.vocabSize)
    fields.fail('image_token_id', `(${imageTokenId}) is not below text_config's vocab_size (${text.vocabSize})`);
  return {
    modelType: 'idefics3',
    text,
    vision,
    scaleFactor,
    imageTokenId,
    tokensPerImage: (side / scaleFactor) ** 2,
    extraFields: Object.fromEntries(Object.entries(json).filter(([key]) => !TOP_LEVEL_KEYS.has(key))),
  };
}

/** Reads and parses an idefics3 config.json file. */
export function loadIdefics3Config(file: string): VisionLanguageConfig {
  return parseIdefics3Config(readJsonObject(file), file);
}

/** Writes a config back as the config.json object transformers loads (float32 weights). */
export function toHfIdefics3Config(config: VisionLanguageConfig): Record<string, unknown> {
  const { vision } = config;
  const { tie_word_embeddings: _tied, ...text } = toHfConfig(config.text);
  return {
    ...config.extraFields,
    architectures: ['Idefics3ForConditionalGeneration'],
    model_type: 'idefics3',
    image_token_id: config.imageTokenId,
    scale_factor: config.scaleFactor,
    tie_word_embeddings: config.text.tieWordEmbeddings,
    torch_dtype: 'float32',
    text_config: text,
    vision_config: {
      model_type: 'idefics3_vision',
      hidden_size: vision.hiddenSize,
      intermediate_size: vision.intermediateSize,
      num_hidden_layers: vision.numLayers,
      num_attention_heads: vision.numHeads,
      image_size: vision.imageSize,
      patch_size: vision.patchSize,
      num_channels: vision.numChannels,
      layer_norm_eps: vision.layerNormEps,
      hidden_act: vision.hiddenAct,
    },
  };
}

/** Whether `directory` holds a config.json with model_type "idefics3" (false when it has none or cannot be read). */
export function isIdefics3Checkpoint(directory: string): boolean {
  const file = join(directory, 'config.json');
  if (!existsSync(file)) return false;
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { model_type?: unknown })?.model_type === 'idefics3';
  } catch {
    return false;
  }
}

/** Sizes of a small from-scratch vision-language model; what is not given gets a small default. */
export interface SmallVisionLanguageOptions {
  text: ModelConfig;
  imageTokenId: number;
  hiddenSize?: number;
  numLayers?: number;
  numHeads?: number;
  intermediateSize?: number;
  imageSize?: number;
  patchSize?: number;
  scaleFactor?: number;
  hiddenAct?: VisionConfig['hiddenAct'];
}

/** An idefics3 config around a given (e.g. createSmallConfig) language model, for training from scratch. */
export function createSmallVisionLanguageConfig(options: SmallVisionLanguageOptions): VisionLanguageConfig {
  const hiddenSize = options.hiddenSize ?? 64;
  return parseIdefics3Config(
    {
      model_type: 'idefics3',
      image_token_id: options.imageTokenId,
      scale_factor: options.scaleFactor ?? 2,
      tie_word_embeddings: options.text.tieWordEmbeddings,
      text_config: toHfConfig(options.text),
      vision_config: {
        hidden_size: hiddenSize,
        intermediate_size: options.intermediateSize ?? hiddenSize * 4,
        num_hidden_layers: options.numLayers ?? 2,
        num_attention_heads: options.numHeads ?? 4,
        image_size: options.imageSize ?? 32,
        patch_size: options.patchSize ?? 8,
        num_channels: 3,
        layer_norm_eps: 1e-6,
        hidden_act: options.hiddenAct ?? 'gelu_pytorch_tanh',
      },
    },
    'createSmallVisionLanguageConfig options',
  );
}
