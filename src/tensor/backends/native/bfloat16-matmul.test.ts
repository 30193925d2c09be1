/**
 * Tests of the native backend's matmulBfloat16B (gemm-half.c): a product with B given as bfloat16 bits
 * equals, bit for bit, matmul with the same B widened to float32 up front, on every instruction-set path
 * this CPU supports with 1 and 2 threads. The shapes reach every way gemm.c reads B: the few-rows dot
 * path (transposed B) and row path (plain B) across several 64-wide strips, packed panels split over N or
 * shared by threads splitting M, edge tiles, more than one KC depth block and NC column block, batch
 * strides, accumulate, a transposed A, and NaN / Inf in B. The float32 path itself is checked against
 * the spec matmulJs in native-backend.test.ts. Skipped like that file when the addon is not built.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { HalfMatrix } from '../../half-matrix.js';
import { loadNativeBackend, nativeAddonStatus, type NativeBackend } from './native-backend.js';

const status = nativeAddonStatus();
const required = process.env.GRPO_REQUIRE_NATIVE === '1';

function randomFloats(length: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

function shapeOf(M: number, K: number, N: number, extra: Partial<MatmulShape> = {}): MatmulShape {
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

const cases: Array<[string, MatmulShape]> = [];
// Few rows: dot products over a transposed B (M ≤ 32), rows streamed from a plain B (M ≤ 12); N crosses strips.
for (const [M, K, N] of [
  [1, 576, 1536],
  [4, 300, 200],
  [16, 576, 192],
  [32, 33, 130],
  [7, 1000, 65],
])
  for (const transposeB of [true, false])
    if (transposeB || M <= 12)
      cases.push([`few rows ${M}x${K}x${N} tB=${transposeB}`, shapeOf(M, K, N, { transposeB })]);
// Packed panels: 2 threads split N (M small) or share B and split M; K over KC = 256, N over NC = 4096.
for (const [M, K, N] of [
  [40, 300, 100],
  [384, 576, 192],
  [130, 257, 4200],
  [257, 70, 33],
])
  for (const transposeB of [true, false])
    cases.push([`packed ${M}x${K}x${N} tB=${transposeB}`, shapeOf(M, K, N, { transposeB })]);
cases.push(['transposed A', shapeOf(120, 90, 70, { transposeA: true, transposeB: true })]);
cases.push(['few rows, transposed A', shapeOf(5, 90, 70, { transposeA: true, transposeB: true })]);
cases.push(['accumulate', shapeOf(60, 200, 150, { accumulate: true })]);
cases.push(['few rows accumulate', shapeOf(3, 200, 150, { accumulate: true, transposeB: true })]);
cases.push(['batch 3, B strides in elements', shapeOf(45, 70, 90, { batch: 3, bBatchStride: 70 * 90 + 3 })]);
cases.push(['batch 2, shared B', shapeOf(20, 40, 30, { batch: 2, bBatchStride: 0, transposeB: true })]);

function operands(shape: MatmulShape, seed: number) {
  const { batch, M, K, N } = shape;
  const a = randomFloats((batch - 1) * shape.aBatchStride + M * K, seed);
  const bLength = (batch - 1) * shape.bBatchStride + K * N;
  const half = HalfMatrix.fromFloat32(randomFloats(bLength, seed + 1), [1, bLength]);
  const initial = shape.accumulate ? randomFloats(batch * M * N, seed + 2) : new Float32Array(batch * M * N).fill(NaN);
  return { a, bits: half.bits, widened: half.toFloat32(), initial };
}

/** The first index where the two arrays' bits differ, or -1. */
function firstDifference(x: Float32Array, y: Float32Array): number {
  const [xs, ys] = [
    new Uint32Array(x.buffer, x.byteOffset, x.length),
    new Uint32Array(y.buffer, y.byteOffset, y.length),
  ];
  if (xs.length !== ys.length) return 0;
  return xs.findIndex((word, i) => word !== ys[i]);
}

describe.skipIf(!status.available && !required)('native matmulBfloat16B', () => {
  const backends: NativeBackend[] = [];
  afterAll(() => backends.forEach((backend) => backend.dispose()));
  const isas = status.isas.length > 0 ? status.isas : (['generic'] as const);

  for (const isa of isas)
    for (const threads of [1, 2])
      it(`${isa}, ${threads} thread(s): equals matmul of the widened B bit for bit`, () => {
        const backend = loadNativeBackend({ isa, threads })!;
        backends.push(backend);
        let seed = 11;
        for (const [label, shape] of cases) {
          const { a, bits, widened, initial } = operands(shape, (seed += 3));
          const [fromBits, fromWidened] = [initial.slice(), initial.slice()];
          backend.matmulBfloat16B(a, bits, fromBits, shape);
          backend.matmul(a, widened, fromWidened, shape);
          expect(fromWidened.some(Number.isNaN), label).toBe(false);
          expect(firstDifference(fromBits, fromWidened), label).toBe(-1);
        }
        // NaN and Inf in B propagate as they do from the widened copy.
        const shape = shapeOf(20, 40, 30, { transposeB: true });
        const { a, bits } = operands(shape, 5);
        bits[3] = 0x7fc0; // NaN
        bits[40 * 7 + 2] = 0xff80; // -Inf
        const widened = new HalfMatrix(bits, [30, 40]).toFloat32();
        const [fromBits, fromWidened] = [new Float32Array(600), new Float32Array(600)];
        backend.matmulBfloat16B(a, bits, fromBits, shape);
        backend.matmul(a, widened, fromWidened, shape);
        expect(fromWidened.some((x) => !Number.isFinite(x))).toBe(true);
        expect(firstDifference(fromBits, fromWidened)).toBe(-1);
      });

  it('rejects a B that is not bfloat16 bits or too short, naming it', () => {
    const backend = loadNativeBackend({ threads: 1 })!;
    backends.push(backend);
    const shape = shapeOf(4, 5, 6);
    const [a, out] = [new Float32Array(20), new Float32Array(24)];
    expect(() => backend.matmulBfloat16B(a, new Uint16Array(29), out, shape)).toThrow(/b has 29 elements.*needs 30/);
    expect(() => backend.matmulBfloat16B(a, new Float32Array(30) as unknown as Uint16Array, out, shape)).toThrow(
      'matmulBfloat16B: b must be a Uint16Array of bfloat16 bits',
    );
  });
});
