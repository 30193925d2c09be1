/**
 * The decode-speed paths of the fused ops checked against the plain ones they replace, on every
 * backend: swiglu against silu·mul (bitwise on the spec, forward and gradients), causalAttention on a cache with
 * unused room (keyLength) against the dense cache, prefixAttention against causalAttention over the
 * concatenated [prompt, generated] keys, rope with a shared angle table, and size-1 permutes.
 */
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from './index.js';
import { ropeTable, swiglu } from './fused.js';
import { prefixAttention } from './prefix-attention.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';
import { maxDifference, normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(11);
const normal = normalSampler(random);

/** [B, H, S, D] → [B, H, room, D] with the extra positions filled with garbage that must not be read. */
function withRoom(x: T.Tensor, room: number): T.Tensor {
  const [B, H, S, D] = x.shape;
  const data = new Float32Array(B * H * room * D).fill(Number.NaN);
  for (let row = 0; row < B * H; row++) data.set(x.data.subarray(row * S * D, (row + 1) * S * D), row * room * D);
  return new T.Tensor(data, [B, H, room, D]);
}

function expectClose(actual: Float32Array, expected: Float32Array, tolerance: number): void {
  expect(maxDifference(actual, expected)).toBeLessThan(tolerance);
}

for (const { name, backend } of backendsUnderTest()) {
  describe(`decode-path ops on ${name}`, () => {
    useBackendInSuite(backend);

    // The spec loop equals the composite bit for bit; a backend kernel rounds as it states (native: swiglu-kernel.test.ts).
    const exact = !backend.swigluForward;
    it(`swiglu equals silu(gate)·up ${exact ? 'bitwise' : 'within 2^-21 relative'}, gradients included, and passes gradCheck`, () => {
      const gate = T.parameter(
        normal([3, 7]).data.map((v) => v * 4),
        [3, 7],
      );
      const up = T.parameter(normal([3, 7]).data, [3, 7]);
      const seed = normal([3, 7]).data;
      const fused = swiglu(gate, up);
      fused.backward(seed);
      const [fusedGate, fusedUp] = [gate.grad!.data.slice(), up.grad!.data.slice()];
      gate.grad = up.grad = null;
      const composite = T.mul(T.silu(gate), up);
      composite.backward(seed);
      const expectEqual = (actual: Float32Array, expected: Float32Array) => {
        if (exact) expect(Array.from(actual)).toEqual(Array.from(expected));
        else expectClose(actual, expected, 2 ** -21 * Math.max(...expected.map(Math.abs)));
      };
      expectEqual(fused.data, composite.data);
      expect(Array.from(T.noGrad(() => swiglu(gate, up)).data)).toEqual(Array.from(fused.data)); // generation path
      expectEqual(fusedGate, gate.grad!.data);
      expectEqual(fusedUp, up.grad!.data);
      gradCheck((g, u) => swiglu(g, u), [normal([2, 5]), normal([2, 5])]);
      expect(() => swiglu(gate, T.zeros([7, 3]))).toThrow(/swiglu: gate \[3, 7\] and up \[7, 3\] differ/);
    });

    it('causalAttention over a cache with unused room (keyLength) equals the dense cache, gradients too', () => {
      const [B, Hq, Hkv, T1, S, D, room] = [2, 4, 2, 3, 5, 4, 9];
      const q = T.parameter(normal([B, Hq, T1, D]).data, [B, Hq, T1, D]);
      const k = normal([B, Hkv, S, D]);
      const v = normal([B, Hkv, S, D]);
      const keyMask = Uint8Array.from({ length: B * S }, (_, i) => (i === 0 ? 0 : 1));
      const seed = normal([B, Hq, T1, D]).data;
      const dense = T.causalAttention(q, T.parameter(k.data, k.shape), T.parameter(v.data, v.shape), { keyMask });
      const kRoom = T.parameter(withRoom(k, room).data, [B, Hkv, room, D]);
      const vRoom = T.parameter(withRoom(v, room).data, [B, Hkv, room, D]);
      const roomy = T.causalAttention(q, kRoom, vRoom, { keyMask, keyLength: S });
      expectClose(roomy.data, dense.data, 1e-6);
      const denseK = T.parameter(k.data, k.shape);
      const denseV = T.parameter(v.data, v.shape);
      T.causalAttention(q, denseK, denseV, { keyMask }).backward(seed);
      roomy.backward(seed);
      expectClose(
        kRoom.grad!.data,
        withRoom(denseK.grad!, room).data.map((x) => (Number.isNaN(x) ? 0 : x)),
        1e-6,
      );
      expectClose(
        vRoom.grad!.data,
        withRoom(denseV.grad!, room).data.map((x) => (Number.isNaN(x) ? 0 : x)),
        1e-6,
      );
      expect(() => T.causalAttention(q, kRoom, vRoom, { keyLength: room + 1 })).toThrow(
        /keyLength 10 is outside the 9 keys/,
      );
    });

    it.each([
      { label: 'MHA, equal prompts', Hq: 2, Hkv: 2, lengths: [4, 4], groups: [3, 2], generated: 3, window: undefined },
      {
        label: 'GQA, ragged prompts',
        Hq: 4,
        Hkv: 2,
        lengths: [2, 6, 3],
        groups: [1, 3, 2],
        generated: 4,
        window: undefined,
      },
      {
        label: 'first step (no generated keys yet besides this one)',
        Hq: 4,
        Hkv: 1,
        lengths: [5],
        groups: [4],
        generated: 1,
        window: undefined,
      },
      {
        label: 'sliding window cutting into the prompt',
        Hq: 2,
        Hkv: 1,
        lengths: [7, 3],
        groups: [2, 2],
        generated: 3,
        window: 4,
      },
      // Head dims off the vector width, and more keys than the native kernel keeps on its stack (1024).
      {
        label: 'head dim 20, 1100-key prompt',
        Hq: 2,
        Hkv: 1,
        lengths: [1100, 17],
        groups: [2, 1],
        generated: 2,
        window: undefined,
        D: 20,
      },
      {
        label: 'head dim 64, window inside the generated keys',
        Hq: 4,
        Hkv: 4,
        lengths: [40],
        groups: [3],
        generated: 9,
        window: 5,
        D: 64,
      },
    ])(
      'prefixAttention equals causalAttention over [prompt, generated] keys: $label',
      ({ Hq, Hkv, lengths, groups, generated, window, D = 4 }) => {
        const rowPrefix = Int32Array.from(groups.flatMap((count, p) => new Array<number>(count).fill(p)));
        const B = rowPrefix.length;
        const promptKeys = lengths.map((L) => normal([1, Hkv, L, D]));
        const promptValues = lengths.map((L) => normal([1, Hkv, L, D]));
        const ownKeys = normal([B, Hkv, generated, D]);
        const ownValues = normal([B, Hkv, generated, D]);
        const q = normal([B, Hq, 1, D]);
        const actual = T.noGrad(() =>
          prefixAttention(q, withRoom(ownKeys, generated + 2), withRoom(ownValues, generated + 2), generated, {
            keys: promptKeys.map((t, p) => withRoom(t, lengths[p] + 1)),
            values: promptValues.map((t, p) => withRoom(t, lengths[p] + 1)),
            lengths,
            rowPrefix,
            window,
          }),
        );
        for (let b = 0; b < B; b++) {
          const p = rowPrefix[b];
          const row = (t: T.Tensor) => T.slice(t, 0, b, b + 1);
          const keys = T.concat([promptKeys[p], row(ownKeys)], 2); // [1, Hkv, L + generated, D]
          const values = T.concat([promptValues[p], row(ownValues)], 2);
          const S = lengths[p] + generated;
          const expected = T.causalAttention(row(q), keys, values, {
            window: window !== undefined && window < S ? window : undefined,
          });
          expectClose(actual.data.subarray(b * Hq * D, (b + 1) * Hq * D), expected.data, 1e-5);
        }
      },
    );

    it('prefixAttention refuses inputs that need gradients and shapes that do not fit', () => {
      const q = T.parameter(normal([1, 2, 1, 4]).data, [1, 2, 1, 4]);
      const prefix = {
        keys: [normal([1, 2, 3, 4])],
        values: [normal([1, 2, 3, 4])],
        lengths: [3],
        rowPrefix: Int32Array.of(0),
      };
      expect(() => prefixAttention(q, normal([1, 2, 2, 4]), normal([1, 2, 2, 4]), 1, prefix)).toThrow(/no gradient/);
      expect(() => T.noGrad(() => prefixAttention(q, normal([1, 2, 2, 4]), normal([1, 2, 2, 4]), 3, prefix))).toThrow(
        /do not fit/,
      );
    });

    it('rope with a shared angle table equals rope computing its own (shared and per-row positions)', () => {
      const frequencies = Float32Array.from([1, 0.1, 0.01]);
      const x = normal([2, 3, 2, 6]);
      for (const positions of [Int32Array.from([0, 3, 7]), Int32Array.from([5, 6, 7, 1, 2, 3])]) {
        const own = T.rope(x, positions, frequencies);
        const shared = T.rope(x, positions, frequencies, ropeTable(positions, frequencies));
        expect(Array.from(shared.data)).toEqual(Array.from(own.data));
      }
    });

    it('permutes that only move size-1 axes copy the data in order, with the right gradient', () => {
      const x = T.parameter(normal([2, 1, 3, 4]).data, [2, 1, 3, 4]);
      const moved = T.permute(x, [0, 2, 1, 3]); // [2, 3, 1, 4]: same order of the non-1 axes
      expect(moved.shape).toEqual([2, 3, 1, 4]);
      expect(Array.from(moved.data)).toEqual(Array.from(x.data));
      expect(moved.data).not.toBe(x.data);
      const reordered = T.permute(x, [2, 1, 0, 3]); // a real reorder still goes element by element
      expect(reordered.data[4]).toBe(x.data[12]);
      gradCheck((input) => T.permute(input, [0, 2, 1, 3]), [normal([2, 1, 3, 2])]);
    });
  });
}
