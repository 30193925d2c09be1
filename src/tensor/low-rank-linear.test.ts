/**
 * lowRankLinear on every backend: finite-difference gradients of x, W, b, A and B; with W and b frozen
 * (a LoRA base) they get no gradient and the others still check; forward and gradients equal the
 * composite linear + mul + linear + add it replaces; a bfloat16 W (HalfMatrix) gives bitwise the
 * results of its float32 widening; shape errors name every operand. With LoRA dropout: gradCheck under
 * a fixed mask (the same seed), p = 0 bitwise the plain op, the mask a function of the seed alone.
 * swigluLowRankLinear (h = swiglu(gate, up) recomputed in backward): gradCheck, and bitwise the two ops.
 */
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from './index.js';
import { HalfMatrix } from './half-matrix.js';
import { lowRankLinear, swigluLowRankLinear } from './low-rank-linear.js';
import { backendsUnderTest, useBackendInSuite } from './test-backends.js';
import { maxDifference, normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(5);
const normal = normalSampler(random);

for (const { name, backend } of backendsUnderTest()) {
  describe(`lowRankLinear on ${name}`, () => {
    useBackendInSuite(backend);

    it('passes gradCheck for x, W, b, A and B (batched x, rank 3, s = 1.5)', () => {
      const inputs = [normal([2, 3, 5]), normal([4, 5]), normal([4]), normal([3, 5]), normal([4, 3])];
      gradCheck((x, w, b, a, bb) => lowRankLinear(x, w, b, { a, b: bb, scaling: 1.5 }), inputs);
      gradCheck(
        (x, w, a, bb) => lowRankLinear(x, w, null, { a, b: bb, scaling: 0.25 }),
        [inputs[0], inputs[1], inputs[3], inputs[4]],
      );
    });

    it('with W and b frozen gives them no gradient and checks x, A and B', () => {
      const weight = normal([6, 7]);
      const bias = normal([6]);
      const result = gradCheck(
        (x, a, b) => lowRankLinear(x, weight, bias, { a, b, scaling: 2 }),
        [normal([5, 7]), normal([2, 7]), normal([6, 2])],
      );
      expect(result.checked).toBe(5 * 7 + 2 * 7 + 6 * 2);
      expect(weight.grad).toBeNull();
      expect(bias.grad).toBeNull();
    });

    it('equals the composite x·Wᵀ + b + (s·x·Aᵀ)·Bᵀ, gradients included', () => {
      const [x, weight, bias, a, b] = [
        normal([3, 4, 9]),
        normal([11, 9], 0.3),
        normal([11]),
        normal([4, 9], 0.3),
        normal([11, 4], 0.3),
      ];
      for (const t of [x, a, b]) t.requiresGrad = true;
      const seed = normal([3, 4, 11]).data;
      const fused = lowRankLinear(x, weight, bias, { a, b, scaling: 0.7 });
      fused.backward(seed);
      const fusedGradients = [x, a, b].map((t) => t.grad!.data.slice());
      for (const t of [x, a, b]) t.grad = null;
      const composite = T.add(T.linear(x, weight, bias), T.linear(T.mul(T.linear(x, a), 0.7), b));
      composite.backward(seed);
      expect(maxDifference(fused.data, composite.data)).toBeLessThan(1e-5);
      [x, a, b].forEach((t, i) => expect(maxDifference(fusedGradients[i], t.grad!.data)).toBeLessThan(1e-4));
      const generation = T.noGrad(() => lowRankLinear(x, weight, bias, { a, b, scaling: 0.7 }));
      expect(generation.node).toBeNull();
      expect(Array.from(generation.data)).toEqual(Array.from(fused.data));
    });

    it('with W kept as bfloat16 equals W widened to float32 up front, bitwise, gradients included', () => {
      const half = HalfMatrix.fromFloat32(normal([13, 6]).data, [13, 6]);
      const widened = new T.Tensor(half.toFloat32(), [13, 6]);
      const [bias, seed] = [normal([13]), normal([2, 5, 13]).data];
      const [x, a, b] = [normal([2, 5, 6]), normal([3, 6]), normal([13, 3])].map((t) => T.parameter(t.data, t.shape));
      const run = (weight: HalfMatrix | T.Tensor) => {
        x.grad = a.grad = b.grad = null;
        const y = lowRankLinear(x, weight, bias, { a, b, scaling: 0.5 });
        y.backward(seed);
        return [y.data, x.grad!.data, a.grad!.data, b.grad!.data].map((data) => Array.from(data));
      };
      expect(run(half)).toEqual(run(widened));
      gradCheck(
        (x, a, b) => lowRankLinear(x, half, null, { a, b, scaling: 2 }),
        [normal([4, 6]), normal([2, 6]), normal([13, 2])],
      );
      // Without an update: the plain linear of a frozen bfloat16 W, only x gets a gradient.
      const plain = gradCheck((x, b) => lowRankLinear(x, half, b, null), [normal([3, 6]), normal([13])]);
      expect(plain.checked).toBe(3 * 6 + 13);
      const input = normal([3, 6]);
      expect(Array.from(lowRankLinear(input, half, bias, null).data)).toEqual(
        Array.from(T.linear(input, widened, bias).data),
      );
    });

    it('with dropout passes gradCheck under a fixed mask (same seed), for x, W, b, A and B', () => {
      const dropout = { probability: 0.5, seed: 9 };
      const inputs = [normal([2, 3, 5]), normal([4, 5]), normal([4]), normal([3, 5]), normal([4, 3])];
      const result = gradCheck((x, w, b, a, bb) => lowRankLinear(x, w, b, { a, b: bb, scaling: 1.5, dropout }), inputs);
      expect(result.checked).toBe(30 + 20 + 4 + 15 + 12);
    });

    it('with dropout: p = 0 is bitwise the plain op; the mask depends on the seed only and keeps 1/(1−p)·x', () => {
      const [x, weight, a, b] = [normal([6, 40]), normal([5, 40]), normal([3, 40]), normal([5, 3])].map((t) =>
        T.parameter(t.data, t.shape),
      );
      const seed = normal([6, 5]).data;
      const run = (dropout?: { probability: number; seed: number }) => {
        x.grad = a.grad = b.grad = weight.grad = null;
        const y = lowRankLinear(x, weight, null, { a, b, scaling: 0.5, dropout });
        y.backward(seed);
        return [y.data, x.grad!.data, a.grad!.data, b.grad!.data, weight.grad!.data].map((data) => Array.from(data));
      };
      const plain = run();
      expect(run({ probability: 0, seed: 3 })).toEqual(plain);
      const dropped = run({ probability: 0.5, seed: 3 });
      expect(run({ probability: 0.5, seed: 3 })).toEqual(dropped); // a rerun (recompute, resume) draws the same mask
      expect(run({ probability: 0.5, seed: 4 })).not.toEqual(dropped);
      expect(dropped[4]).toEqual(plain[4]); // dW = gᵀ·x: the base product never sees the mask
      // With A = identity rows and W = 0, output column 0 is x̃ of input 0: each entry 0 or x/(1−p) = 2·x.
      const eye = T.tensor(
        Float32Array.from({ length: 3 * 40 }, (_, i) => (i % 41 === 0 ? 1 : 0)),
        [3, 40],
      );
      const u = lowRankLinear(x, T.zeros([5, 40]), null, {
        a: eye,
        b: T.tensor(
          Float32Array.from({ length: 15 }, (_, i) => (i === 0 ? 1 : 0)),
          [5, 3],
        ),
        scaling: 1,
        dropout: { probability: 0.5, seed: 3 },
      });
      const firstColumn = Array.from({ length: 6 }, (_, row) => u.data[row * 5]);
      firstColumn.forEach((value, row) => expect([0, 2 * x.data[row * 40]]).toContainEqual(value));
      expect(() => lowRankLinear(x, weight, null, { a, b, scaling: 1, dropout: { probability: 1, seed: 0 } })).toThrow(
        /dropout probability must be in \[0, 1\)/,
      );
    });

    it('swigluLowRankLinear passes gradCheck (gate, up, W, b, A, B; with dropout) and equals swiglu then lowRankLinear bitwise', () => {
      const inputs = [
        normal([2, 3, 5]),
        normal([2, 3, 5]),
        normal([4, 5]),
        normal([4]),
        normal([3, 5]),
        normal([4, 3]),
      ];
      const checked = gradCheck(
        (gate, up, w, b, a, bb) => swigluLowRankLinear(gate, up, w, b, { a, b: bb, scaling: 1.5 }),
        inputs,
      );
      expect(checked.checked).toBe(30 + 30 + 20 + 4 + 15 + 12);
      const dropout = { probability: 0.5, seed: 4 };
      gradCheck(
        (gate, up, a, bb) => swigluLowRankLinear(gate, up, inputs[2], null, { a, b: bb, scaling: 1, dropout }),
        [inputs[0], inputs[1], inputs[4], inputs[5]],
      );
      const half = HalfMatrix.fromFloat32(normal([4, 5]).data, [4, 5]);
      gradCheck((gate, up) => swigluLowRankLinear(gate, up, half, null, null), [inputs[0], inputs[1]]);
      const [gate, up, a, b] = [normal([6, 5]), normal([6, 5]), normal([3, 5]), normal([4, 3])].map((t) =>
        T.parameter(t.data, t.shape),
      );
      const seed = normal([6, 4]).data;
      for (const weight of [half, normal([4, 5])])
        for (const update of [{ a, b, scaling: 0.5, dropout }, null]) {
          const run = (fused: boolean) => {
            gate.grad = up.grad = a.grad = b.grad = null;
            const y = fused
              ? swigluLowRankLinear(gate, up, weight, null, update)
              : lowRankLinear(T.swiglu(gate, up), weight, null, update);
            y.backward(seed);
            return [y, gate.grad, up.grad, a.grad, b.grad].map((t) => (t ? Array.from(t.data) : null));
          };
          expect(run(true)).toEqual(run(false));
        }
    });

    it('refuses operands that do not fit, naming each shape', () => {
      expect(() =>
        lowRankLinear(normal([2, 5]), normal([4, 5]), null, { a: normal([3, 6]), b: normal([4, 3]), scaling: 1 }),
      ).toThrow('lowRankLinear: x [2, 5], W [4, 5], bias none, A [3, 6] and B [4, 3] do not fit');
    });
  });
}
