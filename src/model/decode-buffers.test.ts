import { describe, expect, it } from 'vitest';
import { linear, noGrad, Random, Tensor, tensor } from '../tensor/index.js';
import { createSmallConfig } from './config.js';
import { DecodeBuffers } from './decode-buffers.js';
import { Transformer } from './transformer.js';

const model = Transformer.random(createSmallConfig({ vocabSize: 50, hiddenSize: 32, numHeads: 4, numLayers: 2 }), 3);
const random = new Random(5);
const ids = (count: number) => Int32Array.from({ length: count }, () => Math.floor(random.uniform() * 50));

function randomTensor(shape: number[]): Tensor {
  const data = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => random.normal());
  return tensor(data, shape);
}

describe('DecodeBuffers', () => {
  it('writes linear(x, W) into one array per module, reused by the next call', () => {
    noGrad(() => {
      const buffers = new DecodeBuffers();
      const [weight, other] = [randomTensor([6, 4]), randomTensor([6, 4])];
      const [x3, x2] = [randomTensor([3, 1, 4]), randomTensor([2, 1, 4])];
      const first = buffers.linear(x3, weight, 'q');
      expect(first.shape).toEqual([3, 1, 6]);
      expect(first.data).toEqual(linear(x3, weight).data); // same product, same floats
      const second = buffers.linear(x2, weight, 'q'); // fewer rows: a view of the same array
      expect(second.data).toEqual(linear(x2, weight).data);
      expect(second.data.buffer).toBe(first.data.buffer);
      expect(buffers.linear(x2, other, 'k').data.buffer).not.toBe(first.data.buffer);
    });
  });

  it('gives every forward the logits of one without buffers, as the row count changes between them', () => {
    noGrad(() => {
      const buffers = new DecodeBuffers();
      for (const rows of [3, 1, 4]) {
        const tokens = ids(rows * 2);
        const reused = model.forward(tokens, rows, { outputBuffers: buffers });
        expect(reused.data).toEqual(model.forward(tokens, rows).data);
      }
    });
  });

  it('gives KV-cached decode steps the logits of steps without buffers', () => {
    noGrad(() => {
      const prompt = ids(3 * 4);
      const [plain, withBuffers] = [model.createCache(8), model.createCache(8)];
      model.forward(prompt, 3, { cache: plain });
      model.forward(prompt, 3, { cache: withBuffers });
      const buffers = new DecodeBuffers();
      for (let step = 0; step < 3; step++) {
        const next = ids(3);
        const expected = model.forward(next, 3, { cache: plain });
        expect(model.forward(next, 3, { cache: withBuffers, outputBuffers: buffers }).data).toEqual(expected.data);
      }
    });
  });

  it('refuses an input that needs a gradient', () => {
    const x = tensor(new Float32Array(4), [1, 4], { requiresGrad: true });
    expect(() => new DecodeBuffers().linear(x, randomTensor([2, 4]), 'o')).toThrow(/generation only/);
  });
});
