/**
 * An Idefics3 (SmolVLM) vision-language model: the SigLIP vision tower (siglip.ts), the pixel-shuffle
 * connector (idefics3-connector.ts) and a Llama-family language model (transformer.ts) whose image
 * tokens' embeddings are replaced by the connector's output (the imageFeatures forward option).
 *
 * Training: the tower is frozen by default (its weights get no gradient), so `visionOutputs` runs it
 * under noGrad and a trainer computes it once per image per step; `connect` (pixel shuffle + the
 * projection) and the language model are trainable. `setVisionTrainable(true)` unfreezes the tower,
 * and visionOutputs then records its graph.
 *
 * Names: weights keep Hugging Face's Idefics3ForConditionalGeneration names (model.vision_model.*,
 * model.connector.modality_projection.proj.weight, model.text_model.*, lm_head.weight) in
 * `parameters` and toStoredTensors; `language` holds the text weights under the Transformer's own
 * names (model.layers.N..., model.embed_tokens, model.norm, lm_head), the same Tensor objects.
 * Is not: a checkpoint reader (vision-language-checkpoint.ts) or an image processor.
 */
import { concat, noGrad, Random, tensor, type Tensor } from '../../tensor/index.js';
import type { StoredTensor } from '../safetensors.js';
import type { VisionLanguageConfig } from './idefics3-config.js';
import { siglipForward, visionTensorShapes } from './siglip.js';
import { CONNECTOR_WEIGHT, connectImageFeatures } from './idefics3-connector.js';
import { Transformer, type ForwardOptions } from '../transformer.js';
import { expectedTensorShapes } from '../config.js';

const TEXT_PREFIX = 'model.text_model.';
// Tiles one frozen-tower forward takes (bounds the attention scores' memory, not the result).
const VISION_TILES_PER_FORWARD = 4;

/** The HF name of a language-model weight given its Transformer name (model.X → model.text_model.X). */
export function textNameToHf(name: string): string {
  return name.startsWith('model.') ? `${TEXT_PREFIX}${name.slice('model.'.length)}` : name;
}

/** The Transformer name of an HF text weight (model.text_model.X → model.X), or null for other names. */
export function hfNameToText(name: string): string | null {
  if (name.startsWith(TEXT_PREFIX)) return `model.${name.slice(TEXT_PREFIX.length)}`;
  return name === 'lm_head.weight' ? name : null;
}

/** Every weight's HF name and shape, in checkpoint order: vision tower, connector, language model. */
export function expectedVisionLanguageShapes(config: VisionLanguageConfig): Map<string, number[]> {
  const shapes = new Map(visionTensorShapes(config.vision));
  const { vision, scaleFactor, text } = config;
  shapes.set(CONNECTOR_WEIGHT, [text.hiddenSize, vision.hiddenSize * scaleFactor * scaleFactor]);
  for (const [name, shape] of expectedTensorShapes(text)) shapes.set(textNameToHf(name), shape);
  return shapes;
}

export class VisionLanguageModel {
  /** Every weight by HF name (vision, connector and the language model's own tensors). */
  readonly parameters = new Map<string, Tensor>();

  constructor(
    readonly config: VisionLanguageConfig,
    readonly language: Transformer,
    /** The vision tower's and the connector's weights by HF name. */
    readonly visionParameters: Map<string, Tensor>,
  ) {
    for (const [name, weight] of visionParameters) this.parameters.set(name, weight);
    for (const [name, weight] of language.parameters) this.parameters.set(textNameToHf(name), weight);
    language.imageTokenId = config.imageTokenId;
    this.setVisionTrainable(false);
  }

  /** Builds the model from float32 tensors with HF names (checked by loadVisionLanguageCheckpoint). */
  static fromTensors(config: VisionLanguageConfig, tensors: Map<string, StoredTensor>): VisionLanguageModel {
    const textTensors = new Map<string, StoredTensor>();
    const visionParameters = new Map<string, Tensor>();
    for (const [name, shape] of expectedVisionLanguageShapes(config)) {
      const stored = tensors.get(name);
      if (!stored)
        throw new Error(`VisionLanguageModel: missing tensor "${name}" (expected shape [${shape.join(', ')}])`);
      const textName = hfNameToText(name);
      if (textName) {
        textTensors.set(textName, stored);
        continue;
      }
      const parameter = tensor(stored.data, shape, { requiresGrad: true });
      parameter.name = name;
      visionParameters.set(name, parameter);
    }
    return new VisionLanguageModel(config, Transformer.fromTensors(config.text, textTensors), visionParameters);
  }

  /**
   * A freshly initialised model as HF's Idefics3 _init_weights: N(0, std) linear, conv and embedding
   * weights, zero biases, unit norm weights (LayerNorm biases zero). The language model comes from
   * Transformer.random with the same seed, the vision weights from a seed derived from it.
   */
  static random(config: VisionLanguageConfig, seed: number, standardDeviation = 0.02): VisionLanguageModel {
    const random = new Random(seed * 7919 + 17);
    const tensors = new Map<string, StoredTensor>();
    for (const [name, shape] of expectedVisionLanguageShapes(config)) {
      if (hfNameToText(name)) continue;
      const size = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(size);
      if (/(layer_norm\d|post_layernorm)\.weight$/.test(name)) data.fill(1);
      else if (!name.endsWith('.bias')) for (let i = 0; i < size; i++) data[i] = random.normal() * standardDeviation;
      tensors.set(name, { shape, data });
    }
    const language = Transformer.random(config.text, seed, standardDeviation);
    for (const [name, weight] of language.parameters) tensors.set(textNameToHf(name), weight);
    return VisionLanguageModel.fromTensors(config, tensors);
  }

  /** The weights with HF names in checkpoint order, for saveVisionLanguageCheckpoint (float32 ones share memory). */
  toStoredTensors(): Map<string, StoredTensor> {
    const stored = new Map<string, StoredTensor>();
    const text = this.language.toStoredTensors();
    for (const name of expectedVisionLanguageShapes(this.config).keys()) {
      const textName = hfNameToText(name);
      const value = textName ? text.get(textName) : this.visionParameters.get(name);
      if (!value) throw new Error(`VisionLanguageModel: no weight "${name}"`);
      stored.set(name, { shape: [...value.shape], data: value.data });
    }
    return stored;
  }

  /** Freezes (default) or unfreezes the vision tower; the connector stays trainable either way. */
  setVisionTrainable(trainable: boolean): void {
    for (const [name, weight] of this.visionParameters) weight.requiresGrad = trainable || name === CONNECTOR_WEIGHT;
  }

  /** Whether the vision tower's weights get gradients. */
  get visionTrainable(): boolean {
    return [...this.visionParameters.values()].some((weight) => weight !== this.connectorWeight && weight.requiresGrad);
  }

  /** The weights an optimiser updates: connector, language model (or its adapters), and the tower when unfrozen. */
  trainableParameters(): Tensor[] {
    const language = this.language.adapters
      ? [...this.language.adapters.pairs.values()].flatMap((pair) => [pair.a, pair.b])
      : [...this.language.parameters.values()].filter((weight) => weight.requiresGrad);
    return [...[...this.visionParameters.values()].filter((weight) => weight.requiresGrad), ...language];
  }

  private get connectorWeight(): Tensor {
    return this.visionParameters.get(CONNECTOR_WEIGHT)!;
  }

  private visionWeight = (name: string): Tensor => {
    const weight = this.visionParameters.get(name);
    if (!weight) throw new Error(`VisionLanguageModel: no vision weight "${name}"`);
    return weight;
  };

  /**
   * The tower's last hidden states [imageCount, patches, visionHidden] for pixel values laid out
   * [imageCount, 3, imageSize, imageSize] (rescaled and normalised by the processor). With the tower
   * frozen this runs under noGrad: compute it once per image per step and reuse it.
   */
  visionOutputs(pixelValues: Float32Array, imageCount: number): Tensor {
    const { vision } = this.config;
    if (this.visionTrainable) return siglipForward(this.visionWeight, vision, pixelValues, imageCount);
    const perImage = vision.numChannels * vision.imageSize ** 2;
    if (pixelValues.length !== imageCount * perImage) siglipForward(this.visionWeight, vision, pixelValues, imageCount); // throws, naming both sizes
    // Frozen: a few tiles per forward, so the [tiles, heads, P, P] attention scores stay small
    // (a SmolVLM image is up to 17 tiles of 1024 patches); the outputs are the same.
    const chunks: Tensor[] = [];
    noGrad(() => {
      for (let first = 0; first < imageCount; first += VISION_TILES_PER_FORWARD) {
        const count = Math.min(VISION_TILES_PER_FORWARD, imageCount - first);
        const pixels = pixelValues.subarray(first * perImage, (first + count) * perImage);
        chunks.push(siglipForward(this.visionWeight, vision, pixels, count));
      }
    });
    return chunks.length === 1 ? chunks[0] : noGrad(() => concat(chunks, 0));
  }

  /** Pixel shuffle + modality projection: [imageCount·tokensPerImage, textHidden], differentiable. */
  connect(visionOutputs: Tensor): Tensor {
    return connectImageFeatures(visionOutputs, this.connectorWeight, this.config.scaleFactor);
  }

  /** connect ∘ visionOutputs: the rows that replace the image tokens' embeddings. */
  imageFeatures(pixelValues: Float32Array, imageCount: number): Tensor {
    return this.connect(this.visionOutputs(pixelValues, imageCount));
  }

  /**
   * Logits of the language model with `features` (null: a text-only batch) in place of the image
   * tokens of ids [B, T] (only those at imagePositions when given: see promptImagePositions); every
   * other option is the Transformer's.
   */
  forward(
    ids: Int32Array,
    batchSize: number,
    features: Tensor | null,
    options: ForwardOptions & { imagePositions?: Int32Array } = {},
  ): Tensor {
    const { imagePositions: positions, ...rest } = options;
    const imageFeatures = features ? { tokenId: this.config.imageTokenId, features, positions } : undefined;
    return this.language.forward(ids, batchSize, { ...rest, imageFeatures });
  }
}
