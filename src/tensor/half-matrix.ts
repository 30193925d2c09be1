/**
 * A frozen weight matrix kept as bfloat16 (the upper 16 bits of a float32, as checkpoints store it):
 * half the memory of a float32 copy. Ops that take one (lowRankLinear) widen it into a scratch
 * float32 matrix right before the product and drop it after, so at most one widened matrix exists
 * at a time; every product then runs in float32 as before. Widening is exact: a bfloat16 value is a
 * float32 with 16 zero low bits.
 *
 * Is not: a Tensor (no gradient, no graph, no ops of its own) or a checkpoint format (model/
 * safetensors.ts reads and writes files). Narrowing a float32 rounds to nearest even, so a model
 * loaded from a bfloat16 checkpoint narrows back to its stored bits exactly.
 */
import { formatShape, sizeOf, type Shape } from './shape.js';

/** float32 → bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN. */
function toBfloat16Bits(word: number): number {
  if ((word & 0x7fffffff) > 0x7f800000) return ((word >>> 16) | 0x0040) & 0xffff;
  return ((word + 0x7fff + ((word >>> 16) & 1)) >>> 16) & 0xffff;
}

export class HalfMatrix {
  readonly shape: number[];
  /** Optional human name (parameter path) used in error messages. */
  name: string | undefined;

  constructor(
    readonly bits: Uint16Array,
    shape: Shape,
  ) {
    if (shape.length !== 2 || sizeOf(shape) !== bits.length)
      throw new Error(`HalfMatrix: shape ${formatShape(shape)} does not hold ${bits.length} elements in 2 axes`);
    this.shape = [...shape];
  }

  /** Rounds float32 values to bfloat16 (exact for values that came from a bfloat16 checkpoint). */
  static fromFloat32(data: Float32Array, shape: Shape): HalfMatrix {
    const words = new Uint32Array(data.buffer, data.byteOffset, data.length);
    const bits = new Uint16Array(data.length);
    for (let i = 0; i < bits.length; i++) bits[i] = toBfloat16Bits(words[i]);
    return new HalfMatrix(bits, shape);
  }

  get size(): number {
    return this.bits.length;
  }

  /** The values as float32 in `target` (its first `size` elements). */
  widenInto(target: Float32Array): Float32Array {
    const words = new Uint32Array(target.buffer, target.byteOffset, this.bits.length);
    const bits = this.bits;
    for (let i = 0; i < bits.length; i++) words[i] = bits[i] << 16;
    return target.length === bits.length ? target : target.subarray(0, bits.length);
  }

  /** A new float32 array of the values (for saving or merging, not for the hot path). */
  toFloat32(): Float32Array {
    return this.widenInto(new Float32Array(this.bits.length));
  }
}

let scratch = new Float32Array(0);

/**
 * `weight` widened into the one shared scratch array (grown as needed). The result is valid until the
 * next call: callers use it for one product and never keep it.
 */
export function widenedScratch(weight: HalfMatrix): Float32Array {
  if (scratch.length < weight.size) scratch = new Float32Array(weight.size);
  return weight.widenInto(scratch);
}
