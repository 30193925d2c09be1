/**
 * Forward values and input checks of the ops the vision-language model added: layerNorm against its
 * definition, geluTanh against PyTorch's gelu(approximate='tanh'), replaceRows' refusals. Their
 * gradients are checked on every backend in gradients.test.ts.
 */
import { describe, expect, it } from 'vitest';
import * as T from './index.js';

describe('layerNorm', () => {
  it('centres and scales each row by its biased deviation, then applies weight and bias', () => {
    const x = T.tensor([1, 2, 3, 4, -2, 0, 2, 8], [2, 4]);
    const y = T.layerNorm(x, T.tensor([1, 2, 1, 0.5], [4]), T.tensor([0, 0, 1, -1], [4]), 1e-5);
    const row = [1, 2, 3, 4];
    const mean = 2.5;
    const deviation = Math.sqrt(row.reduce((total, v) => total + (v - mean) ** 2, 0) / 4 + 1e-5);
    const expected = row.map((v, i) => ((v - mean) / deviation) * [1, 2, 1, 0.5][i] + [0, 0, 1, -1][i]);
    for (let i = 0; i < 4; i++) expect(y.data[i]).toBeCloseTo(expected[i], 5);
    expect(() => T.layerNorm(x, T.ones([3]), T.zeros([4]), 1e-5)).toThrow(/weight \[3\] does not match input \[2, 4\]/);
  });
});

describe('geluTanh', () => {
  it("matches PyTorch's gelu(approximate='tanh') and differs from the exact GELU", () => {
    // torch.nn.functional.gelu(torch.tensor([-3., -1., 0.5, 2.]), approximate='tanh') (torch 1.13, float64).
    const y = T.geluTanh(T.tensor([-3, -1, 0.5, 2], [4]));
    const expected = [-0.0036373920817729943, -0.15880800939172324, 0.34571400982514394, 1.954597694087775];
    for (let i = 0; i < 4; i++) expect(y.data[i]).toBeCloseTo(expected[i], 6);
    expect(Math.abs(T.gelu(T.tensor([-3], [1])).data[0] - y.data[0])).toBeGreaterThan(1e-4);
  });
});

describe('replaceRows', () => {
  it('writes the rows at the positions and refuses mismatched counts and repeated positions', () => {
    const x = T.tensor([0, 0, 1, 1, 2, 2], [3, 2]);
    const y = T.replaceRows(x, Int32Array.from([2, 0]), T.tensor([9, 9, 8, 8], [2, 2]));
    expect(Array.from(y.data)).toEqual([8, 8, 1, 1, 9, 9]);
    expect(() => T.replaceRows(x, Int32Array.from([1]), T.zeros([2, 2]))).toThrow(/1 positions but 2 rows/);
    expect(() => T.replaceRows(x, Int32Array.from([1, 1]), T.zeros([2, 2]))).toThrow(/position 1 is given twice/);
  });
});
