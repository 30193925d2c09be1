/**
 * Matmul test cases shared by the native backend's test files: seeded operands, the shape record, and the
 * check against the executable spec matmulJs within the first-order float32 bound (see
 * native-backend.test.ts's header for the tolerance).
 * Is not: a test file (no tests of its own) or part of the library.
 */
import { expect } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { matmulJs } from '../js.js';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1; // uniform in [-1, 1)
  };
}

export function randomArray(length: number, seed: number): Float32Array {
  const next = random(seed);
  return Float32Array.from({ length }, next);
}

export function makeShape(M: number, K: number, N: number, extra: Partial<MatmulShape> = {}): MatmulShape {
  return {
    batch: 1,
    M,
    K,
    N,
    transposeA: false,
    transposeB: false,
    aBatchStride: M * K,
    bBatchStride: K * N,
    accumulate: false,
    ...extra,
  };
}

export interface Case {
  label: string;
  shape: MatmulShape;
  a: Float32Array;
  b: Float32Array;
  initial: Float32Array;
}

export function makeCase(label: string, shape: MatmulShape, seed: number): Case {
  const { batch, M, K, N } = shape;
  const aLength = batch === 0 ? 0 : (batch - 1) * shape.aBatchStride + M * K;
  const bLength = batch === 0 ? 0 : (batch - 1) * shape.bBatchStride + K * N;
  // Without accumulate the output starts as NaN garbage, which must be overwritten, never read.
  const initial = shape.accumulate ? randomArray(batch * M * N, seed + 2) : new Float32Array(batch * M * N).fill(NaN);
  return { label, shape, a: randomArray(aLength, seed), b: randomArray(bLength, seed + 1), initial };
}

/** Runs matmulJs for the expected values and for Σ|a||b| (the error scale of each element). */
export function expectedOf(testCase: Case): { value: Float32Array; scale: Float32Array } {
  const value = testCase.initial.slice();
  matmulJs(testCase.a, testCase.b, value, testCase.shape);
  const scale = new Float32Array(value.length);
  matmulJs(testCase.a.map(Math.abs), testCase.b.map(Math.abs), scale, { ...testCase.shape, accumulate: false });
  if (testCase.shape.accumulate) for (let i = 0; i < scale.length; i++) scale[i] += Math.abs(testCase.initial[i]);
  return { value, scale };
}

export function expectAgrees(
  actual: Float32Array,
  expected: Float32Array,
  scale: Float32Array,
  K: number,
  label: string,
) {
  expect(actual.length).toBe(expected.length);
  const relative = 4 * (K + 1) * 2 ** -24;
  let bad = -1;
  for (let i = 0; i < actual.length && bad < 0; i++) {
    const x = actual[i];
    const y = expected[i];
    if (Number.isFinite(y)) {
      if (!(Math.abs(x - y) <= relative * scale[i] + 1e-30)) bad = i;
    } else if (!Object.is(x, y) && !(Number.isNaN(x) && Number.isNaN(y))) bad = i;
  }
  if (bad >= 0) expect.fail(`${label}: element ${bad} is ${actual[bad]}, matmulJs gives ${expected[bad]}`);
}
