/**
 * Putting image features into a language model's token embeddings (Idefics3's inputs_merger): the
 * embedding row of every position whose id is the image token is replaced, in order of appearance over
 * the flat [B·T] ids, by the next row of the features. Differentiable w.r.t. the embedding table (the
 * rows kept) and the features (tensor/replace-rows.ts).
 *
 * Is not: the vision tower or connector that produce the features (siglip.ts, idefics3-connector.ts).
 */
import { formatShape, replaceRows, type Tensor } from '../../tensor/index.js';

/** The image features given to a forward: rows [count, H] for the `count` positions holding tokenId. */
export interface ImageFeaturesInput {
  tokenId: number;
  features: Tensor;
  /**
   * The flat [B·T] positions to replace (each must hold tokenId); default: every position holding it.
   * A forward over prompt + completion passes the prompts' positions (promptImagePositions): an image
   * token the policy generated stays a plain token embedding, as in HF generation, where only the
   * prefill merges features.
   */
  positions?: Int32Array;
}

/** The flat positions of tokenId in ids, in order. */
export function imageTokenPositions(ids: Int32Array, tokenId: number): Int32Array {
  const positions: number[] = [];
  for (let i = 0; i < ids.length; i++) if (ids[i] === tokenId) positions.push(i);
  return Int32Array.from(positions);
}

/**
 * The positions of tokenId in ids [B, T] before column promptEnds[b] of each row b: the prompts' image
 * tokens, leaving out any the completions hold.
 */
export function promptImagePositions(
  ids: Int32Array,
  batchSize: number,
  tokenId: number,
  promptEnds: ArrayLike<number>,
): Int32Array {
  const T = ids.length / batchSize;
  if (promptEnds.length !== batchSize)
    throw new Error(`promptImagePositions: ${promptEnds.length} prompt ends for ${batchSize} rows`);
  const positions: number[] = [];
  for (let b = 0; b < batchSize; b++)
    for (let t = 0; t < Math.min(promptEnds[b], T); t++) if (ids[b * T + t] === tokenId) positions.push(b * T + t);
  return Int32Array.from(positions);
}

/** embedded [B·T, H] with the image-token rows replaced; a count mismatch is an error naming both counts. */
export function mergeImageFeatures(embedded: Tensor, ids: Int32Array, input: ImageFeaturesInput): Tensor {
  const positions = input.positions ?? imageTokenPositions(ids, input.tokenId);
  for (const position of positions) {
    if (ids[position] !== input.tokenId)
      throw new Error(
        `image features: position ${position} holds token ${ids[position]}, not the image token ${input.tokenId}`,
      );
  }
  const { features } = input;
  const hidden = embedded.shape[1];
  if (features.rank !== 2 || features.shape[1] !== hidden)
    throw new Error(`image features have shape ${formatShape(features.shape)}; expected [count, ${hidden}]`);
  if (positions.length !== features.shape[0]) {
    throw new Error(
      `image token count mismatch: the ids hold ${positions.length} image tokens (id ${input.tokenId}) but the image features have ${features.shape[0]} rows`,
    );
  }
  return positions.length === 0 ? embedded : replaceRows(embedded, positions, features);
}
