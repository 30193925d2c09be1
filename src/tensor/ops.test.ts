/**
 * Forward values and edge cases of the ops: hand-computed results, broadcasting, overflow-safe
 * log-softmax, NaN/Inf propagation, shape errors that name the op and both shapes, empty tensors,
 * and autograd mechanics (accumulation, noGrad, detach).
 */
import { describe, expect, it } from 'vitest';
import * as T from './index.js';

const values = (x: T.Tensor) => Array.from(x.data);

describe('forward values', () => {
  it('broadcasts binary ops NumPy-style', () => {
    const a = T.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    expect(values(T.add(a, T.tensor([10, 20, 30])))).toEqual([11, 22, 33, 14, 25, 36]);
    expect(values(T.mul(a, T.tensor([2, 3], [2, 1])))).toEqual([2, 4, 6, 12, 15, 18]);
    expect(values(T.sub(5, a))).toEqual([4, 3, 2, 1, 0, -1]);
    expect(T.add(T.tensor([1, 2], [2, 1]), T.tensor([1, 2, 3], [1, 3])).shape).toEqual([2, 3]);
  });
  it('matmul with transposes and batch broadcasting', () => {
    const a = T.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    const b = T.tensor([1, 0, 0, 1, 1, 1], [3, 2]);
    expect(values(T.matmul(a, b))).toEqual([4, 5, 10, 11]);
    expect(values(T.matmul(a, a, { transposeB: true }))).toEqual([14, 32, 32, 77]);
    expect(values(T.matmul(a, a, { transposeA: true }))).toEqual([17, 22, 27, 22, 29, 36, 27, 36, 45]);
    const batched = T.matmul(T.reshape(T.concat([a, a], 0), [2, 2, 3]), b);
    expect(batched.shape).toEqual([2, 2, 2]);
    expect(values(batched)).toEqual([4, 5, 10, 11, 4, 5, 10, 11]);
  });
  it('reductions, softmax and gather', () => {
    const x = T.tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    expect(values(T.sum(x, 0))).toEqual([5, 7, 9]);
    expect(values(T.mean(x, 1, true))).toEqual([2, 5]);
    expect(T.sum(x).shape).toEqual([]);
    expect(values(T.max(x, 1))).toEqual([3, 6]);
    const probabilities = T.softmax(T.tensor([0, Math.log(3)]));
    expect(probabilities.data[0]).toBeCloseTo(0.25, 6);
    expect(values(T.gather(x, 1, Int32Array.from([2, 0]), [2, 1]))).toEqual([3, 4]);
    expect(values(T.permute(x, [1, 0]))).toEqual([1, 4, 2, 5, 3, 6]);
    expect(values(T.slice(x, 1, 1, 3))).toEqual([2, 3, 5, 6]);
  });
  it('rmsNorm, logSoftmaxGather and crossEntropy against hand computation', () => {
    const y = T.rmsNorm(T.tensor([3, 4], [1, 2]), T.tensor([1, 2]), 0);
    const rms = Math.sqrt((9 + 16) / 2);
    expect(y.data[0]).toBeCloseTo(3 / rms, 6);
    expect(y.data[1]).toBeCloseTo((4 / rms) * 2, 6);
    const logits = T.tensor([1, 2, 3, 1, 1, 1], [2, 3]);
    const lse = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
    const chosen = T.logSoftmaxGather(logits, Int32Array.from([2, 0]));
    expect(chosen.data[0]).toBeCloseTo(3 - lse, 6);
    expect(chosen.data[1]).toBeCloseTo(-Math.log(3), 6);
    expect(T.crossEntropy(logits, Int32Array.from([2, -100])).item()).toBeCloseTo(lse - 3, 6);
  });
  it('attention of one query over identical keys averages the values', () => {
    const q = T.tensor([1, 0], [1, 1, 1, 2]);
    const k = T.tensor([1, 1, 1, 1], [1, 1, 2, 2]);
    const v = T.tensor([2, 0, 4, 6], [1, 1, 2, 2]);
    expect(values(T.causalAttention(q, k, v))).toEqual([3, 3]); // offset 1: sees both keys
    expect(values(T.causalAttention(q, k, v, { positionOffset: 0 }))).toEqual([2, 0]); // sees key 0 only
  });
});

describe('edge cases', () => {
  it('log-softmax of huge logits does not overflow', () => {
    const result = T.logSoftmax(T.tensor([1e30, 0, -1e30, 1000, 1001, 1002], [2, 3]));
    expect(result.data[0]).toBe(0);
    expect(result.data[1]).toBe(Math.fround(-1e30)); // 0 − 1e30, exact in float32
    // Values near 1002 carry float32's spacing of 6.1e-5, so 4 decimals is what float32 can promise.
    expect(result.data[5]).toBeCloseTo(-Math.log(1 + Math.exp(-1) + Math.exp(-2)), 4);
    const gathered = T.logSoftmaxGather(T.tensor([1e4, 0], [1, 2]), Int32Array.from([1]));
    expect(gathered.data[0]).toBeCloseTo(-1e4, 0);
  });
  it('NaN and Inf propagate instead of vanishing', () => {
    expect(values(T.exp(T.tensor([NaN, Infinity])))).toEqual([NaN, Infinity]);
    expect(T.maximum(T.tensor([NaN]), T.tensor([1])).data[0]).toBeNaN();
    expect(T.minimum(T.tensor([1]), T.tensor([NaN])).data[0]).toBeNaN();
    expect(T.clamp(T.tensor([NaN]), 0, 1).data[0]).toBeNaN();
    expect(T.max(T.tensor([1, NaN, 3]), 0).data[0]).toBeNaN();
    expect(T.sum(T.tensor([1, Infinity, -Infinity])).data[0]).toBeNaN();
    expect(T.matmul(T.tensor([0, 1], [1, 2]), T.tensor([NaN, 1], [2, 1])).data[0]).toBeNaN();
    expect(T.logSoftmaxGather(T.tensor([NaN, 1], [1, 2]), [1]).data[0]).toBeNaN();
    expect(T.rmsNorm(T.tensor([Infinity, 1], [1, 2]), T.tensor([1, 1]), 1e-6).data[1]).toBe(0);
  });
  it('shape mismatches throw naming the op and both shapes', () => {
    expect(() => T.add(T.zeros([2, 3]), T.zeros([4]))).toThrow(
      'add: shapes [2, 3] and [4] cannot be broadcast together',
    );
    expect(() => T.matmul(T.zeros([2, 3]), T.zeros([4, 5]))).toThrow(
      'matmul: shapes [2, 3] and [4, 5] are not compatible',
    );
    expect(() => T.concat([T.zeros([2, 3]), T.zeros([3, 3])], 1)).toThrow(/concat: shapes \[2, 3\] and \[3, 3\]/);
    expect(() => T.reshape(T.zeros([2, 3]), [4, 2])).toThrow('reshape: cannot reshape [2, 3] (6 elements) to [4, 2]');
    expect(() => T.rmsNorm(T.zeros([2, 3]), T.zeros([4]), 1e-6)).toThrow(
      /rmsNorm: weight shape \[4\] does not match input \[2, 3\]/,
    );
    expect(() => T.indexSelect(T.zeros([3, 2]), [3])).toThrow(/index 3 at position 0 is out of range \[0, 3\)/);
    expect(() => T.sum(T.zeros([2]), 1)).toThrow(/sum: axis 1 is out of range/);
  });
  it('empty and degenerate shapes', () => {
    expect(T.add(T.zeros([0, 3]), T.ones([3])).shape).toEqual([0, 3]);
    expect(values(T.sum(T.zeros([0, 3]), 0))).toEqual([0, 0, 0]);
    expect(T.matmul(T.zeros([2, 0]), T.zeros([0, 3])).toArray()).toEqual([0, 0, 0, 0, 0, 0]);
    expect(T.matmul(T.zeros([0, 4]), T.zeros([4, 3])).shape).toEqual([0, 3]);
    expect(T.mean(T.zeros([0])).data[0]).toBeNaN();
    expect(T.scalar(3).shape).toEqual([]);
    expect(T.mul(T.scalar(3), T.scalar(2)).item()).toBe(6);
    expect(T.slice(T.ones([2, 3]), 1, 1, 1).shape).toEqual([2, 0]);
  });
});

describe('autograd mechanics', () => {
  it('accumulates gradients across backward calls and through shared inputs', () => {
    const x = T.parameter([2]);
    T.mul(x, x).backward(); // d(x²) = 2x = 4
    T.add(x, x).backward(); // + 2
    expect(x.grad!.data[0]).toBe(6);
  });
  it('records nothing under noGrad and nothing through detach', () => {
    const x = T.parameter([1, 2]);
    const y = T.noGrad(() => T.mul(x, 3));
    expect(y.requiresGrad).toBe(false);
    expect(() => T.sum(y).backward()).toThrow(/does not require grad/);
    const z = T.add(T.mul(x.detach(), x), 0);
    T.sum(z).backward();
    expect(values(x.grad!)).toEqual([1, 2]);
  });
  it('a non-scalar needs an explicit seed', () => {
    expect(() => T.mul(T.parameter([1, 2]), 2).backward()).toThrow(/needs a scalar, got shape \[2\]/);
  });
});
