/**
 * Shape arithmetic shared by every op: sizes, strides, broadcasting, axis normalisation, and the
 * strided "map one shape onto another" loop that broadcasting and reductions both use.
 *
 * Is not: an op. Nothing here records gradients or touches a backend.
 */

export type Shape = readonly number[];

export function sizeOf(shape: Shape): number {
  let size = 1;
  for (const dim of shape) size *= dim;
  return size;
}

export function stridesOf(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    strides[axis] = stride;
    stride *= shape[axis];
  }
  return strides;
}

export function formatShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((dim, axis) => dim === b[axis]);
}

/** NumPy broadcasting of two shapes; the error names the op and both shapes. */
export function broadcastShapes(a: Shape, b: Shape, opName: string): number[] {
  const rank = Math.max(a.length, b.length);
  const out = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const dimA = a[a.length - rank + i] ?? 1;
    const dimB = b[b.length - rank + i] ?? 1;
    if (dimA !== dimB && dimA !== 1 && dimB !== 1) {
      throw new Error(`${opName}: shapes ${formatShape(a)} and ${formatShape(b)} cannot be broadcast together`);
    }
    out[i] = dimA === 1 ? dimB : dimA;
  }
  return out;
}

/** Turns a possibly negative axis into 0..rank-1, or throws naming the op. */
export function normalizeAxis(axis: number, rank: number, opName: string): number {
  const normalized = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(normalized) || normalized < 0 || normalized >= Math.max(rank, 1)) {
    throw new Error(`${opName}: axis ${axis} is out of range for a tensor of rank ${rank}`);
  }
  return normalized;
}

/**
 * Strides of `shape` read as if it had shape `target` (right-aligned, broadcast dims get stride 0).
 * Used to walk a small operand while iterating over the broadcast output.
 */
export function broadcastStrides(shape: Shape, target: Shape): number[] {
  const own = stridesOf(shape);
  const offset = target.length - shape.length;
  return target.map((_, axis) => {
    const sourceAxis = axis - offset;
    if (sourceAxis < 0 || shape[sourceAxis] === 1) return 0;
    return own[sourceAxis];
  });
}

/**
 * Visits every index of `outShape` in row-major order and calls `visit(outIndex, offsets)` where
 * `offsets[i]` is the flat position in operand i (given by strides, possibly 0 for broadcast dims).
 * The innermost loop is unrolled into a callback over a run so kernels stay tight.
 */
export function forEachRun(
  outShape: Shape,
  operandStrides: number[][],
  visitRun: (outStart: number, starts: number[], innerStrides: number[], length: number) => void,
): void {
  const rank = outShape.length;
  const total = sizeOf(outShape);
  if (total === 0) return;
  if (rank === 0) {
    visitRun(
      0,
      operandStrides.map(() => 0),
      operandStrides.map(() => 0),
      1,
    );
    return;
  }
  const inner = outShape[rank - 1];
  const innerStrides = operandStrides.map((strides) => strides[rank - 1]);
  const counter = new Array<number>(rank - 1).fill(0);
  const starts = operandStrides.map(() => 0);
  for (let outStart = 0; outStart < total; outStart += inner) {
    visitRun(outStart, starts, innerStrides, inner);
    // Advance the multi-index over the outer dimensions and update each operand's start.
    for (let axis = rank - 2; axis >= 0; axis--) {
      counter[axis]++;
      for (let operand = 0; operand < starts.length; operand++) starts[operand] += operandStrides[operand][axis];
      if (counter[axis] < outShape[axis]) break;
      for (let operand = 0; operand < starts.length; operand++) {
        starts[operand] -= operandStrides[operand][axis] * outShape[axis];
      }
      counter[axis] = 0;
    }
  }
}
