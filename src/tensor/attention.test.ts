/**
 * The native attention kernel (Backend.attentionForward/attentionBackward) against the spec path it replaces
 * (batched matmuls + attention-rows.ts on the `js` backend), on every instruction set this CPU runs: output
 * and the q, k, v gradients, heads first and tokens first, for plain causal rows, a key mask (with rows that
 * see no key), document ids, GQA (Hq = 3·Hkv), a query offset into a cache with room past keyLength, T = 1,
 * lengths that are no multiple of the kernel's blocks, and a non-causal call; plus a gradient check and
 * the native RoPE against its JS loop (bit for bit, both directions), and a replayed attention (the rerun
 * of recomputeAll taking the first run's output and log-sum-exp) against one that runs the kernel again.
 *
 * Stated tolerance: 2e-5 absolute on outputs and gradients of O(1) inputs. The kernel's exp is float32
 * (≤ 2 ulp), its sums float32 and its products fused multiply-adds in another order than the matmuls, while
 * the spec exponentiates and sums in double: a few float32 ulp per entry, far below 2e-5.
 * Is not: the model-level parity (model/*.test.ts) or the row paths' own equality (attention-rows.test.ts).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import {
  causalAttention,
  causalAttentionTokensFirst,
  type AttentionOptions,
  type AttentionReplay,
} from './attention.js';
import type { Backend } from './backend.js';
import { loadNativeBackend, nativeAddonStatus } from './backends/native/native-backend.js';
import { createBackend, getBackend, setBackend } from './backends/select.js';
import { rope, ropeTable } from './fused.js';
import { permute } from './primitives.js';
import { recomputeAll } from './recompute.js';
import { Random } from './random.js';
import { parameter, Tensor } from './tensor.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const js = createBackend('js');
const initial = getBackend();
afterEach(() => setBackend(initial));
const random = new Random(31);
const normal = normalSampler(random);

type Attend = (q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions) => Tensor;
const headsFirst: Attend = causalAttention;
/** Tokens first on heads-first inputs, the result permuted back: compared with the same spec. */
const tokensFirst: Attend = (q, k, v, options) => {
  const tokens = (x: Tensor) => permute(x, [0, 2, 1, 3]);
  return tokens(causalAttentionTokensFirst(tokens(q), tokens(k), tokens(v), options));
};

/** Output and the three gradients on fresh leaves, on `backend`. */
function run(backend: Backend, attend: Attend, inputs: Tensor[], seed: Float32Array, options: AttentionOptions) {
  setBackend(backend);
  const leaves = inputs.map((x) => parameter(x.data.slice(), x.shape));
  const out = attend(leaves[0], leaves[1], leaves[2], options);
  out.backward(seed);
  setBackend(initial);
  return [out.data, ...leaves.map((leaf) => leaf.grad!.data)];
}

function worstDifference(actual: Float32Array, expected: Float32Array): number {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    expect(Number.isNaN(actual[i])).toBe(false);
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  }
  return worst;
}

interface Case {
  label: string;
  B: number;
  Hq: number;
  Hkv: number;
  T: number;
  S: number;
  D: number;
  room?: number;
  options: (B: number, S: number) => AttentionOptions;
}

const keyMaskOf = (B: number, S: number) => Uint8Array.from({ length: B * S }, (_, i) => (i % S < 2 && i >= S ? 0 : 1));
const cases: Case[] = [
  { label: 'plain causal', B: 2, Hq: 2, Hkv: 2, T: 9, S: 9, D: 8, options: () => ({}) },
  // Row 1's first two keys are padding, so its first two queries see no key (zeros, zero gradient).
  { label: 'key mask', B: 2, Hq: 2, Hkv: 1, T: 11, S: 11, D: 16, options: (B, S) => ({ keyMask: keyMaskOf(B, S) }) },
  {
    label: 'document ids',
    B: 2,
    Hq: 2,
    Hkv: 2,
    T: 13,
    S: 13,
    D: 8,
    options: (B, S) => ({
      segmentIds: Int32Array.from({ length: B * S }, (_, i) => ((i % S) + (i < S ? 0 : 2) < 5 ? 0 : 1)),
    }),
  },
  { label: 'GQA, Hq = 3·Hkv', B: 2, Hq: 6, Hkv: 2, T: 7, S: 7, D: 12, options: () => ({}) },
  {
    label: 'offset 5 into a cache with room (keyLength < capacity), key mask',
    B: 2,
    Hq: 3,
    Hkv: 1,
    T: 6,
    S: 11,
    D: 8,
    room: 16,
    options: (B, S) => ({ positionOffset: 5, keyLength: S, keyMask: keyMaskOf(B, S) }),
  },
  { label: 'T = 1 after 20 keys', B: 3, Hq: 4, Hkv: 2, T: 1, S: 21, D: 64, options: () => ({}) },
  { label: 'T = 37, odd head dim', B: 1, Hq: 2, Hkv: 1, T: 37, S: 37, D: 21, options: () => ({}) },
  { label: 'not causal', B: 2, Hq: 2, Hkv: 2, T: 5, S: 10, D: 8, options: () => ({ causal: false }) },
];

/** [B, H, S, D] → [B, H, room, D], NaN in the room (the kernel must not read it). */
function withRoom(x: Tensor, room: number): Tensor {
  const [B, H, S, D] = x.shape;
  const data = new Float32Array(B * H * room * D).fill(Number.NaN);
  for (let row = 0; row < B * H; row++) data.set(x.data.subarray(row * S * D, (row + 1) * S * D), row * room * D);
  return new Tensor(data, [B, H, room, D]);
}

const status = nativeAddonStatus();
if (!status.available && process.env.GRPO_REQUIRE_NATIVE === '1') throw new Error(status.reason);

for (const isa of status.isas) {
  describe(`native attention (${isa}) against the spec path`, () => {
    const native = loadNativeBackend({ threads: 2, isa })!;

    it.each(cases)('$label: outputs and gradients', ({ B, Hq, Hkv, T, S, D, room, options }) => {
      const q = normal([B, Hq, T, D]);
      const [k, v] = [normal([B, Hkv, S, D]), normal([B, Hkv, S, D])].map((x) => (room ? withRoom(x, room) : x));
      const seed = normal([B, Hq, T, D]).data;
      const callOptions = options(B, S);
      const spec = run(js, headsFirst, [q, k, v], seed, callOptions);
      const layouts = room ? [headsFirst] : [headsFirst, tokensFirst];
      for (const attend of layouts) {
        const kernel = run(native, attend, [q, k, v], seed, callOptions);
        for (let i = 0; i < 4; i++) {
          if (room && i > 0)
            for (const x of [spec[i], kernel[i]]) x.forEach((value, j) => value !== value && (x[j] = 0));
          expect(worstDifference(kernel[i], spec[i])).toBeLessThan(2e-5);
        }
      }
    });

    it('a row that sees no key gets zeros and zero gradient; the kernel path passes gradCheck', () => {
      const [B, Hq, T, D] = [2, 2, 5, 4];
      const keyMask = keyMaskOf(B, T);
      setBackend(native);
      const q = parameter(normal([B, Hq, T, D]).data, [B, Hq, T, D]);
      const out = causalAttention(q, normal([B, 1, T, D]), normal([B, 1, T, D]), { keyMask });
      out.backward(new Float32Array(out.size).fill(1));
      for (const t of [0, 1]) {
        const at = ((1 * Hq + 1) * T + t) * D; // batch row 1, head 1
        expect(Array.from(out.data.subarray(at, at + D))).toEqual([0, 0, 0, 0]);
        expect(Array.from(q.grad!.data.subarray(at, at + D))).toEqual([0, 0, 0, 0]);
      }
      const options = { keyMask, positionOffset: 0 };
      gradCheck(
        (a, b, c) => causalAttention(a, b, c, options),
        [normal([B, 3, T, D]), normal([B, 1, T, D]), normal([B, 1, T, D])],
      );
      gradCheck(
        (a, b, c) => causalAttentionTokensFirst(a, b, c),
        [normal([1, T, 2, D]), normal([1, T, 2, D]), normal([1, T, 2, D])],
      );
    });

    it('replayed under recomputeAll: one forward kernel call instead of two, the same output and gradients', () => {
      const [B, T, Hq, Hkv, D] = [2, 9, 6, 2, 16];
      const [qData, kData, vData] = [normal([B, T, Hq, D]), normal([B, T, Hkv, D]), normal([B, T, Hkv, D])];
      const seed = normal([B, T, Hq, D]).data;
      setBackend(native);
      const run = (replay: AttentionReplay | undefined) => {
        const calls = vi.spyOn(native as Required<Backend>, 'attentionForward');
        const inputs = [qData, kData, vData].map((x) => parameter(x.data.slice(), x.shape));
        const block = ([q, k, v]: Tensor[]) => causalAttentionTokensFirst(q, k, v, { replay });
        const out = recomputeAll(block, inputs, []);
        out.backward(seed);
        const count = calls.mock.calls.length;
        calls.mockRestore();
        return { count, values: [out, ...inputs].map((x, i) => Array.from(i === 0 ? x.data : x.grad!.data)) };
      };
      const replay: AttentionReplay = { output: null, logSumExp: null };
      const replayed = run(replay);
      const rerun = run(undefined);
      expect([replayed.count, rerun.count]).toEqual([1, 2]);
      expect(replayed.values).toEqual(rerun.values);
      expect(replay).toEqual({ output: null, logSumExp: null }); // handed to the rerun's graph, not kept here
    });

    it('rope equals the JS loop bit for bit, forward and inverse (gradient), shared and per-row angles', () => {
      const [B, T, H, D] = [3, 5, 2, 10];
      const frequencies = Float32Array.from({ length: D / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / D));
      for (const positions of [
        Int32Array.from({ length: T }, (_, t) => t + 3),
        Int32Array.from({ length: B * T }, (_, i) => i * 7),
      ]) {
        const x = normal([B, T, H, D]);
        const seed = normal([B, T, H, D]).data;
        const [spec, kernel] = [js, native].map((backend) => {
          setBackend(backend);
          const leaf = parameter(x.data.slice(), x.shape);
          const rotated = rope(leaf, positions, frequencies, ropeTable(positions, frequencies));
          rotated.backward(seed);
          return [Array.from(rotated.data), Array.from(leaf.grad!.data)];
        });
        expect(kernel).toEqual(spec);
      }
    });
  });
}
