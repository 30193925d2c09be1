/**
 * Tests of the native SGEMM's short row tiles (gemm.h short_kernel): a product whose last row tile is short
 * (M = 64 while decoding: 10 × 6 + 4 rows for the 6-row AVX2 kernel, 4 × 14 + 8 for the 14-row AVX-512 one)
 * gives, bit for bit, the rows that the same product with rows appended up to M = 84 gives, where every row
 * sits in a full tile (84 is a multiple of 4, 6 and 14). That holds only if the short kernel sums each
 * element in the full kernel's order. Covered: the general driver and the packed-once constant operand,
 * both layouts of B (and a small plain B read in place), edge columns, more than one KC = 256 depth block,
 * accumulate, 1 and 2 threads, every instruction-set path this CPU supports. The agreement of the products
 * with the spec matmulJs is native-backend.test.ts's. Skipped like that file when the addon is not built.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { MatmulShape } from '../../backend.js';
import { loadNativeBackend, nativeAddonStatus, type NativeBackend } from './native-backend.js';

const status = nativeAddonStatus();
const required = process.env.GRPO_REQUIRE_NATIVE === '1';
/** Rows every tested product is padded to: whole tiles for MR = 4, 6 and 14. */
const FULL_ROWS = 84;

function randomFloats(length: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

function shapeOf(M: number, K: number, N: number, transposeB: boolean, accumulate: boolean): MatmulShape {
  return { batch: 1, M, K, N, transposeA: false, transposeB, aBatchStride: M * K, bBatchStride: K * N, accumulate };
}

// [M, K, N, transposeB]: M leaves a short last tile of 4 (6-row kernel) or 8 (14-row kernel), or 2 and 4;
// N = 70 and 40 end in edge columns; 64 x 64 x 32 with a plain B is read in place (ldb = N).
const cases = [
  [64, 300, 70, true],
  [64, 300, 70, false],
  [64, 512, 512, true],
  [46, 520, 40, false],
  [50, 64, 33, true],
  [64, 64, 32, false],
] as const;

describe.skipIf(!status.available && !required)('native short row tiles', () => {
  const backends: NativeBackend[] = [];
  afterAll(() => backends.forEach((backend) => backend.dispose()));
  const isas = status.isas.length > 0 ? status.isas : (['generic'] as const);
  for (const isa of isas)
    for (const threads of [1, 2])
      it(`${isa}, ${threads} thread(s): a short last row tile gives the bits of a full one`, () => {
        const backend = loadNativeBackend({ isa, threads });
        if (!backend) throw new Error(`native backend unavailable: ${status.reason}`);
        backends.push(backend);
        let seed = 1;
        for (const [M, K, N, transposeB] of cases)
          for (const accumulate of [false, true])
            for (const constant of [false, true]) {
              const a = randomFloats(FULL_ROWS * K, seed++);
              const b = randomFloats(K * N, seed++);
              const initial = accumulate ? randomFloats(FULL_ROWS * N, seed++) : new Float32Array(FULL_ROWS * N);
              const run = (rows: number) => {
                const out = initial.slice(0, rows * N);
                const product = () =>
                  backend.matmul(a.subarray(0, rows * K), b, out, shapeOf(rows, K, N, transposeB, accumulate));
                if (constant) backend.withConstantOperands!([b], product);
                else product();
                return out;
              };
              const label = `${M}x${K}x${N} tB=${transposeB} accumulate=${accumulate} constant=${constant}`;
              const short = run(M);
              const full = run(FULL_ROWS).subarray(0, M * N);
              expect(
                short.some((x) => x !== 0),
                label,
              ).toBe(true);
              let differing = -1;
              for (let i = 0; i < short.length && differing < 0; i++) if (!Object.is(short[i], full[i])) differing = i;
              if (differing >= 0)
                expect.fail(`${label}: element ${differing} is ${short[differing]}, ${full[differing]} in full tiles`);
            }
      });
});
