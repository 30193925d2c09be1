/**
 * Training smoke test on every backend: a 2-layer MLP (tanh) learns y = sin(2·x₀) + x₁² from 64
 * points with AdamW. The mean squared error must fall by at least 20× in 300 steps (it starts near
 * the variance of y, about 0.7; a working optimiser and correct gradients reach < 0.02).
 */
import { describe, expect, it } from 'vitest';
import * as T from '../tensor/index.js';
import { backendsUnderTest } from '../tensor/test-backends.js';
import { AdamW } from './index.js';

function trainMlp(): { first: number; last: number } {
  const random = new T.Random(11);
  const inputs = T.randomUniform([64, 2], random, -1, 1);
  const targets = T.tensor(
    Array.from({ length: 64 }, (_, i) => Math.sin(2 * inputs.data[2 * i]) + inputs.data[2 * i + 1] ** 2),
    [64, 1],
  );
  const hidden = 32;
  const w1 = T.parameter(T.randomNormal([hidden, 2], random, 0.7).data, [hidden, 2]);
  const b1 = T.parameter(new Float32Array(hidden), [hidden]);
  const w2 = T.parameter(T.randomNormal([1, hidden], random, 0.2).data, [1, hidden]);
  const b2 = T.parameter([0], [1]);
  const optimizer = new AdamW(
    [w1, b1, w2, b2].map((tensor, i) => ({ name: `p${i}`, tensor, decay: i % 2 === 0 })),
    { learningRate: 0.02, weightDecay: 0 },
  );
  let first = NaN;
  let last = NaN;
  for (let step = 0; step < 300; step++) {
    const prediction = T.linear(T.tanh(T.linear(inputs, w1, b1)), w2, b2);
    const loss = T.mean(T.square(T.sub(prediction, targets)));
    optimizer.zeroGrad();
    loss.backward();
    optimizer.step();
    if (step === 0) first = loss.item();
    last = loss.item();
  }
  return { first, last };
}

describe('training smoke test', () => {
  for (const { name, backend } of backendsUnderTest()) {
    it(`an MLP fits a toy mapping with AdamW on ${name}`, () => {
      const previous = T.getBackend();
      T.setBackend(backend);
      try {
        const { first, last } = trainMlp();
        expect(first).toBeGreaterThan(0.3);
        expect(last).toBeLessThan(first / 20);
      } finally {
        T.setBackend(previous);
      }
    });
  }
});
