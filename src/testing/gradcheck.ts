/**
 * Finite-difference gradient checking for ops and losses (exported as `grpo/testing`).
 *
 * Is not: a float64 engine. The forward runs in float32, so the check uses central differences
 * with a fairly large step and sums the objective in float64: the objective L = Σ w·f(x) with fixed
 * random weights w makes every output element matter. Error budget: float32 rounding of f is about
 * 1e-7·|f| per element, divided by 2·epsilon (2e-2) → ~1e-5 relative noise; truncation error is
 * O(epsilon²·f''') ≈ 1e-4 for smooth ops with O(1) inputs. The default tolerance (absolute 2e-3 +
 * relative 2e-2) sits above both and far below a wrong rule (errors of order 1). Inputs must avoid
 * kinks (relu at 0, clamp bounds, max ties) by at least epsilon.
 */
import { noGrad } from '../tensor/autograd.js';
import { Random } from '../tensor/random.js';
import type { Tensor } from '../tensor/tensor.js';

export interface GradCheckOptions {
  epsilon?: number;
  absoluteTolerance?: number;
  relativeTolerance?: number;
  /** Check at most this many elements per input (chosen at random) to keep big checks fast. */
  maxElementsPerInput?: number;
  seed?: number;
}

export interface GradCheckResult {
  maxAbsoluteError: number;
  checked: number;
}

/** Throws with the input index, element and both values when an analytic gradient is wrong. */
export function gradCheck(
  fn: (...inputs: Tensor[]) => Tensor,
  inputs: Tensor[],
  options: GradCheckOptions = {},
): GradCheckResult {
  const epsilon = options.epsilon ?? 1e-2;
  const absoluteTolerance = options.absoluteTolerance ?? 2e-3;
  const relativeTolerance = options.relativeTolerance ?? 2e-2;
  const random = new Random(options.seed ?? 1234);
  for (const input of inputs) {
    input.requiresGrad = true;
    input.grad = null;
  }
  const output = fn(...inputs);
  const weights = new Float32Array(output.size);
  for (let i = 0; i < weights.length; i++) weights[i] = random.uniform() * 2 - 1;
  output.backward(weights);
  const objective = (): number =>
    noGrad(() => {
      const values = fn(...inputs).data;
      let total = 0;
      for (let i = 0; i < values.length; i++) total += weights[i] * values[i];
      return total;
    });
  let maxAbsoluteError = 0;
  let checked = 0;
  inputs.forEach((input, inputIndex) => {
    const limit = options.maxElementsPerInput ?? input.size;
    const positions = Array.from({ length: input.size }, (_, i) => i);
    random.shuffle(positions);
    for (const position of positions.slice(0, limit)) {
      const original = input.data[position];
      input.data[position] = original + epsilon;
      const plus = objective();
      input.data[position] = original - epsilon;
      const minus = objective();
      input.data[position] = original;
      const numeric = (plus - minus) / (2 * epsilon);
      const analytic = input.grad ? input.grad.data[position] : 0;
      const error = Math.abs(numeric - analytic);
      maxAbsoluteError = Math.max(maxAbsoluteError, error);
      checked++;
      if (!(error <= absoluteTolerance + relativeTolerance * Math.max(Math.abs(numeric), Math.abs(analytic)))) {
        throw new Error(
          `gradCheck: input ${inputIndex} element ${position}: analytic ${analytic} vs numeric ${numeric} (error ${error})`,
        );
      }
    }
  });
  return { maxAbsoluteError, checked };
}
