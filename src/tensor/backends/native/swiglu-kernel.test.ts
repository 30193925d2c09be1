/**
 * The native float32 SwiGLU (swiglu.c) against fused.ts's loops (the spec, run on the `js` backend), on
 * every instruction set this CPU supports, with 2 threads and odd sizes (vector tails, shares split).
 *
 * Stated tolerance and why: the kernel rounds every step to float32 where the loops work in double, and
 * its exp is within 2 ulp; σ, silu and the products each add half an ulp, so output and gradUp are within
 * 8·2⁻²⁴ relative of the loops' (measured worst: 5.5). gradGate = (g·up)·σ(1 + x(1 − σ)) cancels near
 * x ≈ −1.28, so there the bound is 8·2⁻²⁴·|g·up|·σ·(1 + |x|) (measured worst: 4.7). 2⁻¹²⁰ absolute
 * covers subnormal results (σ underflows below x ≈ −87). NaN and ±Infinity land where the loops put them.
 * Is not: the gradient check or the composite's equality (fused.test.ts, every backend).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { getBackend, setBackend, createBackend } from '../select.js';
import { swiglu, swigluGradients } from '../../fused.js';
import { Random, randomNormal } from '../../random.js';
import { parameter } from '../../tensor.js';
import { loadNativeBackend, nativeAddonStatus } from './native-backend.js';

const initial = getBackend();
afterEach(() => setBackend(initial));

const EPSILON = 2 ** -24;
const FLOOR = 2 ** -120;

function expectWithin(actual: Float32Array, expected: Float32Array, bound: (i: number) => number, label: string) {
  expect(actual.length, label).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    if (!Number.isFinite(expected[i])) {
      const same = Object.is(actual[i], expected[i]) || (Number.isNaN(actual[i]) && Number.isNaN(expected[i]));
      expect(same, `${label}[${i}]: ${actual[i]} vs ${expected[i]}`).toBe(true);
      continue;
    }
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / bound(i));
  }
  expect(worst, `${label}: worst error in units of the bound`).toBeLessThanOrEqual(1);
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const [x, y] = [new Uint32Array(a.buffer, a.byteOffset, a.length), new Uint32Array(b.buffer, b.byteOffset, b.length)];
  return x.length === y.length && x.every((bits, i) => bits === y[i]);
}

const status = nativeAddonStatus();
if (!status.available) {
  describe('native swiglu', () => {
    it('is unavailable only where the addon is (set GRPO_REQUIRE_NATIVE=1 to require it)', () => {
      expect(process.env.GRPO_REQUIRE_NATIVE).not.toBe('1');
    });
  });
}

const size = 70_001;
const gate = randomNormal([size], new Random(1), 6).data;
// Specials, then a sweep through the zero of silu' (x ≈ −1.2785) where gradGate cancels.
gate.set([Number.NaN, Infinity, -Infinity, 0, -0, 800, -800, 1e-10, -1e-10, -40, -90, -100, -103.9, 88.5], 0);
for (let i = 0; i < 2000; i++) gate[100 + i] = -1.2785 + (i - 1000) * 2e-6;
const up = randomNormal([size], new Random(2), 1).data;
const seed = randomNormal([size], new Random(3), 1).data;

/** swiglu's output and gradients (through autograd) on `backend`. */
function swigluOn(backend: ReturnType<typeof getBackend>) {
  setBackend(backend);
  const [g, u] = [parameter(gate.slice(), [size]), parameter(up.slice(), [size])];
  const out = swiglu(g, u);
  out.backward(seed);
  return { out: out.data, gradGate: g.grad!.data, gradUp: u.grad!.data };
}

const spec = swigluOn(createBackend('js'));
const sets = status.available ? status.isas : [];
for (const isa of sets) {
  describe(`native swiglu (${isa})`, () => {
    const native = loadNativeBackend({ threads: 2, isa })!;

    it('output and gradients are within the stated tolerance of the JS loops, NaN/±Infinity as they put them', () => {
      const kernel = swigluOn(native);
      const relative = (values: Float32Array) => (i: number) => 8 * EPSILON * Math.abs(values[i]) + FLOOR;
      expectWithin(kernel.out, spec.out, relative(spec.out), 'output');
      expectWithin(kernel.gradUp, spec.gradUp, relative(spec.gradUp), 'gradUp');
      const gateBound = (i: number) => {
        const sigmoid = 1 / (1 + Math.exp(-gate[i]));
        return 8 * EPSILON * Math.abs(Math.fround(seed[i] * up[i])) * sigmoid * (1 + Math.abs(gate[i])) + FLOOR;
      };
      expectWithin(kernel.gradGate, spec.gradGate, gateBound, 'gradGate');
    });

    it('gives the same bits on every set, and the backward recomputes the forward output bit for bit', () => {
      const kernel = swigluOn(native);
      const portable = swigluOn(loadNativeBackend({ threads: 1, isa: 'generic' })!);
      expect(sameBits(kernel.out, portable.out) && sameBits(kernel.gradGate, portable.gradGate)).toBe(true);
      expect(sameBits(kernel.gradUp, portable.gradUp)).toBe(true);
      setBackend(native);
      const again = swigluGradients(gate, up, seed, true);
      expect(sameBits(again.output!, kernel.out)).toBe(true);
      expect(sameBits(again.gradGate, kernel.gradGate) && sameBits(again.gradUp, kernel.gradUp)).toBe(true);
    });
  });
}

describe('swigluGradients on the spec', () => {
  it("recomputes swiglu's output and its gradients bit for bit (js)", () => {
    setBackend(createBackend('js'));
    const again = swigluGradients(gate, up, seed, true);
    expect(sameBits(again.output!, spec.out)).toBe(true);
    expect(sameBits(again.gradGate, spec.gradGate) && sameBits(again.gradUp, spec.gradUp)).toBe(true);
    expect(swigluGradients(gate, up, seed, false).output).toBeNull();
  });
});
