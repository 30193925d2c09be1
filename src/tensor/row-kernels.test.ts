/**
 * Conformance of the native backend's optional row kernels against the JS loops they replace (the
 * spec, which runs on the `js` backend): each op is run once per backend and the results compared.
 *
 * Stated tolerances: the float32 exp within 2 ulp of Math.exp (rounded to float32); AdamW bit for bit;
 * RMSNorm within 4 ulp-ish relative (2e-6 relative to the row's scale); logSoftmaxGather logprobs within
 * 2e-6 absolute, gradients within 1e-7 absolute (softmax entries); entropy within 2e-6 absolute; prefix
 * attention within 1e-5 absolute (SwiGLU: backends/native/swiglu-kernel.test.ts). NaN stays NaN and ±Infinity stays ±Infinity as in JS.
 * Sizes are odd (vector tails) and large enough to be split over 2 threads. Every instruction set this
 * CPU supports (AVX-512, AVX2, portable) is checked, each being a separate build of the same source.
 * Is not: the PyTorch parity (src/model/transformer.test.ts) or gradient checks (fused.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AdamW } from '../nn/optimizer.js';
import type { Backend } from './backend.js';
import { loadNativeBackend, nativeAddonStatus, nativeExp } from './backends/native/native-backend.js';
import { createBackend, getBackend, setBackend } from './backends/select.js';
import { rmsNorm } from './fused.js';
import { entropyFromLogits, logSoftmaxGather } from './fused-vocabulary.js';
import { prefixAttention } from './prefix-attention.js';
import { noGrad } from './autograd.js';
import { Random, randomNormal } from './random.js';
import { parameter, Tensor } from './tensor.js';

const js = createBackend('js');
const initial = getBackend();
afterEach(() => setBackend(initial));

/** Runs `compute` on the js backend, then on `native`; returns both results. */
function onBoth<R>(native: Backend, compute: () => R): { spec: R; kernel: R } {
  setBackend(js);
  const spec = compute();
  setBackend(native);
  const kernel = compute();
  setBackend(initial);
  return { spec, kernel };
}

function normalData(size: number, seed: number, scale = 1): Float32Array {
  return randomNormal([size], new Random(seed), scale).data;
}

/** Distance in float32 units in the last place between two finite floats of the same sign. */
function ulpDistance(a: number, b: number): number {
  const bits = new Int32Array(new Float32Array([a, b]).buffer);
  return Math.abs(bits[0] - bits[1]);
}

function expectSameBits(actual: Float32Array, expected: Float32Array, label: string): void {
  expect(actual.length, label).toBe(expected.length);
  const a = new Uint32Array(actual.buffer, actual.byteOffset, actual.length);
  const e = new Uint32Array(expected.buffer, expected.byteOffset, expected.length);
  let mismatches = 0;
  for (let i = 0; i < a.length; i++)
    if (a[i] !== e[i] && !(Number.isNaN(actual[i]) && Number.isNaN(expected[i]))) mismatches++;
  expect(mismatches, `${label}: elements that differ`).toBe(0);
}

/** Equal non-finite pattern (NaN where NaN, the same infinities) and finite values within `tolerance`. */
function expectClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  tolerance: (e: number) => number,
  label: string,
): void {
  expect(actual.length, label).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    if (!Number.isFinite(expected[i])) {
      expect(
        Object.is(actual[i], expected[i]) || (Number.isNaN(actual[i]) && Number.isNaN(expected[i])),
        `${label}[${i}]: ${actual[i]} vs ${expected[i]}`,
      ).toBe(true);
      continue;
    }
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / tolerance(expected[i]));
  }
  expect(worst, `${label}: worst error in units of the tolerance`).toBeLessThanOrEqual(1);
}

const status = nativeAddonStatus();
if (!status.available) {
  describe('native row kernels', () => {
    it('are unavailable only where the addon is (set GRPO_REQUIRE_NATIVE=1 to require it)', () => {
      expect(process.env.GRPO_REQUIRE_NATIVE).not.toBe('1');
      expect(nativeAddonStatus().available).toBe(false);
    });
  });
}
for (const isa of status.isas) {
  describe(`native row kernels (${isa}) against the JS loops`, () => {
    const native = loadNativeBackend({ threads: 2, isa })!;
    it('exp is within 2 ulp of Math.exp over the float32 range, with NaN, ±Infinity, overflow and underflow as JS', () => {
      const count = 200_003;
      const x = new Float32Array(count);
      for (let i = 0; i < count; i++) x[i] = -104 + (193 * i) / (count - 1); // -104 .. 89, both ends included
      const specials = Float32Array.from([
        Number.NaN,
        Infinity,
        -Infinity,
        88.72,
        88.73,
        89,
        100,
        -87.5,
        -100,
        -103.9,
        -104.5,
        0,
        -0,
        1e-30,
        -1e-30,
      ]);
      const all = new Float32Array([...x, ...specials]);
      const result = nativeExp(all, isa)!;
      let worst = 0;
      for (let i = 0; i < all.length; i++) {
        const expected = Math.fround(Math.exp(all[i]));
        if (!Number.isFinite(expected) || expected === 0) {
          expect(
            Object.is(result[i], expected) || (Number.isNaN(result[i]) && Number.isNaN(expected)),
            `exp(${all[i]}) = ${result[i]}, JS ${expected}`,
          ).toBe(true);
          continue;
        }
        worst = Math.max(worst, ulpDistance(result[i], expected));
      }
      expect(worst).toBeLessThanOrEqual(2);
    });

    it('rmsNorm forward and gradients match within 2e-6 relative (odd width, rows over 2 threads, NaN row)', () => {
      const [rows, D] = [97, 517];
      const xData = normalData(rows * D, 4, 3);
      xData[5 * D + 7] = Number.NaN;
      const weightData = normalData(D, 5);
      const seed = normalData(rows * D, 6);
      const { spec, kernel } = onBoth(native, () => {
        const x = parameter(xData.slice(), [rows, D]);
        const weight = parameter(weightData.slice(), [D]);
        const out = rmsNorm(x, weight, 1e-5);
        out.backward(seed);
        return { out: out.data, gradX: x.grad!.data, gradWeight: weight.grad!.data };
      });
      const scaled = (floor: number) => (e: number) => 2e-6 * (Math.abs(e) + floor);
      expectClose(kernel.out, spec.out, scaled(1), 'output');
      expectClose(kernel.gradX, spec.gradX, scaled(1), 'gradX');
      // NaN in one row reaches every gradWeight entry on both sides; compare a NaN-free run for the values.
      expect(Array.from(kernel.gradWeight).every(Number.isNaN)).toBe(true);
      const clean = xData.slice();
      clean[5 * D + 7] = 0;
      const sums = onBoth(native, () => {
        const x = parameter(clean.slice(), [rows, D]);
        const weight = parameter(weightData.slice(), [D]);
        rmsNorm(x, weight, 1e-5).backward(seed);
        return weight.grad!.data;
      });
      expectClose(sums.kernel, sums.spec, scaled(10), 'gradWeight');
    });

    it('logSoftmaxGather logprobs and gradients match, NaN/±Inf rows included (odd vocabulary)', () => {
      const [rows, V] = [67, 1001];
      const data = normalData(rows * V, 7, 4);
      data[2 * V + 10] = Number.NaN; // a NaN row
      data[3 * V + 20] = Infinity; // a +Inf row (its chosen id is finite → -Inf)
      data.fill(-Infinity, 4 * V, 5 * V); // an all -Inf row → NaN
      data[6 * V + 30] = -Infinity; // a finite row with one -Inf logit
      const ids = Int32Array.from({ length: rows }, (_, r) => (r * 37) % V);
      ids[6] = 30;
      const rowGrad = normalData(rows, 8);
      rowGrad[9] = 0; // a row the gradient skips
      const { spec, kernel } = onBoth(native, () => {
        const logits = parameter(data.slice(), [rows, V]);
        const logprobs = logSoftmaxGather(logits, ids);
        logprobs.backward(rowGrad);
        return { logprobs: logprobs.data, grad: logits.grad!.data };
      });
      expect(Number.isNaN(spec.logprobs[2]) && spec.logprobs[3] === -Infinity && Number.isNaN(spec.logprobs[4])).toBe(
        true,
      );
      expectClose(kernel.logprobs, spec.logprobs, () => 2e-6, 'logprobs');
      expectClose(kernel.grad, spec.grad, () => 1e-7, 'gradient');
    });

    it('entropyFromLogits matches within 2e-6, NaN/±Inf rows as JS', () => {
      const [rows, V] = [41, 8191];
      const data = normalData(rows * V, 9, 3);
      data[V + 5] = Number.NaN;
      data[2 * V + 5] = Infinity;
      data[3 * V + 5] = -Infinity;
      const { spec, kernel } = onBoth(native, () => entropyFromLogits(new Tensor(data, [rows, V])));
      // The JS loop gives NaN for all three (a -Inf logit adds 0·(-Inf) to the weighted sum); native must too.
      expect([spec[1], spec[2], spec[3]].every(Number.isNaN) && Number.isFinite(spec[0])).toBe(true);
      expectClose(kernel, spec, () => 2e-6, 'entropy');
    });

    it('AdamW steps equal the JS loop bit for bit (odd size, decayed and not)', () => {
      const size = 40_009;
      const { spec, kernel } = onBoth(native, () => {
        const weights = parameter(normalData(size, 10), [size]);
        const norm = parameter(normalData(31, 11), [31]);
        const optimizer = new AdamW(
          [
            { name: 'w', tensor: weights, decay: true },
            { name: 'n', tensor: norm, decay: false },
          ],
          { learningRate: 1e-2, weightDecay: 0.1 },
        );
        for (let step = 0; step < 3; step++) {
          weights.grad = new Tensor(normalData(size, 20 + step, 0.1), [size]);
          norm.grad = new Tensor(normalData(31, 30 + step), [31]);
          optimizer.step();
        }
        const state = optimizer.getState();
        return [weights.data, norm.data, state.moments.w.first, state.moments.w.second, state.moments.n.second];
      });
      spec.forEach((expected, i) => expectSameBits(kernel[i], expected, `array ${i}`));
    });

    it('prefix attention matches the JS loops within 1e-5 (GQA, head dim off the vector width, window, ragged prompts)', () => {
      // Head dims: off the vector width (20, 7), exactly 4 AVX-512 vectors (64), and 144, which no vector case
      // covers on any instruction set (9, 18 or 36 vectors), so it takes the scalar loops.
      for (const [Hq, Hkv, D, window] of [
        [4, 2, 20, undefined],
        [8, 8, 64, 30],
        [2, 1, 7, 3],
        [2, 2, 144, undefined],
      ] as const) {
        const lengths = [37, 5];
        const rowPrefix = Int32Array.of(0, 0, 0, 1, 1);
        const B = rowPrefix.length;
        const S = 11;
        const capacity = S + 3;
        const random = new Random(D);
        const prompts = lengths.map((L) => ({
          keys: randomNormal([1, Hkv, L + 2, D], random, 1),
          values: randomNormal([1, Hkv, L + 2, D], random, 1),
        }));
        const keys = randomNormal([B, Hkv, capacity, D], random, 1);
        const values = randomNormal([B, Hkv, capacity, D], random, 1);
        const q = randomNormal([B, Hq, 1, D], random, 2);
        const prefix = {
          keys: prompts.map((p) => p.keys),
          values: prompts.map((p) => p.values),
          lengths,
          rowPrefix,
          window,
        };
        const { spec, kernel } = onBoth(native, () => noGrad(() => prefixAttention(q, keys, values, S, prefix)).data);
        expectClose(kernel, spec, () => 1e-5, `Hq ${Hq} Hkv ${Hkv} D ${D} window ${window}`);
      }
    });

    it('prefix attention over prompts one prefill stored together: one call for all groups, the same bits as a call per group', () => {
      for (const [Hq, Hkv, D, window] of [
        [4, 2, 20, undefined],
        [8, 8, 64, 12],
      ] as const) {
        const [P, L, S] = [3, 9, 5];
        const random = new Random(D + 1);
        const size = Hkv * (L + 2) * D; // one prompt's [1, Hkv, capacity, D]
        const storedKeys = randomNormal([P * size], random, 1).data;
        const storedValues = randomNormal([P * size], random, 1).data;
        const rowPrefix = Int32Array.of(0, 0, 0, 1, 2, 2); // unequal groups, as after some rows finished
        const B = rowPrefix.length;
        const keys = randomNormal([B, Hkv, S + 1, D], random, 1);
        const values = randomNormal([B, Hkv, S + 1, D], random, 1);
        const q = randomNormal([B, Hq, 1, D], random, 2);
        const prompts = (copy: boolean) =>
          [storedKeys, storedValues].map((stored) =>
            Array.from({ length: P }, (_, p) => {
              const view = stored.subarray(p * size, (p + 1) * size);
              return new Tensor(copy ? Float32Array.from(view) : view, [1, Hkv, L + 2, D]);
            }),
          );
        const prefixOf = (copy: boolean) => {
          const [promptKeys, promptValues] = prompts(copy);
          return { keys: promptKeys, values: promptValues, lengths: [L, L, L], rowPrefix, window };
        };
        let calls = 0;
        const counting: Backend = {
          ...native,
          prefixAttentionRows: (...args) => {
            calls++;
            native.prefixAttentionRows!(...args);
          },
        };
        const label = `Hq ${Hq} Hkv ${Hkv} D ${D} window ${window}`;
        const together = onBoth(
          counting,
          () => noGrad(() => prefixAttention(q, keys, values, S, prefixOf(false))).data,
        );
        expect(calls, label).toBe(1);
        const apart = onBoth(
          counting,
          () => noGrad(() => prefixAttention(q, keys, values, S, prefixOf(true))).data,
        ).kernel;
        expect(calls, label).toBe(1 + P);
        expectSameBits(together.kernel, apart, label);
        expectClose(together.kernel, together.spec, () => 1e-5, label);
      }
    });

    it('the addon refuses row offsets that would read outside the prompt arrays', () => {
      const [Hkv, D, capacity] = [2, 4, 3];
      const prompt = new Float32Array(2 * Hkv * capacity * D); // two prompts' room
      const dims = {
        rows: 2,
        Hq: 2,
        Hkv,
        D,
        L: 2,
        S: 0,
        promptCapacity: capacity,
        ownCapacity: 1,
        firstVisible: 0,
        scale: 1,
      };
      const call = (rowOffsets: Float64Array) =>
        native.prefixAttentionRows!(
          new Float32Array(2 * 2 * D),
          prompt,
          prompt,
          new Float32Array(2 * Hkv * D),
          new Float32Array(2 * Hkv * D),
          new Float32Array(2 * 2 * D),
          { ...dims, rowOffsets },
        );
      expect(() => call(Float64Array.of(0, 0, Hkv * capacity * D, Hkv * capacity * D))).not.toThrow();
      expect(() => call(Float64Array.of(0, 0, Hkv * capacity * D + 1, 0))).toThrow(/rowOffsets must be whole numbers/);
      expect(() => call(Float64Array.of(0, 0.5, 0, 0))).toThrow(/rowOffsets must be whole numbers/);
      expect(() => call(Float64Array.of(0, 0))).toThrow(/rowOffsets is too short/);
    });

    it('the addon rejects arrays too short for the stated rows with an error naming the array', () => {
      const backend = native;
      expect(() =>
        backend.rmsNormForward!(
          new Float32Array(10),
          new Float32Array(5),
          3,
          5,
          1e-5,
          new Float32Array(15),
          new Float32Array(3),
        ),
      ).toThrow(/rmsNormForward: x has 10 elements, needs 15/);
      expect(() =>
        backend.logSumExpRows!(new Float32Array(8), 2, 4, new Float32Array(2), new Float64Array(1), null),
      ).toThrow(/logSumExpRows: logTotal is too short/);
    });
  });
}
