/**
 * split-product.ts with the js product as the runner (no GPU needed): every split gives the unsplit
 * product bit for bit (each element is still one k-ordered sum), no piece's operand exceeds the cap, and
 * a row longer than the cap is refused naming K.
 */
import { describe, expect, it } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { matmulJs } from '../js.js';
import { runInFittingProducts } from './split-product.js';

const cases: [string, MatmulShape][] = [];
for (const transposeA of [false, true]) {
  for (const transposeB of [false, true]) {
    for (const accumulate of [false, true]) {
      cases.push([
        `transposeA ${transposeA}, transposeB ${transposeB}, accumulate ${accumulate}`,
        { batch: 3, M: 13, K: 7, N: 11, transposeA, transposeB, aBatchStride: 91, bBatchStride: 77, accumulate },
      ]);
    }
  }
}
cases.push([
  'one B for every batch',
  {
    batch: 2,
    M: 9,
    K: 5,
    N: 40,
    transposeA: false,
    transposeB: true,
    aBatchStride: 45,
    bBatchStride: 0,
    accumulate: false,
  },
]);
cases.push([
  'one decode row, a wide weight',
  {
    batch: 1,
    M: 1,
    K: 6,
    N: 97,
    transposeA: false,
    transposeB: true,
    aBatchStride: 6,
    bBatchStride: 582,
    accumulate: true,
  },
]);

describe('runInFittingProducts', () => {
  it.each(cases)('equals the unsplit product bit for bit, every piece within the cap: %s', (_label, shape) => {
    const aLength = shape.aBatchStride === 0 ? shape.M * shape.K : shape.batch * shape.aBatchStride;
    const bLength = shape.bBatchStride === 0 ? shape.K * shape.N : shape.batch * shape.bBatchStride;
    const a = Float32Array.from({ length: aLength }, (_, i) => Math.sin(i * 0.7));
    const b = Float32Array.from({ length: bLength }, (_, i) => Math.cos(i * 0.3));
    const start = Float32Array.from({ length: shape.batch * shape.M * shape.N }, (_, i) => (i % 3) - 1);
    const expected = start.slice();
    matmulJs(a, b, expected, shape);
    const cap = 30;
    let pieces = 0;
    const actual = start.slice();
    runInFittingProducts(a, b, actual, shape, cap, (pieceA, pieceB, pieceOut, piece) => {
      pieces++;
      expect(piece.M * piece.K).toBeLessThanOrEqual(cap);
      expect(piece.K * piece.N).toBeLessThanOrEqual(cap);
      expect(piece.batch * piece.M * piece.N).toBeLessThanOrEqual(cap);
      matmulJs(pieceA, pieceB, pieceOut, piece);
    });
    expect(pieces).toBeGreaterThan(1);
    expect(Array.from(actual)).toEqual(Array.from(expected));
  });

  it('runs a product that fits as it is', () => {
    const shape: MatmulShape = {
      batch: 1,
      M: 2,
      K: 2,
      N: 2,
      transposeA: false,
      transposeB: false,
      aBatchStride: 4,
      bBatchStride: 4,
      accumulate: false,
    };
    const calls: MatmulShape[] = [];
    runInFittingProducts(
      new Float32Array(4),
      new Float32Array(4),
      new Float32Array(4),
      shape,
      4,
      (_a, _b, _out, piece) => calls.push(piece),
    );
    expect(calls).toEqual([shape]);
  });

  it('refuses a row of A longer than one binding, naming K', () => {
    const shape: MatmulShape = {
      batch: 1,
      M: 1,
      K: 50,
      N: 1,
      transposeA: false,
      transposeB: false,
      aBatchStride: 50,
      bBatchStride: 50,
      accumulate: false,
    };
    expect(() =>
      runInFittingProducts(new Float32Array(50), new Float32Array(50), new Float32Array(1), shape, 30, () => {}),
    ).toThrow(/K=50 is longer than one GPU binding holds \(30 floats\)/);
  });
});
