/**
 * Composite ops written only with primitives, so they need no gradient code of their own:
 * mean, logSumExp, logSoftmax, softmax, linear.
 *
 * Is not: the place for anything with a hand-written backward — that is fused.ts, used where a
 * composite would materialise large intermediates (attention, RMSNorm, vocabulary-sized softmax).
 */
import { noGrad } from './autograd.js';
import { add, exp, log, mul, neg, sub } from './elementwise.js';
import { matmul } from './matmul.js';
import { max, reshape, sum } from './primitives.js';
import { normalizeAxis } from './shape.js';
import type { Tensor } from './tensor.js';

/** Mean over `axis` (all elements when omitted). An empty reduction gives NaN, as 0/0 should. */
export function mean(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  const total = sum(x, axis, keepDims);
  const count = axis === undefined ? x.size : x.size / total.size;
  return mul(total, 1 / count);
}

/** log Σ exp(x) along `axis`, stable for large inputs (the max is subtracted and detached). */
export function logSumExp(x: Tensor, axis = -1, keepDims = false): Tensor {
  const a = normalizeAxis(axis, x.rank, 'logSumExp');
  // The shift only improves conditioning; the gradient of LSE does not depend on it, so detach it.
  // A row whose max is ±Infinity gets shift 0 so that all -Inf rows give -Inf and +Inf stays +Inf.
  const shift = noGrad(() => {
    const m = max(x, a, true);
    for (let i = 0; i < m.data.length; i++) if (!Number.isFinite(m.data[i])) m.data[i] = 0;
    return m.detach();
  });
  const summed = sum(exp(sub(x, shift)), a, true);
  const result = add(log(summed), shift);
  return keepDims ? result : reshapeWithout(result, a);
}

function reshapeWithout(x: Tensor, axis: number): Tensor {
  return reshape(
    x,
    x.shape.filter((_, i) => i !== axis),
  );
}

/** log softmax along `axis`: x − logSumExp(x). */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  return sub(x, logSumExp(x, axis, true));
}

/** softmax along `axis` as exp(logSoftmax), so it never overflows. */
export function softmax(x: Tensor, axis = -1): Tensor {
  return exp(logSoftmax(x, axis));
}

/** Entropy of softmax(x) along `axis`, with gradient: −Σ softmax(x)·logSoftmax(x) (the entropy bonus). */
export function entropy(x: Tensor, axis = -1): Tensor {
  const logProbabilities = logSoftmax(x, axis);
  return neg(sum(mul(exp(logProbabilities), logProbabilities), axis));
}

/** x · Wᵀ (+ bias) with W stored [out, in] as in PyTorch/HF checkpoints. */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  const projected = matmul(x, weight, { transposeB: true });
  return bias ? add(projected, bias) : projected;
}
