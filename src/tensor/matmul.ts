/**
 * Matrix multiplication with its gradient rules: op(a)·op(b) over the last two dims, batched or with
 * one side shared, optional transposes; forward and both gradients run on the kernel backend.
 *
 * Is not: the kernels themselves (backends/) or the LoRA linear (low-rank-linear.ts).
 */
import { record } from './autograd.js';
import { getBackend } from './backends/select.js';
import { formatShape, sameShape, sizeOf } from './shape.js';
import { Tensor } from './tensor.js';

export interface MatmulOptions {
  transposeA?: boolean;
  transposeB?: boolean;
}

/**
 * op(a) · op(b) over the last two dims. a: [..., M, K] (or [..., K, M] with transposeA), b: [..., K, N]
 * (or [..., N, K]); batch dims must be equal, or one side 2-D (shared across the batch).
 */
export function matmul(a: Tensor, b: Tensor, options: MatmulOptions = {}): Tensor {
  const transposeA = options.transposeA ?? false;
  const transposeB = options.transposeB ?? false;
  const fail = (): never => {
    throw new Error(
      `matmul: shapes ${formatShape(a.shape)}${transposeA ? 'ᵀ' : ''} and ${formatShape(b.shape)}${transposeB ? 'ᵀ' : ''} are not compatible`,
    );
  };
  if (a.rank < 2 || b.rank < 2) fail();
  const [aRows, aCols] = a.shape.slice(-2);
  const [bRows, bCols] = b.shape.slice(-2);
  const M = transposeA ? aCols : aRows;
  const K = transposeA ? aRows : aCols;
  const N = transposeB ? bRows : bCols;
  if ((transposeB ? bCols : bRows) !== K) fail();
  const aBatchShape = a.shape.slice(0, -2);
  const bBatchShape = b.shape.slice(0, -2);
  let batchShape: number[];
  if (b.rank === 2) batchShape = aBatchShape;
  else if (a.rank === 2) batchShape = bBatchShape;
  else if (sameShape(aBatchShape, bBatchShape)) batchShape = aBatchShape;
  else return fail();
  const batch = sizeOf(batchShape);
  const aShared = a.rank === 2 && batch > 1;
  const bShared = b.rank === 2;
  const output = new Float32Array(batch * M * N);
  const backend = getBackend();
  if (bShared && !transposeA && a.rank > 2) {
    // [..., M, K] · [K, N]: fold the batch into M, one big product (the linear-layer case).
    backend.matmul(a.data, b.data, output, {
      batch: 1,
      M: batch * M,
      K,
      N,
      transposeA,
      transposeB,
      aBatchStride: 0,
      bBatchStride: 0,
      accumulate: false,
    });
  } else {
    backend.matmul(a.data, b.data, output, {
      batch,
      M,
      K,
      N,
      transposeA,
      transposeB,
      aBatchStride: aShared ? 0 : M * K,
      bBatchStride: bShared ? 0 : K * N,
      accumulate: false,
    });
  }
  const outShape = [...batchShape, M, N];
  return record(new Tensor(output, outShape), 'matmul', [a, b], (g) => [
    a.requiresGrad ? matmulGradA(a, b, g, { M, K, N, batch, transposeA, transposeB, aShared, bShared }) : null,
    b.requiresGrad ? matmulGradB(a, b, g, { M, K, N, batch, transposeA, transposeB, aShared, bShared }) : null,
  ]);
}

interface MatmulGeometry {
  M: number;
  K: number;
  N: number;
  batch: number;
  transposeA: boolean;
  transposeB: boolean;
  aShared: boolean;
  bShared: boolean;
}

/**
 * out = a · weightᵀ for a [rows, K] and weight [N, K] (a linear layer's product) on flat arrays, with no
 * graph: the same backend product as `matmul(a, weight, { transposeB: true })`, so the same floats, into
 * an array the caller keeps (a decode step's reused output, a chunk of the vocabulary's logits).
 */
export function linearInto(
  a: Float32Array,
  weight: Float32Array,
  out: Float32Array,
  rows: number,
  K: number,
  N: number,
): Float32Array {
  const shape = { batch: 1, M: rows, K, N, transposeA: false, transposeB: true, aBatchStride: 0, bBatchStride: 0 };
  getBackend().matmul(a, weight, out, { ...shape, accumulate: false });
  return out;
}

// C = op(A)·op(B) ⇒ d op(A) = dC·op(B)ᵀ and d op(B) = op(A)ᵀ·dC; stored layouts decide the flags.
// A shared (2-D) operand accumulates its gradient over the batch.
function matmulGradA(a: Tensor, b: Tensor, g: Float32Array, geometry: MatmulGeometry): Float32Array {
  const { M, K, N, batch, transposeA, transposeB, aShared, bShared } = geometry;
  const gradA = new Float32Array(a.size);
  const backend = getBackend();
  const bStride = bShared ? 0 : K * N;
  if (!transposeA) {
    // dA [M,K] = dC [M,N] · op(B)ᵀ
    if (aShared)
      for (let i = 0; i < batch; i++)
        backend.matmul(g.subarray(i * M * N), b.data.subarray(i * bStride), gradA, {
          batch: 1,
          M,
          K: N,
          N: K,
          transposeA: false,
          transposeB: !transposeB,
          aBatchStride: 0,
          bBatchStride: 0,
          accumulate: true,
        });
    else if (bShared)
      backend.matmul(g, b.data, gradA, {
        batch: 1,
        M: batch * M,
        K: N,
        N: K,
        transposeA: false,
        transposeB: !transposeB,
        aBatchStride: 0,
        bBatchStride: 0,
        accumulate: false,
      });
    else
      backend.matmul(g, b.data, gradA, {
        batch,
        M,
        K: N,
        N: K,
        transposeA: false,
        transposeB: !transposeB,
        aBatchStride: M * N,
        bBatchStride: bStride,
        accumulate: false,
      });
  } else {
    // dA stored [K,M] = op(B) [K,N] · dCᵀ [N,M]
    backend.matmul(b.data, g, gradA, {
      batch: aShared ? 1 : batch,
      M: K,
      K: N,
      N: M,
      transposeA: transposeB,
      transposeB: true,
      aBatchStride: bStride,
      bBatchStride: M * N,
      accumulate: false,
    });
    if (aShared)
      for (let i = 1; i < batch; i++)
        backend.matmul(b.data.subarray(i * bStride), g.subarray(i * M * N), gradA, {
          batch: 1,
          M: K,
          K: N,
          N: M,
          transposeA: transposeB,
          transposeB: true,
          aBatchStride: 0,
          bBatchStride: 0,
          accumulate: true,
        });
  }
  return gradA;
}

function matmulGradB(a: Tensor, _b: Tensor, g: Float32Array, geometry: MatmulGeometry): Float32Array {
  const { M, K, N, batch, transposeA, transposeB, aShared, bShared } = geometry;
  const gradB = new Float32Array(_b.size);
  const backend = getBackend();
  const aStride = aShared ? 0 : M * K;
  if (bShared && !transposeA && !aShared) {
    // Fold the batch into the reduction dimension: one product over all rows.
    const rows = batch * M;
    if (!transposeB)
      backend.matmul(a.data, g, gradB, {
        batch: 1,
        M: K,
        K: rows,
        N,
        transposeA: true,
        transposeB: false,
        aBatchStride: 0,
        bBatchStride: 0,
        accumulate: false,
      });
    else
      backend.matmul(g, a.data, gradB, {
        batch: 1,
        M: N,
        K: rows,
        N: K,
        transposeA: true,
        transposeB: false,
        aBatchStride: 0,
        bBatchStride: 0,
        accumulate: false,
      });
    return gradB;
  }
  const count = bShared ? batch : 1;
  for (let i = 0; i < count; i++) {
    const aPart = a.data.subarray(bShared ? i * aStride : 0);
    const gPart = g.subarray(bShared ? i * M * N : 0);
    const innerBatch = bShared ? 1 : batch;
    if (!transposeB) {
      // dB [K,N] = op(A)ᵀ [K,M] · dC [M,N]
      backend.matmul(aPart, gPart, gradB, {
        batch: innerBatch,
        M: K,
        K: M,
        N,
        transposeA: !transposeA,
        transposeB: false,
        aBatchStride: aStride,
        bBatchStride: M * N,
        accumulate: bShared && i > 0,
      });
    } else {
      // dB stored [N,K] = dCᵀ [N,M] · op(A) [M,K]
      backend.matmul(gPart, aPart, gradB, {
        batch: innerBatch,
        M: N,
        K: M,
        N: K,
        transposeA: true,
        transposeB: transposeA,
        aBatchStride: M * N,
        bBatchStride: aStride,
        accumulate: bShared && i > 0,
      });
    }
  }
  return gradB;
}
