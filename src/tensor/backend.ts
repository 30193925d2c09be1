/**
 * The kernel backend interface: the few numeric kernels that carry the FLOPs, on flat Float32Arrays.
 *
 * Is: a contract between the tensor layer and kernel implementations (`js`, `wasm`, later `native`).
 * Is not: autograd, shapes or broadcasting logic — those live in primitives.ts and are shared by every
 * backend, so a backend only has to get arithmetic right. The `js` backend is the executable spec;
 * every other backend is tested against it (src/tensor/backends/conformance.test.ts).
 */

/** Geometry of a (batched) matrix product `out[b] (+)= op(A[b]) · op(B[b])`. */
export interface MatmulShape {
  /** Number of independent products; `out` holds `batch` row-major [M, N] blocks back to back. */
  batch: number;
  M: number;
  K: number;
  N: number;
  /** When true, A[b] is stored as [K, M] row-major and used transposed. */
  transposeA: boolean;
  /** When true, B[b] is stored as [N, K] row-major and used transposed. */
  transposeB: boolean;
  /** Elements between consecutive A blocks (M*K for a packed batch, 0 to reuse one A for every b). */
  aBatchStride: number;
  /** Elements between consecutive B blocks (K*N for a packed batch, 0 to reuse one B — e.g. weights). */
  bBatchStride: number;
  /** When true, add into `out` instead of overwriting it (used for gradient accumulation). */
  accumulate: boolean;
}

export interface Backend {
  /** Short name printed once at selection time: 'js', 'wasm', 'native'. */
  readonly name: string;
  /** Worker threads the backend uses for large kernels (1 = the calling thread only). */
  readonly threads: number;
  /** Batched single-precision matrix product; see MatmulShape. `a`, `b`, `out` never alias. */
  matmul(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape): void;
  /** Releases worker threads, if any. Safe to call more than once. */
  dispose(): void;
}
