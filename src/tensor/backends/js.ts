/**
 * The `js` backend: plain TypeScript loops over Float32Array. It is the executable specification
 * every other backend is tested against, and the fallback that is always there.
 *
 * Is not: fast. It uses the cache-friendly i-k-j loop order and nothing cleverer, so that its
 * correctness is obvious by reading.
 */
import type { Backend, MatmulShape } from '../backend.js';

/** out[b] (+)= op(A[b]) · op(B[b]) with plain loops; accumulates in float32 like the other backends. */
export function matmulJs(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape): void {
  const { batch, M, K, N, transposeA, transposeB, aBatchStride, bBatchStride, accumulate } = shape;
  // Row-major strides for A as [M,K] (or stored [K,M]) and B as [K,N] (or stored [N,K]).
  const aRow = transposeA ? 1 : K;
  const aCol = transposeA ? M : 1;
  const bRow = transposeB ? 1 : N;
  const bCol = transposeB ? K : 1;
  const row = new Float32Array(N);
  for (let batchIndex = 0; batchIndex < batch; batchIndex++) {
    const aOffset = batchIndex * aBatchStride;
    const bOffset = batchIndex * bBatchStride;
    const outOffset = batchIndex * M * N;
    for (let i = 0; i < M; i++) {
      row.fill(0);
      for (let k = 0; k < K; k++) {
        const aik = a[aOffset + i * aRow + k * aCol];
        const bBase = bOffset + k * bRow;
        if (bCol === 1) {
          for (let j = 0; j < N; j++) row[j] += aik * b[bBase + j];
        } else {
          for (let j = 0; j < N; j++) row[j] += aik * b[bBase + j * bCol];
        }
      }
      const base = outOffset + i * N;
      if (accumulate) for (let j = 0; j < N; j++) out[base + j] += row[j];
      else out.set(row, base);
    }
  }
}

export function createJsBackend(): Backend {
  return { name: 'js', threads: 1, matmul: matmulJs, dispose() {} };
}
