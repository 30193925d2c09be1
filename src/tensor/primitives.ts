/**
 * Structural primitives with their gradient rules: reductions (sum, max), shape ops (reshape,
 * permute, slice, concat, broadcastTo) and indexing (gather, indexSelect/embedding); matmul is in matmul.ts.
 *
 * Is not: elementwise maps (elementwise.ts), composites (ops.ts) or fused kernels (fused.ts).
 * Everything here runs in plain JS; none calls the kernel backend.
 */
import { record } from './autograd.js';
import { sumToShape } from './elementwise.js';
import {
  broadcastShapes,
  broadcastStrides,
  forEachRun,
  formatShape,
  normalizeAxis,
  sameShape,
  sizeOf,
  stridesOf,
  type Shape,
} from './shape.js';
import { Tensor } from './tensor.js';
import { uninitializedFloats } from './uninitialized.js';

function normalizeAxes(axis: number | readonly number[] | undefined, rank: number, opName: string): number[] {
  if (axis === undefined) return Array.from({ length: rank }, (_, i) => i);
  const axes = (typeof axis === 'number' ? [axis] : axis).map((a) => normalizeAxis(a, rank, opName));
  return [...new Set(axes)].sort((x, y) => x - y);
}

/** Repeats `x` along broadcast dimensions to `shape` (NumPy rules); gradient sums back. */
export function broadcastTo(x: Tensor, shape: Shape): Tensor {
  if (sameShape(x.shape, shape)) return x;
  const outShape = broadcastShapes(x.shape, shape, 'broadcastTo');
  if (!sameShape(outShape, shape)) {
    throw new Error(`broadcastTo: shape ${formatShape(x.shape)} cannot be broadcast to ${formatShape(shape)}`);
  }
  const output = new Float32Array(sizeOf(shape));
  const strides = broadcastStrides(x.shape, shape);
  forEachRun(shape, [strides], (outStart, starts, inner, length) => {
    for (let i = 0, source = starts[0]; i < length; i++, source += inner[0]) output[outStart + i] = x.data[source];
  });
  return record(new Tensor(output, shape), 'broadcastTo', [x], (g) => [sumToShape(g, shape, x.shape)]);
}

/** Sum over `axis` (one, several, or all when omitted). */
export function sum(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  const axes = normalizeAxes(axis, x.rank, 'sum');
  const keptShape = x.shape.map((dim, i) => (axes.includes(i) ? 1 : dim));
  const reduced = sumToShape(x.data, x.shape, keptShape);
  const data = reduced === x.data ? reduced.slice() : reduced;
  const outShape = keepDims ? keptShape : x.shape.filter((_, i) => !axes.includes(i));
  return record(new Tensor(data, outShape), 'sum', [x], (g) => [broadcastTo(new Tensor(g, keptShape), x.shape).data]);
}

/** Maximum along one axis; the gradient goes to the first maximal element (NaN wins, as in torch). */
export function max(x: Tensor, axis: number, keepDims = false): Tensor {
  const a = normalizeAxis(axis, x.rank, 'max');
  const outer = sizeOf(x.shape.slice(0, a));
  const length = x.shape[a];
  const inner = sizeOf(x.shape.slice(a + 1));
  if (length === 0) throw new Error(`max: cannot reduce an empty axis ${axis} of shape ${formatShape(x.shape)}`);
  const output = new Float32Array(outer * inner);
  const argmax = new Int32Array(outer * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let best = -Infinity;
      let bestIndex = 0;
      for (let k = 0; k < length; k++) {
        const value = x.data[(o * length + k) * inner + i];
        if (value > best || value !== value) {
          best = value;
          bestIndex = k;
          if (value !== value) break;
        }
      }
      output[o * inner + i] = best;
      argmax[o * inner + i] = bestIndex;
    }
  }
  const outShape = keepDims ? x.shape.map((dim, i) => (i === a ? 1 : dim)) : x.shape.filter((_, i) => i !== a);
  return record(new Tensor(output, outShape), 'max', [x], (g) => {
    const gradInput = new Float32Array(x.size);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) gradInput[(o * length + argmax[o * inner + i]) * inner + i] = g[o * inner + i];
    }
    return [gradInput];
  });
}

/** Same data, new shape (one dimension may be -1). Shares storage with `x`. */
export function reshape(x: Tensor, shape: Shape): Tensor {
  const resolved = [...shape];
  const unknown = resolved.indexOf(-1);
  if (unknown >= 0) {
    const known = sizeOf(resolved.filter((_, i) => i !== unknown));
    resolved[unknown] = known === 0 ? 0 : x.size / known;
  }
  if (sizeOf(resolved) !== x.size || resolved.some((dim) => !Number.isInteger(dim) || dim < 0)) {
    throw new Error(`reshape: cannot reshape ${formatShape(x.shape)} (${x.size} elements) to ${formatShape(shape)}`);
  }
  return record(new Tensor(x.data, resolved), 'reshape', [x], (g) => [g]);
}

/** Reorders dimensions (copies). `axes[i]` is the input axis that becomes output axis i. */
export function permute(x: Tensor, axes: readonly number[]): Tensor {
  const normalized = axes.map((axis) => normalizeAxis(axis, x.rank, 'permute'));
  if (normalized.length !== x.rank || new Set(normalized).size !== x.rank) {
    throw new Error(`permute: axes [${axes.join(', ')}] are not a permutation of a rank-${x.rank} tensor's axes`);
  }
  const outShape = normalized.map((axis) => x.shape[axis]);
  const inputStrides = stridesOf(x.shape);
  const sourceStrides = normalized.map((axis) => inputStrides[axis]);
  let output: Float32Array;
  // Axes of size 1 carry no layout: when the others keep their order (e.g. [B, 1, H, D] → [B, H, 1, D]
  // in a decode step), the data is already in output order and one block copy does.
  const moved = normalized.filter((axis) => x.shape[axis] !== 1);
  if (moved.every((axis, i) => i === 0 || moved[i - 1] < axis)) output = x.data.slice();
  else if (sourceStrides[sourceStrides.length - 1] === 1) {
    // The last axis stays last (e.g. [B, T, H, D] → [B, H, T, D]): each run is a contiguous block copy.
    const copy = new Float32Array(x.size);
    forEachRun(outShape, [sourceStrides], (outStart, starts, _inner, length) =>
      copy.set(x.data.subarray(starts[0], starts[0] + length), outStart),
    );
    output = copy;
  } else {
    const copy = new Float32Array(x.size);
    forEachRun(outShape, [sourceStrides], (outStart, starts, inner, length) => {
      for (let i = 0, source = starts[0]; i < length; i++, source += inner[0]) copy[outStart + i] = x.data[source];
    });
    output = copy;
  }
  const inverse = new Array<number>(normalized.length);
  normalized.forEach((axis, i) => (inverse[axis] = i));
  return record(new Tensor(output, outShape), 'permute', [x], (g) => [permute(new Tensor(g, outShape), inverse).data]);
}

export function transpose(x: Tensor, axis0 = -2, axis1 = -1): Tensor {
  const axes = Array.from({ length: x.rank }, (_, i) => i);
  const a = normalizeAxis(axis0, x.rank, 'transpose');
  const b = normalizeAxis(axis1, x.rank, 'transpose');
  [axes[a], axes[b]] = [axes[b], axes[a]];
  return permute(x, axes);
}

/** Elements start..end-1 along `axis` (copies). */
export function slice(x: Tensor, axis: number, start: number, end: number): Tensor {
  const a = normalizeAxis(axis, x.rank, 'slice');
  const length = x.shape[a];
  if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start <= end && end <= length)) {
    throw new Error(`slice: range ${start}..${end} is outside axis ${axis} of shape ${formatShape(x.shape)}`);
  }
  const outer = sizeOf(x.shape.slice(0, a));
  const inner = sizeOf(x.shape.slice(a + 1));
  const width = end - start;
  const output = new Float32Array(outer * width * inner);
  for (let o = 0; o < outer; o++) {
    output.set(x.data.subarray((o * length + start) * inner, (o * length + end) * inner), o * width * inner);
  }
  const outShape = x.shape.map((dim, i) => (i === a ? width : dim));
  return record(new Tensor(output, outShape), 'slice', [x], (g) => {
    const gradInput = new Float32Array(x.size);
    for (let o = 0; o < outer; o++)
      gradInput.set(g.subarray(o * width * inner, (o + 1) * width * inner), (o * length + start) * inner);
    return [gradInput];
  });
}

/** Joins tensors along `axis`; all other dimensions must match. */
export function concat(tensors: readonly Tensor[], axis: number): Tensor {
  if (tensors.length === 0) throw new Error('concat: needs at least one tensor');
  const first = tensors[0];
  const a = normalizeAxis(axis, first.rank, 'concat');
  for (const other of tensors) {
    if (other.rank !== first.rank || other.shape.some((dim, i) => i !== a && dim !== first.shape[i])) {
      throw new Error(
        `concat: shapes ${formatShape(first.shape)} and ${formatShape(other.shape)} differ outside axis ${axis}`,
      );
    }
  }
  const outer = sizeOf(first.shape.slice(0, a));
  const inner = sizeOf(first.shape.slice(a + 1));
  const widths = tensors.map((t) => t.shape[a]);
  const total = widths.reduce((s, w) => s + w, 0);
  const output = new Float32Array(outer * total * inner);
  let offset = 0;
  tensors.forEach((t, index) => {
    const width = widths[index];
    for (let o = 0; o < outer; o++)
      output.set(t.data.subarray(o * width * inner, (o + 1) * width * inner), (o * total + offset) * inner);
    offset += width;
  });
  const outShape = first.shape.map((dim, i) => (i === a ? total : dim));
  return record(new Tensor(output, outShape), 'concat', [...tensors], (g) => {
    let start = 0;
    return tensors.map((t, index) => {
      const width = widths[index];
      const part = new Float32Array(t.size);
      for (let o = 0; o < outer; o++)
        part.set(g.subarray((o * total + start) * inner, (o * total + start + width) * inner), o * width * inner);
      start += width;
      return part;
    });
  });
}

function checkIndex(index: number, limit: number, opName: string, where: number): void {
  if (!(index >= 0 && index < limit)) {
    throw new Error(`${opName}: index ${index} at position ${where} is out of range [0, ${limit})`);
  }
}

/** torch.gather: out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis`; gradient scatter-adds. */
export function gather(x: Tensor, axis: number, indices: Int32Array, indexShape: Shape): Tensor {
  const a = normalizeAxis(axis, x.rank, 'gather');
  if (indexShape.length !== x.rank || indexShape.some((dim, i) => i !== a && dim !== x.shape[i])) {
    throw new Error(
      `gather: index shape ${formatShape(indexShape)} does not fit input ${formatShape(x.shape)} on axis ${axis}`,
    );
  }
  if (sizeOf(indexShape) !== indices.length)
    throw new Error(`gather: ${indices.length} indices for index shape ${formatShape(indexShape)}`);
  const outer = sizeOf(x.shape.slice(0, a));
  const inner = sizeOf(x.shape.slice(a + 1));
  const length = x.shape[a];
  const width = indexShape[a];
  const sourceIndex = new Int32Array(indices.length);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < width; j++) {
      for (let i = 0; i < inner; i++) {
        const position = (o * width + j) * inner + i;
        const index = indices[position];
        checkIndex(index, length, 'gather', position);
        sourceIndex[position] = (o * length + index) * inner + i;
      }
    }
  }
  const output = new Float32Array(indices.length);
  for (let p = 0; p < output.length; p++) output[p] = x.data[sourceIndex[p]];
  return record(new Tensor(output, indexShape), 'gather', [x], (g) => {
    const gradInput = new Float32Array(x.size);
    for (let p = 0; p < g.length; p++) gradInput[sourceIndex[p]] += g[p];
    return [gradInput];
  });
}

/** Rows of `x` along axis 0 (an embedding lookup); the gradient scatter-adds into the rows used. */
export function indexSelect(x: Tensor, indices: Int32Array | readonly number[]): Tensor {
  if (x.rank < 1) throw new Error('indexSelect: needs a tensor of rank >= 1');
  const rows = x.shape[0];
  const width = x.size / Math.max(rows, 1);
  const output = uninitializedFloats(indices.length * width); // every row written below (or the call throws)
  for (let r = 0; r < indices.length; r++) {
    const index = indices[r];
    checkIndex(index, rows, 'indexSelect', r);
    output.set(x.data.subarray(index * width, (index + 1) * width), r * width);
  }
  return record(new Tensor(output, [indices.length, ...x.shape.slice(1)]), 'indexSelect', [x], (g) => {
    const gradInput = new Float32Array(x.size);
    for (let r = 0; r < indices.length; r++) {
      const base = indices[r] * width;
      for (let c = 0; c < width; c++) gradInput[base + c] += g[r * width + c];
    }
    return [gradInput];
  });
}

export const embedding = (weight: Tensor, ids: Int32Array | readonly number[]): Tensor => indexSelect(weight, ids);
