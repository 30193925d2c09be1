/** The gradient checker itself must catch a wrong rule — otherwise every gradient test is vacuous. */
import { describe, expect, it } from 'vitest';
import { Tensor, tensor } from '../tensor/index.js';
import { gradCheck } from './gradcheck.js';

function doubleWithWrongGradient(x: Tensor): Tensor {
  const result = new Tensor(
    x.data.map((v) => 2 * v),
    x.shape,
  );
  result.requiresGrad = true;
  // Deliberately wrong: the true derivative is 2.
  result.node = { opName: 'wrong', inputs: [x], backward: (g) => [g.map((v) => 1.9 * v)] };
  return result;
}

describe('gradCheck', () => {
  it('rejects a gradient rule that is 5% off', () => {
    expect(() => gradCheck(doubleWithWrongGradient, [tensor([0.5, -1, 2])])).toThrow(/analytic .* vs numeric/);
  });
  it('accepts the same op with the right rule', () => {
    const right = (x: Tensor) => {
      const result = new Tensor(
        x.data.map((v) => 2 * v),
        x.shape,
      );
      result.requiresGrad = true;
      result.node = { opName: 'right', inputs: [x], backward: (g) => [g.map((v) => 2 * v)] };
      return result;
    };
    expect(gradCheck(right, [tensor([0.5, -1, 2])]).checked).toBe(3);
  });
});
