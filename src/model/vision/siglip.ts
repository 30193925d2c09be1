/**
 * The SigLIP vision tower of Idefics3 (SmolVLM), as transformers' Idefics3VisionTransformer computes it
 * for full square tiles: patch embedding (a Conv2d with kernel = stride = patch, done here as patchify
 * + one matmul) + learned position embeddings → N × [LayerNorm → bidirectional multi-head attention
 * (q/k/v/out_proj with biases, scale D^−½) → residual → LayerNorm → fc1 → GELU (tanh approximation or
 * exact, per hidden_act) → fc2 → residual] → post_layernorm. Weights keep their HF names under
 * `model.vision_model.`, stored [out, in].
 *
 * Legend: N = images (tiles), C = channels, S = tile side, p = patch side, P = (S/p)² patches,
 * E = vision hidden size, Hh = heads, D = E/Hh, I = MLP width.
 *
 * Is not: variable-size images. Idefics3's embeddings accept a patch attention mask and bucketize
 * position ids for partially filled images; the Idefics3 processor always produces full S×S tiles, for
 * which every patch is valid and the position ids are 0..P−1 in order, which is the case supported
 * here (pixel values of another size are refused). Nor the connector (idefics3-connector.ts).
 */
import {
  add,
  causalAttention,
  geluTanh,
  gelu,
  layerNorm,
  linear,
  permute,
  reshape,
  tensor,
  type Tensor,
} from '../../tensor/index.js';
import type { VisionConfig } from './idefics3-config.js';

export const VISION_PREFIX = 'model.vision_model.';

/** The HF names and shapes of the vision tower's weights, in checkpoint order. */
export function visionTensorShapes(config: VisionConfig): Map<string, number[]> {
  const { hiddenSize: E, intermediateSize: I, patchSize: p, numChannels: C } = config;
  const patches = (config.imageSize / p) ** 2;
  const shapes = new Map<string, number[]>();
  shapes.set(`${VISION_PREFIX}embeddings.patch_embedding.weight`, [E, C, p, p]);
  shapes.set(`${VISION_PREFIX}embeddings.patch_embedding.bias`, [E]);
  shapes.set(`${VISION_PREFIX}embeddings.position_embedding.weight`, [patches, E]);
  for (let layer = 0; layer < config.numLayers; layer++) {
    const prefix = `${VISION_PREFIX}encoder.layers.${layer}`;
    for (const norm of ['layer_norm1', 'layer_norm2']) {
      shapes.set(`${prefix}.${norm}.weight`, [E]);
      shapes.set(`${prefix}.${norm}.bias`, [E]);
    }
    for (const projection of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
      shapes.set(`${prefix}.self_attn.${projection}.weight`, [E, E]);
      shapes.set(`${prefix}.self_attn.${projection}.bias`, [E]);
    }
    shapes.set(`${prefix}.mlp.fc1.weight`, [I, E]);
    shapes.set(`${prefix}.mlp.fc1.bias`, [I]);
    shapes.set(`${prefix}.mlp.fc2.weight`, [E, I]);
    shapes.set(`${prefix}.mlp.fc2.bias`, [E]);
  }
  shapes.set(`${VISION_PREFIX}post_layernorm.weight`, [E]);
  shapes.set(`${VISION_PREFIX}post_layernorm.bias`, [E]);
  return shapes;
}

/**
 * Rearranges [N, C, S, S] pixels into [N·P, C·p·p] patch rows: patch (py, px) of image n is row
 * n·P + py·(S/p) + px (the order of Conv2d's output flattened over h, w), its entries ordered
 * (c, ky, kx) like the flattened Conv2d weight, so the convolution is one matmul.
 */
export function patchify(pixels: Float32Array, imageCount: number, config: VisionConfig): Float32Array {
  const { imageSize: S, patchSize: p, numChannels: C } = config;
  const side = S / p;
  const width = C * p * p;
  const out = new Float32Array(imageCount * side * side * width);
  for (let n = 0; n < imageCount; n++) {
    for (let py = 0; py < side; py++) {
      for (let px = 0; px < side; px++) {
        let target = ((n * side + py) * side + px) * width;
        for (let c = 0; c < C; c++) {
          for (let ky = 0; ky < p; ky++) {
            const source = ((n * C + c) * S + py * p + ky) * S + px * p;
            out.set(pixels.subarray(source, source + p), target);
            target += p;
          }
        }
      }
    }
  }
  return out;
}

/**
 * Last hidden states [N, P, E] (after post_layernorm) of N tiles laid out [N, C, S, S], already
 * rescaled and normalised. `weight` returns a parameter by HF name. Records a graph only when a
 * weight requires grad and grad is enabled (a frozen tower records nothing).
 */
export function siglipForward(
  weight: (name: string) => Tensor,
  config: VisionConfig,
  pixelValues: Float32Array,
  imageCount: number,
): Tensor {
  const { hiddenSize: E, imageSize: S, patchSize: p, numChannels: C, numHeads: Hh, layerNormEps: eps } = config;
  if (!(Number.isInteger(imageCount) && imageCount >= 1))
    throw new Error(`vision tower: imageCount must be a positive integer, got ${imageCount}`);
  const expected = imageCount * C * S * S;
  if (pixelValues.length !== expected) {
    throw new Error(
      `vision tower: ${pixelValues.length} pixel values, expected ${expected} for ${imageCount} image(s) of [${C}, ${S}, ${S}] (tiles must be the full image_size)`,
    );
  }
  const P = (S / p) ** 2;
  const D = E / Hh;
  const w = (name: string): Tensor => weight(`${VISION_PREFIX}${name}`);
  const patches = tensor(patchify(pixelValues, imageCount, config), [imageCount, P, C * p * p]);
  const kernel = reshape(w('embeddings.patch_embedding.weight'), [E, C * p * p]);
  const embedded = linear(patches, kernel, w('embeddings.patch_embedding.bias')); // [N, P, E]
  let x = add(embedded, w('embeddings.position_embedding.weight')); // positions 0..P−1, broadcast over N
  const activation = config.hiddenAct === 'gelu' ? gelu : geluTanh;
  for (let layer = 0; layer < config.numLayers; layer++) {
    const at = (name: string): Tensor => w(`encoder.layers.${layer}.${name}`);
    const normed = layerNorm(x, at('layer_norm1.weight'), at('layer_norm1.bias'), eps);
    const heads = (name: string): Tensor =>
      permute(
        reshape(linear(normed, at(`self_attn.${name}.weight`), at(`self_attn.${name}.bias`)), [imageCount, P, Hh, D]),
        [0, 2, 1, 3],
      ); // [N, Hh, P, D]
    const attended = causalAttention(heads('q_proj'), heads('k_proj'), heads('v_proj'), { causal: false }); // [N, Hh, P, D]
    const merged = reshape(permute(attended, [0, 2, 1, 3]), [imageCount, P, E]);
    x = add(x, linear(merged, at('self_attn.out_proj.weight'), at('self_attn.out_proj.bias')));
    const normed2 = layerNorm(x, at('layer_norm2.weight'), at('layer_norm2.bias'), eps);
    const hidden = activation(linear(normed2, at('mlp.fc1.weight'), at('mlp.fc1.bias'))); // [N, P, I]
    x = add(x, linear(hidden, at('mlp.fc2.weight'), at('mlp.fc2.bias')));
  }
  return layerNorm(x, w('post_layernorm.weight'), w('post_layernorm.bias'), eps); // [N, P, E]
}
