/**
 * Splitting one batched product into products whose operands each fit a GPU binding: WebGPU caps a
 * storage binding at the adapter's maxStorageBufferBindingSize (128 MiB on lavapipe, so Qwen2.5-0.5B's
 * 544 MB embedding does not fit one), so a product over the cap runs as several that are not.
 *
 * Is: the host-side plan, pure and backend-free: batches one at a time, then halves of N (B's rows when
 * B is a weight stored [N, K], gathered columns otherwise; the output's column block gathered and
 * scattered), then halves of M (A's rows, or gathered columns when A is stored [K, M]; the output's
 * rows in place). Each output element is still one product over all of K, so a runner that sums in k
 * order gives the unsplit result bit for bit.
 * Is not: the GPU dispatch (webgpu-backend.ts runs each piece) or a split of K (one row of A longer than
 * a binding is refused).
 */
import type { MatmulShape } from '../../backend.js';
import { operandLength } from '../matmul-shape.js';

export type ProductRunner = (a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape) => void;

/** Columns [start, start + count) of a row-major [rows, columns] matrix, as a [rows, count] copy. */
function gatherColumns(
  matrix: Float32Array,
  rows: number,
  columns: number,
  start: number,
  count: number,
): Float32Array {
  const block = new Float32Array(rows * count);
  for (let row = 0; row < rows; row++) {
    block.set(matrix.subarray(row * columns + start, row * columns + start + count), row * count);
  }
  return block;
}

function scatterColumns(block: Float32Array, matrix: Float32Array, rows: number, columns: number, start: number): void {
  const count = block.length / rows;
  for (let row = 0; row < rows; row++)
    matrix.set(block.subarray(row * count, (row + 1) * count), row * columns + start);
}

/** Runs `out (+)= op(A)·op(B)` (backend.ts's MatmulShape) through `run` in pieces of at most maxFloats per operand. */
export function runInFittingProducts(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  shape: MatmulShape,
  maxFloats: number,
  run: ProductRunner,
): void {
  const { batch, M, K, N, transposeA, transposeB, accumulate } = shape;
  const fits =
    operandLength(batch, shape.aBatchStride, M * K) <= maxFloats &&
    operandLength(batch, shape.bBatchStride, K * N) <= maxFloats &&
    batch * M * N <= maxFloats;
  if (fits) return run(a, b, out, shape);
  if (batch > 1) {
    for (let index = 0; index < batch; index++) {
      runInFittingProducts(
        a.subarray(index * shape.aBatchStride),
        b.subarray(index * shape.bBatchStride),
        out.subarray(index * M * N, (index + 1) * M * N),
        { ...shape, batch: 1, aBatchStride: M * K, bBatchStride: K * N },
        maxFloats,
        run,
      );
    }
    return;
  }
  if (K > maxFloats) {
    throw new Error(`webgpu matmul: K=${K} is longer than one GPU binding holds (${maxFloats} floats)`);
  }
  if (K * N > maxFloats || (M === 1 && N > maxFloats)) {
    const half = Math.ceil(N / 2);
    for (const [start, end] of [
      [0, half],
      [half, N],
    ]) {
      const count = end - start;
      const bBlock = transposeB ? b.subarray(start * K, end * K) : gatherColumns(b, K, N, start, count);
      const outBlock = accumulate ? gatherColumns(out, M, N, start, count) : new Float32Array(M * count);
      runInFittingProducts(a, bBlock, outBlock, { ...shape, N: count, bBatchStride: K * count }, maxFloats, run);
      scatterColumns(outBlock, out, M, N, start);
    }
    return;
  }
  const half = Math.ceil(M / 2);
  for (const [start, end] of [
    [0, half],
    [half, M],
  ]) {
    const count = end - start;
    const aBlock = transposeA ? gatherColumns(a, K, M, start, count) : a.subarray(start * K, end * K);
    runInFittingProducts(
      aBlock,
      b,
      out.subarray(start * N, end * N),
      { ...shape, M: count, aBatchStride: count * K },
      maxFloats,
      run,
    );
  }
}
