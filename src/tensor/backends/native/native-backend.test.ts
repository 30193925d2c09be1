/**
 * Tests of the `native` backend against the executable spec `matmulJs`, on every instruction-set path
 * this CPU supports (avx512 / avx2 / generic) with 1 and 2 threads.
 *
 * Tolerance: both implementations accumulate in float32 in different orders, so each is within
 * K·2⁻²⁴·Σ|a||b| of the exact sum (first-order bound); we allow twice that per element (their difference)
 * with a 2x margin. Non-finite values must match exactly in kind (NaN / +Inf / -Inf).
 * When the addon is not built the suite is skipped with a printed reason, unless GRPO_REQUIRE_NATIVE=1
 * (CI), in which case it fails.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { matmulJs } from '../js.js';
import { expectAgrees, expectedOf, makeCase, makeShape, randomArray, type Case } from './matmul-test-cases.js';
import { loadNativeBackend, nativeAddonStatus, type NativeBackend } from './native-backend.js';

const status = nativeAddonStatus();
const required = process.env.GRPO_REQUIRE_NATIVE === '1';
if (!status.available && !required) console.warn(`native backend tests skipped: ${status.reason}`);

function buildCases(): Case[] {
  const cases: Case[] = [];
  let seed = 1;
  const sizes = [1, 7, 33];
  for (const M of sizes)
    for (const K of sizes)
      for (const N of sizes) {
        cases.push(makeCase(`${M}x${K}x${N}`, makeShape(M, K, N), seed++));
      }
  for (const [M, K, N] of [
    [257, 257, 257],
    [15, 300, 65],
    [29, 5, 95],
    [700, 40, 37],
    [3, 7, 4100],
    [1, 513, 33],
    [120, 8, 4100],
  ]) {
    cases.push(makeCase(`${M}x${K}x${N}`, makeShape(M, K, N), seed++));
  }
  for (const transposeA of [false, true])
    for (const transposeB of [false, true]) {
      for (const [M, K, N] of [
        [33, 257, 7],
        [257, 33, 129],
        [130, 130, 130],
      ]) {
        const label = `${M}x${K}x${N} tA=${transposeA} tB=${transposeB}`;
        cases.push(makeCase(label, makeShape(M, K, N, { transposeA, transposeB }), seed++));
      }
    }
  // Few rows: a transposed B takes the dot-product path, a plain B is read in place (gemm.c).
  for (const [M, K, N, transposeA] of [
    [1, 17, 5, false],
    [3, 300, 37, false],
    [8, 300, 1000, false],
    [7, 1000, 70, true],
    [5, 33, 1, true],
    [4, 16, 4, false],
  ] as const) {
    const shape = makeShape(M, K, N, { transposeA, transposeB: true });
    cases.push(makeCase(`small M ${M}x${K}x${N} tA=${transposeA} tB=true`, shape, seed++));
    cases.push(makeCase(`small M ${M}x${K}x${N} accumulate`, { ...shape, accumulate: true }, seed++));
  }
  for (const [M, K, N] of [
    [20, 300, 700],
    [28, 9, 64],
    [29, 40, 96],
  ]) {
    cases.push(makeCase(`in-place B ${M}x${K}x${N}`, makeShape(M, K, N), seed++));
  }
  const [M, K, N] = [45, 70, 90];
  for (const batch of [2, 3]) {
    const strides: Array<[number, number]> = [
      [0, K * N],
      [M * K, 0],
      [0, 0],
      [M * K + 5, K * N + 3],
    ];
    for (const [aBatchStride, bBatchStride] of strides) {
      const shape = makeShape(M, K, N, { batch, aBatchStride, bBatchStride, transposeB: batch === 3 });
      cases.push(makeCase(`batch ${batch} strides ${aBatchStride}/${bBatchStride}`, shape, seed++));
    }
  }
  cases.push(makeCase('batch 3 of 130x130x130', makeShape(130, 130, 130, { batch: 3 }), seed++));
  // 2 threads: shared mode over three products of three depth blocks each (the two B buffers alternate across
  // products) with more rows than one A block, so row chunks of several sizes end in a partial tile.
  const shared = makeShape(400, 600, 200, { batch: 3, transposeA: true, aBatchStride: 400 * 600 + 7 });
  cases.push(makeCase('batch 3 of 400x600x200 tA', shared, seed++));
  // Attention-sized products: a small plain B whose columns fill whole panels is read in place (gemm.c).
  for (const transposeA of [false, true]) {
    const shape = makeShape(64, 70, 48, { batch: 4, transposeA, accumulate: true, bBatchStride: 70 * 48 + 16 });
    cases.push(makeCase(`batch 4 of 64x70x48 tA=${transposeA} accumulate`, shape, seed++));
  }
  for (const [M, K, N] of [
    [7, 33, 1],
    [300, 300, 300],
    [5, 1, 5],
  ]) {
    cases.push(makeCase(`${M}x${K}x${N} accumulate`, makeShape(M, K, N, { accumulate: true }), seed++));
  }
  cases.push(
    makeCase('batch 2 accumulate tA', makeShape(20, 600, 40, { batch: 2, accumulate: true, transposeA: true }), seed++),
  );
  return cases;
}

function withNonFinite(): Case[] {
  const make = (label: string, edit: (c: Case) => void): Case => {
    const testCase = makeCase(label, makeShape(33, 40, 70), 999);
    edit(testCase);
    return testCase;
  };
  return [
    make('NaN in A row 3', (c) => void (c.a[3 * 40 + 17] = NaN)),
    make('+Inf in B column 5', (c) => void (c.b[11 * 70 + 5] = Infinity)),
    make('-Inf in A, +Inf in B', (c) => {
      c.a[0] = -Infinity; // row 0, k 0
      c.b[69] = Infinity; // k 0, column 69 → row 0 column 69 gets -Inf·Inf = -Inf, others ±Inf
    }),
    make('Inf times zero', (c) => {
      c.a[5 * 40 + 2] = 0;
      c.b[2 * 70 + 9] = Infinity; // row 5, column 9: 0·Inf = NaN
    }),
  ];
}

const zeroSizeShapes: Array<[string, MatmulShape]> = [
  ['M = 0', makeShape(0, 5, 6)],
  ['N = 0', makeShape(5, 6, 0)],
  ['K = 0 overwrite', makeShape(4, 0, 9)],
  ['K = 0 accumulate', makeShape(4, 0, 9, { accumulate: true })],
  ['batch = 0', makeShape(3, 3, 3, { batch: 0 })],
  ['K = 0 batch 2 transposed', makeShape(3, 0, 5, { batch: 2, transposeA: true, transposeB: true })],
];

describe.skipIf(!status.available && !required)('native backend', () => {
  const backends: NativeBackend[] = [];
  afterAll(() => backends.forEach((backend) => backend.dispose()));
  const isas = status.isas.length > 0 ? status.isas : (['generic'] as const);

  it('is available (GRPO_REQUIRE_NATIVE=1 makes a missing addon a failure)', () => {
    expect(status.available, status.reason).toBe(true);
    const auto = loadNativeBackend({ threads: 1 });
    expect(auto).not.toBeNull();
    backends.push(auto!);
    expect(auto!.name).toBe('native');
    expect(auto!.isa).toBe(status.isas[0]);
  });

  const cases = buildCases();
  const nonFinite = withNonFinite();
  const expected = new Map<Case, { value: Float32Array; scale: Float32Array }>();
  const expectedFor = (testCase: Case) => {
    if (!expected.has(testCase)) expected.set(testCase, expectedOf(testCase));
    return expected.get(testCase)!;
  };

  for (const isa of isas) {
    for (const threads of [1, 2]) {
      describe(`${isa}, ${threads} thread(s)`, () => {
        const get = (): NativeBackend => {
          const backend = loadNativeBackend({ isa, threads });
          if (!backend) throw new Error(`native backend unavailable: ${status.reason}`);
          backends.push(backend);
          return backend;
        };

        it('agrees with matmulJs on odd shapes, transposes, batch strides and accumulate', () => {
          const backend = get();
          expect(backend.isa).toBe(isa);
          expect(backend.threads).toBe(threads);
          for (const testCase of cases) {
            const out = testCase.initial.slice();
            backend.matmul(testCase.a, testCase.b, out, testCase.shape);
            const { value, scale } = expectedFor(testCase);
            expectAgrees(out, value, scale, testCase.shape.K, testCase.label);
          }
        });

        it('multiplies constant operands through their packed copy, and drops the copy with the scope', () => {
          const backend = get();
          // Rows from the packed path's lower limit to one whole A block (MC = 336 for the 14-row kernel);
          // K and N off the KC = 256 and NR = 32 grid; both transposes of B; accumulate.
          const shapes = [
            [8, 300, 45, true],
            [15, 64, 8192, true],
            [64, 512, 70, false],
            [336, 257, 33, true],
            [20, 5, 1, true],
          ] as const;
          let seed = 500;
          for (const [M, K, N, transposeB] of shapes) {
            for (const accumulate of [false, true]) {
              const testCase = makeCase(
                `packed ${M}x${K}x${N} tB=${transposeB}${accumulate ? ' accumulate' : ''}`,
                makeShape(M, K, N, { transposeB, accumulate }),
                seed++,
              );
              const { value, scale } = expectedOf(testCase);
              backend.withConstantOperands!([testCase.b], () => {
                for (let call = 0; call < 2; call++) {
                  // the second call reuses the copy made by the first
                  const out = testCase.initial.slice();
                  backend.matmul(testCase.a, testCase.b, out, testCase.shape);
                  expectAgrees(out, value, scale, K, `${testCase.label} call ${call}`);
                }
              });
            }
          }
          // A packed copy does not follow its array: after the scope, a changed B is read afresh, and inside
          // it an array that was not declared constant is never cached.
          const shape = makeShape(16, 40, 50, { transposeB: true });
          const a = randomArray(16 * 40, 7);
          const weight = randomArray(40 * 50, 8);
          const other = randomArray(40 * 50, 9);
          const product = (b: Float32Array) => {
            const out = new Float32Array(16 * 50);
            backend.matmul(a, b, out, shape);
            return out;
          };
          const fresh = (b: Float32Array) => {
            const out = new Float32Array(16 * 50);
            matmulJs(a, b, out, shape);
            return out;
          };
          backend.withConstantOperands!([weight], () => {
            product(weight);
            product(other);
            other.fill(0.5);
            expect(product(other)).toEqual(product(other.slice()));
            expect(Math.max(...product(other).map((x, i) => Math.abs(x - fresh(other)[i])))).toBeLessThan(1e-4);
          });
          weight.fill(0.25);
          expect(Math.max(...product(weight).map((x, i) => Math.abs(x - fresh(weight)[i])))).toBeLessThan(1e-4);
        });

        it('propagates NaN and Inf like matmulJs', () => {
          const backend = get();
          for (const testCase of nonFinite) {
            const out = testCase.initial.slice();
            backend.matmul(testCase.a, testCase.b, out, testCase.shape);
            const { value, scale } = expectedFor(testCase);
            expect(
              value.some((x) => !Number.isFinite(x)),
              testCase.label,
            ).toBe(true);
            expectAgrees(out, value, scale, testCase.shape.K, testCase.label);
          }
        });

        it('handles zero-size dimensions', () => {
          const backend = get();
          for (const [label, shape] of zeroSizeShapes) {
            const size = shape.batch * shape.M * shape.N;
            const out = new Float32Array(size + 1).fill(7); // one guard element past the end
            backend.matmul(randomArray(64, 1), randomArray(64, 2), out, shape);
            const want = new Float32Array(size + 1).fill(7);
            if (!shape.accumulate) want.fill(0, 0, size);
            expect(Array.from(out), label).toEqual(Array.from(want));
          }
        });
      });
    }
  }

  it('is deterministic over many calls, whether the pool spins or sleeps between them', () => {
    const backend = loadNativeBackend({ threads: 2 });
    expect(backend).not.toBeNull();
    backends.push(backend!);
    const testCase = makeCase('repeated 130x200x150', makeShape(130, 200, 150), 4242);
    const first = new Float32Array(130 * 150);
    backend!.matmul(testCase.a, testCase.b, first, testCase.shape);
    const { value, scale } = expectedOf(testCase);
    expectAgrees(first, value, scale, testCase.shape.K, testCase.label);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let call = 0; call < 60; call++) {
      // Every 10th call waits 5 ms first: longer than the workers' spin (about 1 ms), so they are asleep and get woken.
      if (call % 10 === 0) Atomics.wait(pause, 0, 0, 5);
      const out = new Float32Array(130 * 150).fill(NaN);
      backend!.matmul(testCase.a, testCase.b, out, testCase.shape);
      const differs = out.findIndex((x, i) => x !== first[i]); // bitwise: same partition, same order
      expect(differs, `call ${call}`).toBe(-1);
    }
  });

  it('rejects bad arguments with a message naming the field', () => {
    const backend = loadNativeBackend({ threads: 1 });
    expect(backend).not.toBeNull();
    backends.push(backend!);
    const shape = makeShape(4, 5, 6);
    const a = new Float32Array(20);
    const b = new Float32Array(30);
    expect(() => backend!.matmul(a, b, new Float32Array(23), shape)).toThrow(/out has 23 elements.*needs 24/);
    expect(() => backend!.matmul(a, new Float32Array(29), new Float32Array(24), shape)).toThrow(/b has 29/);
    expect(() => backend!.matmul(a, b, new Float32Array(24), { ...shape, K: -1 })).toThrow(/shape.K/);
    const notFloats = new Float64Array(20) as unknown as Float32Array;
    expect(() => backend!.matmul(notFloats, b, new Float32Array(24), shape)).toThrow(/a must be a Float32Array/);
    expect(() => loadNativeBackend({ threads: 0 })).toThrow(/options.threads/);
    expect(() => loadNativeBackend({ isa: 'sse' as 'auto' })).toThrow(/options.isa/);
    expect(() => loadNativeBackend({ packBudgetBytes: -1 })).toThrow(/options.packBudgetBytes/);
    const saved = process.env.GRPO_NATIVE_PACK_MB;
    process.env.GRPO_NATIVE_PACK_MB = 'lots';
    try {
      expect(() => loadNativeBackend()).toThrow(/GRPO_NATIVE_PACK_MB must be a non-negative number of MiB, got 'lots'/);
    } finally {
      if (saved === undefined) delete process.env.GRPO_NATIVE_PACK_MB;
      else process.env.GRPO_NATIVE_PACK_MB = saved;
    }
    const savedRetain = process.env.GRPO_NATIVE_RETAIN_FREED;
    process.env.GRPO_NATIVE_RETAIN_FREED = 'false';
    try {
      expect(() => loadNativeBackend()).toThrow(/GRPO_NATIVE_RETAIN_FREED must be 0 .* or 1, got 'false'/);
    } finally {
      if (savedRetain === undefined) delete process.env.GRPO_NATIVE_RETAIN_FREED;
      else process.env.GRPO_NATIVE_RETAIN_FREED = savedRetain;
    }
    backend!.dispose();
    backend!.dispose(); // safe twice
    expect(() => backend!.matmul(a, b, new Float32Array(24), shape)).toThrow(/after dispose/);
  });
});
