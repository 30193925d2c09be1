/**
 * The KV cache written in place: feeding a sequence in chunks through a cache (grown by doubling,
 * or pre-sized by a capacity hint, or concatenated with gradients while training) gives the logits
 * of one full forward, and the cached path's gradients match the full forward's.
 */
import { describe, expect, it } from 'vitest';
import { noGrad, sum, type Tensor } from '../tensor/index.js';
import { createSmallConfig } from './config.js';
import { Transformer } from './transformer.js';
import { maxDifference } from '../../test/helpers/numeric.js';

const model = Transformer.random(
  createSmallConfig({ vocabSize: 50, hiddenSize: 16, numLayers: 2, numHeads: 4, numKeyValueHeads: 2 }),
  5,
);
const ids = Int32Array.from([1, 7, 3, 9, 22, 4, 4, 31, 2, 17]);
const chunks = [3, 1, 1, 4, 1];

/** Logits of every position, fed chunk by chunk through one cache. */
function chunked(capacity: number): Tensor[] {
  const cache = model.createCache(capacity);
  let start = 0;
  return chunks.map((length) => {
    const logits = model.forward(ids.subarray(start, start + length), 1, { cache });
    start += length;
    return logits;
  });
}

describe('KV cache', () => {
  const full = noGrad(() => model.forward(ids, 1)).data; // [1, 10, V]

  it.each([0, 4, 32])('chunks through a cache with capacity hint %i equal one full forward', (capacity) => {
    const pieces = noGrad(() => chunked(capacity));
    const joined = Float32Array.from(pieces.flatMap((piece) => Array.from(piece.data)));
    expect(maxDifference(joined, full)).toBeLessThan(1e-5);
  });

  it('keeps the graph when used with gradients, matching the full forward gradient', () => {
    const gradients = (loss: () => Tensor): Float32Array[] => {
      for (const parameter of model.parameters.values()) parameter.grad = null;
      loss().backward();
      return [...model.parameters.values()].map((parameter) => parameter.grad!.data.slice());
    };
    const cached = gradients(() => sum(chunked(0).at(-1)!));
    const direct = gradients(() => sum(model.forward(ids, 1, { logitRows: Int32Array.of(ids.length - 1) })));
    cached.forEach((gradient, i) => expect(maxDifference(gradient, direct[i])).toBeLessThan(1e-5));
  });
});
