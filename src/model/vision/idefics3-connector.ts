/**
 * The Idefics3 connector: pixel shuffle by scale_factor s (each s×s block of neighbouring patches
 * becomes one token of s²·E features), then `model.connector.modality_projection.proj` (a Linear
 * without bias) into the language model's hidden size. The shuffle is transformers'
 * Idefics3Connector.pixel_shuffle, the same views and permutes in the same order, built from our
 * differentiable reshape/permute, so gradients reach the projection and the tower's outputs.
 *
 * Legend: N = images, P = patches per image (side² with side = S/p), E = vision hidden, s = scale
 * factor, H = text hidden. Is not: the vision tower (siglip.ts) or the embedding merge (the
 * Transformer's imageFeatures option).
 */
import { matmul, permute, reshape, type Tensor } from '../../tensor/index.js';

export const CONNECTOR_WEIGHT = 'model.connector.modality_projection.proj.weight';

/** [N, P, E] → [N, P/s², E·s²], reproducing HF's pixel_shuffle reshape/permute order exactly. */
export function pixelShuffle(x: Tensor, scaleFactor: number): Tensor {
  const [N, P, E] = x.shape;
  const side = Math.round(Math.sqrt(P));
  if (x.rank !== 3 || side * side !== P || side % scaleFactor !== 0)
    throw new Error(`pixelShuffle: [${x.shape.join(', ')}] is not [N, side², E] with side divisible by ${scaleFactor}`);
  const s = scaleFactor;
  let y = reshape(x, [N, side, side / s, E * s]); // view(bsz, height, width/s, E·s)
  y = permute(y, [0, 2, 1, 3]); // [N, side/s, side, E·s]
  y = reshape(y, [N, side / s, side / s, E * s * s]); // reshape(bsz, width/s, height/s, E·s²)
  y = permute(y, [0, 2, 1, 3]);
  return reshape(y, [N, P / (s * s), E * s * s]);
}

/** Image features [N·P/s², H]: the shuffled tower outputs projected by `projection` [H, E·s²]. */
export function connectImageFeatures(visionOutputs: Tensor, projection: Tensor, scaleFactor: number): Tensor {
  const shuffled = pixelShuffle(visionOutputs, scaleFactor); // [N, P/s², E·s²]
  const flat = reshape(shuffled, [-1, shuffled.shape[2]]);
  return matmul(flat, projection, { transposeB: true }); // [N·P/s², H]
}
