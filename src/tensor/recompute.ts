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
 * double-backward (the rerun's graph serves one backward). `residualAdd` (a sum that does not keep its
 * branch's values) lives here because it serves the same end: fewer activations kept for backward.
 */
import { needsGrad, noGrad, withGrad } from './autograd.js';
import { addArrays } from './backends/select.js';
import { add } from './elementwise.js';
import { Tensor } from './tensor.js';
import { uninitializedFloats } from './uninitialized.js';

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

/**
 * stream + branch for two tensors of one shape, as `add` gives them, whose node keeps the branch's
 * graph but not its values: a sum's gradient needs neither operand, yet `add` keeps both tensors as
 * inputs and so their data. The node's second input is a stand-in holding the branch's node and no
 * data, so a branch made for this sum alone (a layer's o_proj or down_proj output) is freed after the
 * forward. A branch without a node (a leaf) is summed by `add`, whose gradient it then receives.
 */
export function residualAdd(stream: Tensor, branch: Tensor): Tensor {
  if (!branch.node || stream.rank !== branch.rank || stream.shape.some((d, i) => d !== branch.shape[i]))
    return add(stream, branch);
  const output = uninitializedFloats(stream.size);
  addArrays(stream.data, branch.data, output);
  const result = new Tensor(output, stream.shape);
  if (!needsGrad([stream, branch])) return result;
  result.requiresGrad = true;
  result.node = { opName: 'residualAdd', inputs: [stream, standIn(branch)], backward: (g) => [g, g] };
  return result;
}

/**
 * A graph stand-in for `tensor`: its node and requiresGrad, no data. An op that lists it as an input
 * sends its gradient into `tensor`'s node without keeping `tensor`'s values alive; every consumer of
 * `tensor` must use the same stand-in, so that their gradients are summed once, in the same order.
 */
export function standIn(tensor: Tensor): Tensor {
  const handle = new Tensor(new Float32Array(0), [0], { requiresGrad: tensor.requiresGrad });
  handle.node = tensor.node;
  return handle;
}
