/**
 * recompute: a block of ops run through it gives the same output and, through the rerun in backward,
 * bitwise the same gradients (input and parameters) as the block recorded directly; it passes
 * gradCheck; it records a node when only the block's parameters require grad; it keeps none of the
 * block's intermediates in the graph. recomputeAll does the same for a block of several inputs;
 * residualAdd equals add and keeps only a stand-in of its branch.
 */
import { describe, expect, it } from 'vitest';
import { gradCheck } from '../testing/gradcheck.js';
import * as T from './index.js';
import { recompute, recomputeAll, residualAdd } from './recompute.js';
import { normalSampler } from '../../test/helpers/numeric.js';

const random = new T.Random(3);
const normal = normalSampler(random);

/** x + W₂·silu(W₁·rmsNorm(x)): a small residual block. */
function block(x: T.Tensor, w1: T.Tensor, w2: T.Tensor, norm: T.Tensor): T.Tensor {
  return T.add(x, T.linear(T.silu(T.linear(T.rmsNorm(x, norm, 1e-6), w1)), w2));
}

describe('recompute', () => {
  it('gives bitwise the output and gradients of the directly recorded block, through two blocks', () => {
    const [w1, w2, norm] = [normal([7, 5]), normal([5, 7]), normal([5])].map((t) => T.parameter(t.data, t.shape));
    const x = T.parameter(normal([3, 5]).data, [3, 5]);
    const seed = normal([3, 5]).data;
    const run = (checkpointed: boolean) => {
      for (const t of [x, w1, w2, norm]) t.grad = null;
      const step = (input: T.Tensor) =>
        checkpointed ? recompute((h) => block(h, w1, w2, norm), input, [w1, w2, norm]) : block(input, w1, w2, norm);
      const y = step(step(x));
      y.backward(seed);
      return [y, x, w1, w2, norm].map((t) => Array.from(t === y ? t.data : t.grad!.data));
    };
    expect(run(true)).toEqual(run(false));
  });

  it('passes gradCheck, and records a node when only the parameters require grad', () => {
    gradCheck(
      (x, w1, w2, norm) => recompute((h) => block(h, w1, w2, norm), x, [w1, w2, norm]),
      [normal([2, 4]), normal([6, 4]), normal([4, 6]), normal([4])],
    );
    const [w1, w2, norm] = [normal([6, 4]), normal([4, 6]), normal([4])].map((t) => T.parameter(t.data, t.shape));
    const frozenInput = normal([2, 4]);
    const y = recompute((h) => block(h, w1, w2, norm), frozenInput, [w1, w2, norm]);
    expect(y.node!.inputs).toEqual([frozenInput]); // the block's intermediates are not in the graph
    T.sum(y).backward();
    expect(w1.grad).not.toBeNull();
    expect(frozenInput.grad).toBeNull();
    expect(T.noGrad(() => recompute((h) => block(h, w1, w2, norm), frozenInput, [w1])).node).toBeNull();
  });

  it('recomputeAll: a block of several inputs passes gradCheck and gives bitwise the recorded gradients', () => {
    const attend = ([q, k, v]: T.Tensor[]) => T.matmul(T.softmax(T.matmul(q, k, { transposeB: true })), v);
    gradCheck((q, k, v) => recomputeAll(attend, [q, k, v], []), [normal([3, 4]), normal([5, 4]), normal([5, 2])]);
    const [q, k, v] = [normal([3, 4]), normal([5, 4]), normal([5, 2])].map((t) => T.parameter(t.data, t.shape));
    const frozen = T.tensor(k.data.slice(), k.shape);
    const seed = normal([3, 2]).data;
    const run = (checkpointed: boolean, inputs: T.Tensor[]) => {
      for (const t of inputs) t.grad = null;
      const y = checkpointed ? recomputeAll(attend, inputs, []) : attend(inputs);
      expect(y.node!.inputs).toHaveLength(checkpointed ? 3 : 2);
      y.backward(seed);
      return [y.data, ...inputs.map((t) => t.grad?.data ?? null)].map((data) => data && Array.from(data));
    };
    expect(run(true, [q, k, v])).toEqual(run(false, [q, k, v]));
    expect(run(true, [q, frozen, v])).toEqual(run(false, [q, frozen, v])); // a frozen input gets no gradient
  });

  it('residualAdd: the values and gradients of add, with a node that does not keep the branch', () => {
    const [x, w] = [normal([3, 4]), normal([5, 4])].map((t) => T.parameter(t.data, t.shape));
    const seed = normal([3, 4]).data;
    const run = (fused: boolean) => {
      x.grad = w.grad = null;
      const branch = T.matmul(T.silu(T.matmul(x, w, { transposeB: true })), w); // [3, 4]
      const y = fused ? residualAdd(x, branch) : T.add(x, branch);
      if (fused) {
        expect(y.node!.inputs[0]).toBe(x);
        expect(y.node!.inputs[1]).not.toBe(branch);
        expect(y.node!.inputs[1].size).toBe(0); // a stand-in: the branch's node without its values
        expect(y.node!.inputs[1].node).toBe(branch.node);
      }
      y.backward(seed);
      return [y.data, x.grad!.data, w.grad!.data].map((data) => Array.from(data));
    };
    expect(run(true)).toEqual(run(false));
    gradCheck((a, b) => residualAdd(a, T.mul(b, 2)), [normal([2, 3]), normal([2, 3])]);
    const leaf = T.parameter(normal([2, 3]).data, [2, 3]); // a leaf branch goes through add and gets its gradient
    T.sum(residualAdd(normal([2, 3]), leaf)).backward();
    expect(Array.from(leaf.grad!.data)).toEqual([1, 1, 1, 1, 1, 1]);
  });
});
