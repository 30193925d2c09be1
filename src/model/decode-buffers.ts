/**
 * Output arrays of a generation's linear layers, one per module, reused by every decode step: a step's
 * projections are read within the step (rope and the KV cache copy k and v, swiglu reads gate and up,
 * the residual sums read o and down), so the next step may overwrite them. A rollout otherwise allocates
 * a fresh array for each of them at every token, about half of a decode step's new bytes. In a process
 * whose heap is past V8's incremental-marking threshold (the trainer's), V8 paces full mark-compacts by the
 * bytes of new array buffers (about one per 30 MiB measured on the 25M model's rollout), and their
 * concurrent marking takes a core from the native thread pool. The decode attention's output comes here too.
 *
 * Is not: a general allocator. Only graph-free projections without a bias, an adapter or a bfloat16
 * weight come here (Transformer.project decides); the product is the one `linear` runs, so the floats
 * are the same.
 */
import { isGradEnabled, linearInto, Tensor } from '../tensor/index.js';

export class DecodeBuffers {
  private readonly arrays = new Map<string, Float32Array>();

  /** x Wᵀ ([..., K] by W [N, K]) into `module`'s array, grown when a step has more rows than any before. */
  linear(x: Tensor, weight: Tensor, module: string): Tensor {
    if (isGradEnabled() && (x.requiresGrad || weight.requiresGrad))
      throw new Error(`DecodeBuffers: ${module} needs a gradient; reused outputs are for generation only`);
    const [N, K] = weight.shape;
    const rows = x.size / K;
    if (weight.rank !== 2 || x.shape[x.rank - 1] !== K || x.rank < 2)
      throw new Error(`DecodeBuffers: ${module} input [${x.shape.join(', ')}] does not fit weight [${N}, ${K}]`);
    const output = linearInto(x.data, weight.data, this.array(module, rows * N), rows, K, N);
    return new Tensor(output, [...x.shape.slice(0, -1), N]);
  }

  /** The first `length` floats of the array kept under `name` (grown, not zeroed: callers overwrite it). */
  array(name: string, length: number): Float32Array {
    let array = this.arrays.get(name);
    if (!array || array.length < length) {
      array = new Float32Array(length);
      this.arrays.set(name, array);
    }
    return array.subarray(0, length);
  }
}
