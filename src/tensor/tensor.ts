/**
 * The Tensor: a float32, contiguous, row-major array with a shape, an optional gradient and the
 * graph node that produced it. Creation helpers live here too.
 *
 * Is not: the ops. Methods below are thin conveniences that call the functions in primitives.ts,
 * ops.ts and fused.ts, which are the real API (and are what the docs and tests use).
 */
import { type GradNode, runBackward } from './autograd.js';
import { addArrays } from './backends/select.js';
import { formatShape, sizeOf, type Shape } from './shape.js';

export interface TensorOptions {
  requiresGrad?: boolean;
}

export class Tensor {
  readonly shape: number[];
  /** Contiguous row-major storage. Views made by `reshape` share it. */
  readonly data: Float32Array;
  requiresGrad: boolean;
  /** Accumulated gradient of a leaf after `backward()`; null until then. */
  grad: Tensor | null = null;
  /** The op that produced this tensor, when the graph was recorded. */
  node: GradNode | null = null;
  /** Optional human name (parameter path) used in error messages. */
  name: string | undefined;

  constructor(data: Float32Array, shape: Shape, options: TensorOptions = {}) {
    if (sizeOf(shape) !== data.length) {
      throw new Error(`Tensor: shape ${formatShape(shape)} needs ${sizeOf(shape)} elements, data has ${data.length}`);
    }
    for (const dim of shape) {
      if (!Number.isInteger(dim) || dim < 0)
        throw new Error(`Tensor: invalid dimension ${dim} in shape ${formatShape(shape)}`);
    }
    this.data = data;
    this.shape = [...shape];
    this.requiresGrad = options.requiresGrad ?? false;
  }

  get size(): number {
    return this.data.length;
  }

  get rank(): number {
    return this.shape.length;
  }

  /** Back-propagates from this tensor (a scalar, unless a seed gradient of the same size is given). */
  backward(seed?: Float32Array): void {
    runBackward(this, seed);
  }

  /** A tensor sharing this one's data, cut off from the graph. */
  detach(): Tensor {
    return new Tensor(this.data, this.shape);
  }

  /** The single value of a one-element tensor. */
  item(): number {
    if (this.size !== 1)
      throw new Error(`item: tensor of shape ${formatShape(this.shape)} has ${this.size} elements, not 1`);
    return this.data[0];
  }

  toArray(): number[] {
    return Array.from(this.data);
  }

  /**
   * Adds a gradient into `.grad` (used by autograd for leaves and by gradient accumulation).
   * `owned`: the caller gives the buffer away, so the first gradient is kept without a copy.
   */
  accumulateGrad(gradient: Float32Array, owned = false): void {
    if (!this.grad) {
      this.grad = new Tensor(owned ? gradient : gradient.slice(), this.shape);
      return;
    }
    // A later micro-batch's gradient: every parameter of the model, so the backend's threaded sum (same floats).
    addArrays(this.grad.data, gradient, this.grad.data);
  }

  toString(): string {
    const preview = Array.from(this.data.subarray(0, 8), (value) => value.toPrecision(4)).join(', ');
    return `Tensor${formatShape(this.shape)}(${preview}${this.size > 8 ? ', …' : ''})`;
  }
}

/** A tensor from values; the shape defaults to a 1-D vector. Float32Array inputs are not copied. */
export function tensor(values: ArrayLike<number>, shape?: Shape, options: TensorOptions = {}): Tensor {
  const data = values instanceof Float32Array ? values : Float32Array.from(values);
  return new Tensor(data, shape ?? [data.length], options);
}

export function scalar(value: number, options: TensorOptions = {}): Tensor {
  return new Tensor(new Float32Array([value]), [], options);
}

export function zeros(shape: Shape, options: TensorOptions = {}): Tensor {
  return new Tensor(new Float32Array(sizeOf(shape)), shape, options);
}

export function ones(shape: Shape, options: TensorOptions = {}): Tensor {
  return full(shape, 1, options);
}

export function full(shape: Shape, value: number, options: TensorOptions = {}): Tensor {
  return new Tensor(new Float32Array(sizeOf(shape)).fill(value), shape, options);
}

/** A trainable leaf tensor. */
export function parameter(values: ArrayLike<number>, shape?: Shape, name?: string): Tensor {
  const result = tensor(values, shape, { requiresGrad: true });
  result.name = name;
  return result;
}
