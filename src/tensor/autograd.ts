/**
 * Reverse-mode autograd: the graph node type, the no-grad scope, and `backward` (topological sort,
 * then each node's gradient rule in reverse order, accumulating into leaf `.grad`).
 *
 * Is not: the gradient rules themselves — those sit next to each op in primitives.ts and fused.ts.
 * Gradients are plain Float32Arrays inside backward; only leaves get a `.grad` Tensor. No double
 * backward (gradients of gradients) is supported, and none is needed by GRPO or SFT.
 */
import { addArrays } from './backends/select.js';
import type { Tensor } from './tensor.js';

/** How a tensor was computed: its inputs and a rule mapping the output gradient to input gradients. */
export interface GradNode {
  readonly opName: string;
  readonly inputs: readonly Tensor[];
  /** Returns one gradient per input (same size as that input), or null where none flows. */
  readonly backward: (gradOutput: Float32Array) => (Float32Array | null)[];
}

// One switch for every copy of this module in the process, kept on globalThis: `grpo train` loads a
// recipe file through tsx (its own copy of the library, or the source beside the CLI's compiled
// build), and a rollout the recipe builds from that copy turns recording off for a model the
// trainer's copy runs. A module-local flag left it on: the rollout recorded graphs it never used.
const gradMode = ((globalThis as Record<symbol, unknown>)[Symbol.for('grpo.autograd.gradMode')] ??= {
  enabled: true,
}) as { enabled: boolean };

/** Runs `fn` without recording the graph (sampling, evaluation, reference-model passes). */
export function noGrad<T>(fn: () => T): T {
  const previous = gradMode.enabled;
  gradMode.enabled = false;
  try {
    return fn();
  } finally {
    gradMode.enabled = previous;
  }
}

/** Runs `fn` recording the graph even inside a noGrad scope (recompute.ts reruns a forward in backward). */
export function withGrad<T>(fn: () => T): T {
  const previous = gradMode.enabled;
  gradMode.enabled = true;
  try {
    return fn();
  } finally {
    gradMode.enabled = previous;
  }
}

export function isGradEnabled(): boolean {
  return gradMode.enabled;
}

/** True when an op on these inputs must record a node. */
export function needsGrad(inputs: readonly Tensor[]): boolean {
  return gradMode.enabled && inputs.some((input) => input.requiresGrad);
}

/** Marks `result` as the output of `opName` on `inputs` when gradients flow (see needsGrad); returns it. */
export function record(
  result: Tensor,
  opName: string,
  inputs: Tensor[],
  backward: (g: Float32Array) => (Float32Array | null)[],
): Tensor {
  if (needsGrad(inputs)) {
    result.requiresGrad = true;
    result.node = { opName, inputs, backward };
  }
  return result;
}

function topologicalOrder(root: Tensor): Tensor[] {
  const order: Tensor[] = [];
  const visited = new Set<Tensor>();
  // Iterative DFS: transformer graphs are deep enough to overflow a recursive one.
  const stack: [Tensor, number][] = [[root, 0]];
  visited.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const [tensor, nextInput] = top;
    const inputs = tensor.node?.inputs ?? [];
    if (nextInput < inputs.length) {
      top[1]++;
      const input = inputs[nextInput];
      if (input.requiresGrad && !visited.has(input)) {
        visited.add(input);
        stack.push([input, 0]);
      }
    } else {
      order.push(tensor);
      stack.pop();
    }
  }
  return order;
}

/** Back-propagates from `root` with the given seed gradient (1 for a scalar when omitted). */
export function runBackward(root: Tensor, seed?: Float32Array): void {
  if (!root.requiresGrad) {
    throw new Error('backward: the tensor does not require grad (no parameter or input with requiresGrad reached it)');
  }
  if (!seed && root.size !== 1) {
    throw new Error(`backward: an implicit gradient needs a scalar, got shape [${root.shape.join(', ')}]`);
  }
  const gradients = new Map<Tensor, Float32Array>();
  // The caller's seed is never written into: copy it.
  gradients.set(root, seed ? seed.slice() : new Float32Array([1]));
  const order = topologicalOrder(root);
  const stored = new Set<Float32Array>(gradients.values());
  for (let index = order.length - 1; index >= 0; index--) {
    const tensor = order[index];
    const gradient = gradients.get(tensor);
    if (!gradient) continue;
    // Consumed: nobody else holds this buffer now, so a rule may pass it on (reshape, add) uncopied.
    gradients.delete(tensor);
    stored.delete(gradient);
    if (!tensor.node) {
      tensor.accumulateGrad(gradient, true);
      continue;
    }
    const inputGradients = tensor.node.backward(gradient);
    tensor.node.inputs.forEach((input, inputIndex) => {
      const inputGradient = inputGradients[inputIndex];
      if (!inputGradient || !input.requiresGrad) return;
      const existing = gradients.get(input);
      if (!existing) {
        // Every stored buffer has exactly one owner, because later gradients are added into it:
        // copy only when this buffer already went to another input (add hands g to both sides).
        const owned = stored.has(inputGradient) ? inputGradient.slice() : inputGradient;
        stored.add(owned);
        gradients.set(input, owned);
      } else {
        addArrays(existing, inputGradient, existing);
      }
    });
  }
}
