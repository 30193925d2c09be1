/**
 * The native backend's packed-weight products for a prefill: batches past one A block (MC rows: 168 with the
 * AVX2 kernel, 336 with AVX-512) up to 4096 rows multiply the packed copy made inside withConstantOperands,
 * bit for bit the general driver's result and within matmulJs's bound; 4097 rows take the driver. Which path
 * ran is seen through the copy: a packed B does not see its array change inside the scope.
 * Every instruction-set path this CPU supports, 1 and 2 threads.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { expectAgrees, expectedOf, makeCase, makeShape } from './matmul-test-cases.js';
import { loadNativeBackend, nativeAddonStatus, type NativeBackend } from './native-backend.js';

const status = nativeAddonStatus();
const required = process.env.GRPO_REQUIRE_NATIVE === '1';

describe.skipIf(!status.available && !required)('native packed products of a prefill', () => {
  const backends: NativeBackend[] = [];
  afterAll(() => backends.forEach((backend) => backend.dispose()));
  for (const isa of status.isas.length > 0 ? status.isas : (['generic'] as const)) {
    for (const threads of [1, 2]) {
      describe(`${isa}, ${threads} thread(s)`, () => {
        const get = (): NativeBackend => {
          const backend = loadNativeBackend({ isa, threads });
          if (!backend) throw new Error(`native backend unavailable: ${status.reason}`);
          backends.push(backend);
          return backend;
        };

        it("a prefill batch past one A block (up to 4096 rows) takes the packed copy: the general driver's bits", () => {
          const backend = get();
          // MC is 168 (AVX2) or 336 rows: 400 and 1000 rows run several A blocks on the packed copy, 4097 the driver.
          for (const [M, K, N, transposeB] of [
            [400, 300, 70, true],
            [1000, 64, 33, false],
            [4097, 16, 20, true],
          ] as const) {
            const testCase = makeCase(`prefill ${M}x${K}x${N}`, makeShape(M, K, N, { transposeB }), 900 + M);
            const plain = testCase.initial.slice();
            backend.matmul(testCase.a, testCase.b, plain, testCase.shape);
            const packed = testCase.initial.slice();
            backend.withConstantOperands!([testCase.b], () =>
              backend.matmul(testCase.a, testCase.b, packed, testCase.shape),
            );
            expect(new Uint32Array(packed.buffer), testCase.label).toEqual(new Uint32Array(plain.buffer));
            const { value, scale } = expectedOf(testCase);
            expectAgrees(packed, value, scale, K, testCase.label);
            // The path taken: a packed copy does not see B change inside the scope; the driver reads B afresh.
            const b = testCase.b.slice();
            const [first, second] = [packed.slice(), testCase.initial.slice()];
            backend.withConstantOperands!([b], () => {
              backend.matmul(testCase.a, b, first, testCase.shape);
              b.fill(0);
              backend.matmul(testCase.a, b, second, testCase.shape);
            });
            expect(
              second.every((x, i) => x === first[i]),
              `${testCase.label}: packed`,
            ).toBe(M <= 4096);
          }
        });
      });
    }
  }
});
