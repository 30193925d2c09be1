/**
 * What a decoder layer's forward keeps, outside the Transformer class: `residual` (a sum written into
 * the stream's own storage when no graph is recorded) and `recomputedNormInput` (selective
 * recomputation: an RMSNorm output that its linears do not keep but recompute, once, in backward).
 *
 * Is not: the recomputation machinery (tensor/recompute.ts, tensor/low-rank-linear.ts) or the choice
 * of mode (Transformer.recompute).
 */
import {
  add,
  addArrays,
  formatShape,
  isGradEnabled,
  noGrad,
  rmsNorm,
  type RecomputedInput,
  type Tensor,
} from '../tensor/index.js';
import { standIn } from '../tensor/recompute.js';

/**
 * x + branch. Without a graph to record, the sum goes into x's own storage: x is always this
 * forward's fresh stream (the embedding copy or an earlier sum), and a decode step then skips an
 * allocation and the broadcasting machinery of `add` (same float results).
 */
export function residual(x: Tensor, branch: Tensor): Tensor {
  if (isGradEnabled() && (x.requiresGrad || branch.requiresGrad)) return add(x, branch);
  const [to, from] = [x.data, branch.data];
  if (to.length !== from.length)
    throw new Error(`Transformer: residual ${formatShape(x.shape)} and branch ${formatShape(branch.shape)} differ`);
  addArrays(to, from, to);
  return x;
}

/**
 * normed = rmsNorm(x, weight) for linears that all take lowRankLinear (so all accept it): one shared
 * stand-in in their nodes and its values recomputed from x (which the norm keeps anyway) in their
 * backward, the same floats, so normed itself is freed after the forward. The linears' backward passes
 * run one after another, so normed is recomputed once for all of them (q/k/v, or gate/up) and dropped
 * after the last one that announced a read (willRead). Undefined when normed has no node.
 */
export function recomputedNormInput(
  normed: Tensor,
  x: Tensor,
  weight: Tensor,
  eps: number,
): RecomputedInput | undefined {
  if (!normed.node) return undefined;
  let readers = 0;
  let pending = 0;
  let values: Float32Array | null = null;
  return {
    graphInput: standIn(normed),
    willRead: () => void readers++,
    read: () => {
      const shared = values ?? noGrad(() => rmsNorm(x, weight, eps)).data;
      if (values === null) pending = readers;
      values = --pending > 0 ? shared : null;
      return shared;
    },
  };
}
