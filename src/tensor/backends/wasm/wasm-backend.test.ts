/**
 * The wasm backend against the js spec (matmulJs): odd shapes, transposes, batch strides, accumulate,
 * NaN/Inf, empty dimensions, 1 and 2 threads; plus argument errors and lifecycle.
 *
 * Tolerance, per output element: |wasm - js| <= 2 (K + 1) u S, with u = 2^-24 the float32 unit
 * roundoff and S = sum_k |a_ik b_kj| (+ |out_old| when accumulating). Each implementation is a
 * sequence of at most K + 1 float32 roundings of partial sums (js rounds every step, wasm blocks
 * the sum by KC and adds into out), so each is within (K + 1) u S of the exact value and the two
 * within twice that. An indexing mistake errs by O(S), thousands of times more at these K.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend, MatmulShape } from '../../backend.js';
import { matmulJs } from '../js.js';
import { createWasmBackend } from './wasm-backend.js';

const UNIT_ROUNDOFF = 2 ** -24;

/** Deterministic values in [-1, 1) (xorshift), so failures reproduce. */
function randomArray(length: number, seed: number): Float32Array {
  const out = new Float32Array(length);
  let state = seed * 2654435761 + 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = ((state >>> 0) / 2 ** 32) * 2 - 1;
  }
  return out;
}

function makeShape(partial: Partial<MatmulShape> & Pick<MatmulShape, 'M' | 'K' | 'N'>): MatmulShape {
  const shape: MatmulShape = {
    batch: 1,
    transposeA: false,
    transposeB: false,
    aBatchStride: 0,
    bBatchStride: 0,
    accumulate: false,
    ...partial,
  };
  return shape;
}

function operandLength(batch: number, stride: number, block: number): number {
  return batch === 0 ? 0 : stride === 0 ? block : (batch - 1) * stride + block;
}

/** S = sum_k |a_ik b_kj| per output element (in float64), computed with matmulJs on |a|, |b|. */
function magnitudes(a: Float32Array, b: Float32Array, shape: MatmulShape): Float64Array {
  const out = new Float32Array(shape.batch * shape.M * shape.N);
  matmulJs(a.map(Math.abs), b.map(Math.abs), out, { ...shape, accumulate: false });
  return Float64Array.from(out, (value) => value * (1 + 4 * (shape.K + 1) * UNIT_ROUNDOFF));
}

/** Runs both backends on the same inputs and checks every element within the stated tolerance. */
function expectAgreement(
  backend: Backend,
  a: Float32Array,
  b: Float32Array,
  shape: MatmulShape,
  initial?: Float32Array,
): void {
  const length = shape.batch * shape.M * shape.N;
  const expected = initial ? initial.slice() : new Float32Array(length).fill(7);
  const actual = expected.slice();
  matmulJs(a, b, expected, shape);
  backend.matmul(a, b, actual, shape);
  const scale = magnitudes(a, b, shape);
  const label = JSON.stringify(shape);
  for (let i = 0; i < length; i++) {
    const want = expected[i];
    const got = actual[i];
    if (Number.isNaN(want) || !Number.isFinite(want)) {
      if (!Object.is(got, want)) throw new Error(`${label}: element ${i} is ${got}, js gives ${want}`);
      continue;
    }
    const bound = 2 * (shape.K + 1) * UNIT_ROUNDOFF * (scale[i] + (shape.accumulate ? Math.abs(initial?.[i] ?? 7) : 0));
    if (!(Math.abs(got - want) <= bound)) {
      throw new Error(`${label}: element ${i} is ${got}, js gives ${want} (bound ${bound})`);
    }
  }
}

function runCase(backend: Backend, shape: MatmulShape, seed: number): void {
  const a = randomArray(operandLength(shape.batch, shape.aBatchStride, shape.M * shape.K), seed);
  const b = randomArray(operandLength(shape.batch, shape.bBatchStride, shape.K * shape.N), seed + 1);
  const initial = shape.accumulate ? randomArray(shape.batch * shape.M * shape.N, seed + 2) : undefined;
  expectAgreement(backend, a, b, shape, initial);
}

const transposes = [
  [false, false],
  [true, false],
  [false, true],
  [true, true],
] as const;

// parallelThreshold 0 sends even tiny products through the workers, so the 2-thread partition
// (by batch, by M, by N) is exercised on the same odd shapes as the single-thread path.
const configurations = [
  { name: '1 thread', options: { threads: 1 } },
  { name: '2 threads', options: { threads: 2, parallelThreshold: 0 } },
];

for (const { name, options } of configurations) {
  describe(`wasm matmul agrees with matmulJs (${name})`, () => {
    const backend = createWasmBackend(options);
    afterAll(() => backend.dispose());

    it('on every combination of small odd sizes and transposes', () => {
      const sizes = [1, 3, 7, 8, 33];
      let seed = 1;
      for (const M of sizes)
        for (const K of sizes)
          for (const N of sizes) {
            for (const [transposeA, transposeB] of transposes) {
              runCase(backend, makeShape({ M, K, N, transposeA, transposeB }), seed++);
            }
          }
    });

    it('on larger shapes (64, 100, 257, a decode-like row, K past one cache block)', () => {
      const shapes = [
        [64, 64, 64],
        [100, 257, 33],
        [257, 100, 129],
        [257, 257, 257],
        [1, 300, 1000],
        [130, 5, 300],
        [9, 600, 17],
      ];
      let seed = 100;
      for (const [M, K, N] of shapes) {
        for (const [transposeA, transposeB] of transposes) {
          runCase(backend, makeShape({ M, K, N, transposeA, transposeB }), seed++);
        }
      }
    });

    it('on batches with packed, broadcast (stride 0) and padded strides', () => {
      const [M, K, N] = [7, 33, 13];
      const strides = [
        [M * K, K * N],
        [0, K * N],
        [M * K, 0],
        [0, 0],
        [M * K + 5, K * N + 3],
      ];
      let seed = 200;
      for (const batch of [1, 2, 3, 5]) {
        for (const [aBatchStride, bBatchStride] of strides) {
          for (const [transposeA, transposeB] of transposes) {
            runCase(backend, makeShape({ batch, M, K, N, aBatchStride, bBatchStride, transposeA, transposeB }), seed++);
          }
        }
      }
    });

    it('when accumulating into out', () => {
      let seed = 300;
      for (const [M, K, N] of [
        [1, 1, 1],
        [7, 33, 5],
        [33, 300, 65],
      ]) {
        for (const [transposeA, transposeB] of transposes) {
          runCase(
            backend,
            makeShape({
              batch: 2,
              M,
              K,
              N,
              transposeA,
              transposeB,
              aBatchStride: M * K,
              bBatchStride: 0,
              accumulate: true,
            }),
            seed++,
          );
        }
      }
    });

    it('propagating NaN and Inf exactly where js does', () => {
      const shape = makeShape({ M: 9, K: 11, N: 10 });
      const a = randomArray(9 * 11, 5);
      const b = randomArray(11 * 10, 6);
      a[2 * 11 + 4] = Number.NaN; // row 2 of out: NaN
      b[3 * 10 + 7] = Number.POSITIVE_INFINITY; // column 7: +-Inf by the sign of a[i,3]
      a[5 * 11 + 3] = 0; // ... except row 5, where 0 * Inf = NaN
      b[8 * 10 + 1] = Number.NEGATIVE_INFINITY;
      b[9 * 10 + 1] = Number.POSITIVE_INFINITY; // column 1: Inf - Inf = NaN unless a is 0
      expectAgreement(backend, a, b, shape);
      const out = new Float32Array(90);
      backend.matmul(a, b, out, shape);
      expect(Number.isNaN(out[2 * 10 + 0])).toBe(true);
      expect(Math.abs(out[0 * 10 + 7])).toBe(Number.POSITIVE_INFINITY);
      expect(Number.isNaN(out[5 * 10 + 7])).toBe(true);
      expect(Number.isNaN(out[0 * 10 + 1])).toBe(true);
    });

    it('propagating NaN and Inf on the single-row (M = 1) paths, B plain and transposed', () => {
      for (const transposeB of [false, true]) {
        const [K, N] = [11, 41];
        const a = randomArray(K, 7);
        const b = randomArray(K * N, 8);
        const at = (k: number, j: number): number => (transposeB ? j * K + k : k * N + j);
        b[at(3, 5)] = Number.NaN; // column 5 (inside the first 32-column / 8-row block)
        b[at(4, 38)] = Number.POSITIVE_INFINITY; // column 38 (in the tail)
        b[at(6, 39)] = Number.POSITIVE_INFINITY;
        b[at(7, 39)] = Number.NEGATIVE_INFINITY; // column 39: Inf - Inf = NaN
        a[10] = Number.NEGATIVE_INFINITY; // K = 11 is not a multiple of 4: the scalar k tail
        const shape = makeShape({ M: 1, K, N, transposeB });
        expectAgreement(backend, a, b, shape);
        const out = new Float32Array(N);
        backend.matmul(a, b, out, shape);
        expect(out.filter((value) => Number.isFinite(value)).length).toBe(0); // a[10] = -Inf reaches every column
      }
    });

    it('with empty dimensions: K = 0 gives zeros, or leaves out unchanged when accumulating', () => {
      const out = new Float32Array(6).fill(3);
      backend.matmul(new Float32Array(0), new Float32Array(0), out, makeShape({ M: 2, K: 0, N: 3 }));
      expect(Array.from(out)).toEqual([0, 0, 0, 0, 0, 0]);
      out.fill(3);
      backend.matmul(new Float32Array(0), new Float32Array(0), out, makeShape({ M: 2, K: 0, N: 3, accumulate: true }));
      expect(Array.from(out)).toEqual([3, 3, 3, 3, 3, 3]);
      const untouched = new Float32Array(4).fill(5);
      backend.matmul(new Float32Array(0), new Float32Array(12), untouched, makeShape({ M: 0, K: 4, N: 3 }));
      backend.matmul(new Float32Array(8), new Float32Array(0), untouched, makeShape({ M: 2, K: 4, N: 0 }));
      backend.matmul(new Float32Array(8), new Float32Array(12), untouched, makeShape({ batch: 0, M: 2, K: 4, N: 3 }));
      expect(Array.from(untouched)).toEqual([5, 5, 5, 5]);
    });
  });
}

describe('wasm backend', () => {
  it('gives bitwise identical results with 1 and 2 threads (each element summed in one order)', () => {
    const one = createWasmBackend({ threads: 1 });
    const two = createWasmBackend({ threads: 2, parallelThreshold: 0 });
    try {
      for (const [batch, M, K, N] of [
        [1, 200, 300, 100],
        [1, 5, 300, 700],
        [3, 50, 70, 90],
      ]) {
        const shape = makeShape({ batch, M, K, N, aBatchStride: M * K, bBatchStride: 0 });
        const a = randomArray(batch * M * K, 11);
        const b = randomArray(K * N, 12);
        const first = new Float32Array(batch * M * N);
        const second = new Float32Array(batch * M * N);
        one.matmul(a, b, first, shape);
        two.matmul(a, b, second, shape);
        expect(Buffer.from(second.buffer).equals(Buffer.from(first.buffer))).toBe(true);
      }
    } finally {
      one.dispose();
      two.dispose();
    }
  });

  it('grows its memory for a large product after small ones', () => {
    const backend = createWasmBackend({ threads: 2 });
    try {
      runCase(backend, makeShape({ M: 3, K: 3, N: 3 }), 21);
      runCase(backend, makeShape({ M: 700, K: 40, N: 900, transposeB: true }), 22); // 3.7 MB of operands
      runCase(backend, makeShape({ M: 5, K: 4, N: 3 }), 23);
    } finally {
      backend.dispose();
    }
  });

  it('rejects operands shorter than the shape needs, naming the operand and the shape', () => {
    const backend = createWasmBackend({ threads: 1 });
    const shape = makeShape({ batch: 2, M: 2, K: 3, N: 4, aBatchStride: 6, bBatchStride: 0 });
    expect(() => backend.matmul(new Float32Array(11), new Float32Array(12), new Float32Array(16), shape)).toThrow(
      /a has 11 elements but batch=2 M=2 K=3 N=4 .* needs 12/,
    );
    expect(() => backend.matmul(new Float32Array(12), new Float32Array(12), new Float32Array(15), shape)).toThrow(
      /out has 15/,
    );
    expect(() =>
      backend.matmul(new Float32Array(12), new Float32Array(12), new Float32Array(16), { ...shape, M: -1 }),
    ).toThrow(/shape.M must be a non-negative integer/);
    backend.dispose();
  });

  it('validates threads, disposes idempotently and refuses work after dispose', () => {
    expect(() => createWasmBackend({ threads: 0 })).toThrow(/threads must be an integer/);
    expect(() => createWasmBackend({ threads: 1.5 })).toThrow(/threads must be an integer/);
    const backend = createWasmBackend({ threads: 2 });
    expect(backend.name).toBe('wasm');
    expect(backend.threads).toBe(2);
    backend.dispose();
    backend.dispose();
    expect(() =>
      backend.matmul(new Float32Array(1), new Float32Array(1), new Float32Array(1), makeShape({ M: 1, K: 1, N: 1 })),
    ).toThrow(/disposed/);
  });
});
