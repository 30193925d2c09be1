/**
 * The checks a backend makes on a MatmulShape before touching memory, shared by the wasm and webgpu
 * backends (and the webgpu product splitter): each dimension a non-negative integer, each operand long
 * enough for its batches, with a message naming the field or operand.
 * Is not: native's check (native-backend.ts), which also accepts bfloat16 B and words its errors for the
 * addon's own bounds checks.
 */
import type { MatmulShape } from '../backend.js';

/** Elements an operand must hold: the last batch block's offset plus one block. */
export function operandLength(batch: number, stride: number, block: number): number {
  return stride === 0 ? block : (batch - 1) * stride + block;
}

/** Throws `<backend> matmul: …` naming the field or the operand that does not fit the shape. */
export function checkMatmulShape(
  backend: string,
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  shape: MatmulShape,
): void {
  const { batch, M, K, N, aBatchStride, bBatchStride } = shape;
  for (const [field, value] of Object.entries({ batch, M, K, N, aBatchStride, bBatchStride })) {
    if (!Number.isInteger(value) || value < 0) {
      throw new Error(`${backend} matmul: shape.${field} must be a non-negative integer, got ${value}`);
    }
  }
  const need = [
    ['a', a, operandLength(batch, aBatchStride, M * K)],
    ['b', b, operandLength(batch, bBatchStride, K * N)],
    ['out', out, batch * M * N],
  ] as const;
  for (const [name, array, length] of need) {
    if (array.length < length) {
      throw new Error(
        `${backend} matmul: ${name} has ${array.length} elements but batch=${batch} M=${M} K=${K} N=${N} ` +
          `(aBatchStride=${aBatchStride}, bBatchStride=${bBatchStride}) needs ${length}`,
      );
    }
  }
}
