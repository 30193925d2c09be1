/**
 * Global-norm gradient clipping (as torch.nn.utils.clip_grad_norm_) and the finiteness check the
 * trainer uses to skip a step whose gradients are NaN or infinite.
 *
 * Is not: per-parameter clipping or value clipping.
 */
import { scaleArray, sumOfSquares, type Tensor } from '../tensor/index.js';

/**
 * The L2 norm of all gradients together (computed in float64). Parameters without grad count as 0.
 * Each gradient's squares go through the backend (native: threaded over the ~135M floats of a 135M model,
 * which one JS loop walked while the other threads waited), so the sum is grouped per parameter and share.
 */
export function globalGradNorm(parameters: readonly Tensor[]): number {
  let squares = 0;
  for (const parameter of parameters) {
    const grad = parameter.grad?.data;
    if (grad) squares += sumOfSquares(grad);
  }
  return Math.sqrt(squares);
}

/**
 * Scales every gradient by min(1, maxNorm / (norm + 1e-6)) and returns the norm before clipping.
 * A non-finite norm is returned unchanged and nothing is scaled, so the caller can skip the step.
 */
export function clipGradNorm(parameters: readonly Tensor[], maxNorm: number): number {
  const norm = globalGradNorm(parameters);
  if (!Number.isFinite(norm)) return norm;
  const scale = maxNorm / (norm + 1e-6);
  if (scale < 1) {
    for (const parameter of parameters) {
      const grad = parameter.grad?.data;
      if (grad) scaleArray(grad, scale);
    }
  }
  return norm;
}
