/**
 * Activation checkpointing as one op: `recompute(fn, x, parameters)` runs y = fn(x) without recording
 * fn's graph, so none of fn's intermediates outlive the call; only x is kept. Backward reruns fn on x
 * with the graph recorded and back-propagates g through that fresh graph, which is dropped as soon
 * as it returns. So a network of N such blocks holds N block inputs plus one block's activations in
 * backward instead of N blocks' activations, for one more forward pass of each block.
 *
 * fn must be a pure function of x and the parameters it closes over (no cache writes, no RNG draws;
 * LoRA dropout qualifies because its masks are hashes of a seed): the rerun must produce the same
 * values as the first run. The parameters (trainable leaves fn
 * reads) receive their gradients from the inner backward directly into `.grad`; they are listed so
 * that the op records a node when only they, and not x, require grad.
 *
 * Is not: a general checkpointing policy (the caller chooses the blocks; model/transformer.ts uses
 * decoder layers, or with `recomputeAll` the attention between the projections and o_proj) or a
 * double-backward (the rerun's graph serves one backward).
 */
import { needsGrad, noGrad, withGrad } from './autograd.js';
import { Tensor } from './tensor.js';

/** fn(x) keeping only x for backward; see the file header. */
export function recompute(fn: (x: Tensor) => Tensor, x: Tensor, parameters: readonly Tensor[]): Tensor {
  return recomputeAll(([input]) => fn(input), [x], parameters);
}

/** fn(inputs) keeping only the inputs for backward: `recompute` for a block with several inputs. */
export function recomputeAll(
  fn: (inputs: Tensor[]) => Tensor,
  inputs: readonly Tensor[],
  parameters: readonly Tensor[],
): Tensor {
  if (!needsGrad([...inputs, ...parameters])) return fn([...inputs]);
  const output = noGrad(() => fn([...inputs]));
  const result = new Tensor(output.data, output.shape, { requiresGrad: true });
  result.node = {
    opName: 'recompute',
    inputs: [...inputs],
    backward: (g) => {
      const leaves = inputs.map((x) => new Tensor(x.data, x.shape, { requiresGrad: x.requiresGrad }));
      const rerun = withGrad(() => fn(leaves));
      if (!rerun.requiresGrad) return leaves.map(() => null); // nothing in fn requires grad any more
      rerun.backward(g);
      return leaves.map((leaf) => leaf.grad?.data ?? null);
    },
  };
  return result;
}
