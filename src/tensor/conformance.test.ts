/**
 * Every backend against the js spec, op by op (forward and gradients), on odd shapes. Only matmul is
 * a backend kernel, but attention, linear and their gradients reach it with many geometries, so the
 * whole op is compared. Tolerance: 1e-5 relative to the largest magnitude, float32 summation order.
 */
import { describe, expect, it } from 'vitest';
import * as T from './index.js';
import { backendsUnderTest } from './test-backends.js';

type Case = [string, number[][], (...inputs: T.Tensor[]) => T.Tensor];
const cases: Case[] = [
  [
    'matmul 1×1·1×1',
    [
      [1, 1],
      [1, 1],
    ],
    (a, b) => T.matmul(a, b),
  ],
  [
    'matmul 7×33·33×5',
    [
      [7, 33],
      [33, 5],
    ],
    (a, b) => T.matmul(a, b),
  ],
  [
    'matmul batched transposed',
    [
      [3, 33, 7],
      [3, 9, 33],
    ],
    (a, b) => T.matmul(a, b, { transposeA: true, transposeB: true }),
  ],
  ['linear 2×17×65 → 31', [[2, 17, 65], [31, 65], [31]], (x, w, b) => T.linear(x, w, b)],
  [
    'attention GQA odd sizes',
    [
      [2, 6, 7, 5],
      [2, 2, 9, 5],
      [2, 2, 9, 5],
    ],
    (q, k, v) => T.causalAttention(q, k, v),
  ],
  [
    'attention one query, long cache',
    [
      [1, 4, 1, 8],
      [1, 1, 33, 8],
      [1, 1, 33, 8],
    ],
    (q, k, v) => T.causalAttention(q, k, v),
  ],
];

function compare(actual: Float32Array, expected: Float32Array, label: string): void {
  expect(actual.length, label).toBe(expected.length);
  let scale = 1e-30;
  for (const value of expected) scale = Math.max(scale, Math.abs(value));
  for (let i = 0; i < expected.length; i++) {
    if (Math.abs(actual[i] - expected[i]) > 1e-5 * scale) {
      throw new Error(`${label}: element ${i} is ${actual[i]}, the js spec gives ${expected[i]}`);
    }
  }
}

function run(backend: T.Backend, inputs: Float32Array[], shapes: number[][], fn: Case[2]): Float32Array[] {
  const previous = T.getBackend();
  T.setBackend(backend);
  try {
    const tensors = inputs.map((data, i) => T.tensor(data.slice(), shapes[i], { requiresGrad: true }));
    const output = fn(...tensors);
    const seed = Float32Array.from(output.data, (_, i) => Math.sin(i + 1));
    output.backward(seed);
    return [output.data, ...tensors.map((t) => t.grad!.data)];
  } finally {
    T.setBackend(previous);
  }
}

const [spec, ...others] = backendsUnderTest();
for (const { name, backend } of others) {
  describe(`${name} agrees with js`, () => {
    it.each(cases)('%s (forward and gradients)', (_label, shapes, fn) => {
      const random = new T.Random(3);
      const inputs = shapes.map((shape) => T.randomNormal(shape, random).data);
      const expected = run(spec.backend, inputs, shapes, fn);
      const actual = run(backend, inputs, shapes, fn);
      expected.forEach((values, i) => compare(actual[i], values, i === 0 ? 'output' : `gradient of input ${i - 1}`));
    });
  });
}
