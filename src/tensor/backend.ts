/**
 * The kernel backend interface: the few numeric kernels that carry the FLOPs, on flat Float32Arrays.
 *
 * Is: a contract between the tensor layer and kernel implementations (`js`, `wasm`, `native`, `webgpu`).
 * Is not: autograd, shapes or broadcasting logic — those live in primitives.ts and are shared by every
 * backend, so a backend only has to get arithmetic right. The `js` backend is the executable spec;
 * every other backend is tested against it (src/tensor/backends/conformance.test.ts).
 * The row kernels (SwiGLU, RMSNorm, log-sum-exp rows, AdamW, the sampler's draw, attention, RoPE) are optional: fused.ts,
 * nn/optimizer.ts and sampling/logits.ts call them when the backend has them and run their own loops (the
 * spec) otherwise.
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
  /** What the selection line prints after the name, when more than the thread count says (a GPU adapter's name). */
  readonly detail?: string;
  /** Worker threads the backend uses for large kernels (1 = the calling thread only). */
  readonly threads: number;
  /**
   * True when products read their operands from a device's own memory (webgpu): there, keeping a model's
   * weights on the device through a whole training forward and backward (select.ts withTrainingWeights)
   * saves copying each weight once per product. CPU backends leave it unset: their products read host
   * memory, and their constant-operand packing is for decode-sized products only.
   */
  readonly deviceMemory?: boolean;
  /** Batched single-precision matrix product; see MatmulShape. `a`, `b`, `out` never alias. */
  matmul(a: Float32Array, b: Float32Array, out: Float32Array, shape: MatmulShape): void;
  /**
   * matmul with B given as bfloat16 bits (a frozen base weight, tensor/half-matrix.ts), widened inside the
   * kernel: bit for bit the product with B widened to float32 first, without that float32 copy. Optional:
   * without it callers widen B into a scratch array and call matmul.
   */
  matmulBfloat16B?(a: Float32Array, b: Uint16Array, out: Float32Array, shape: MatmulShape): void;
  /** out[i] = a[i] + b[i] over a's length (out may be a or b): residual sums, gradient accumulation. */
  addArrays?(a: Float32Array, b: Float32Array, out: Float32Array): void;
  /** Σ x[i]² in double (gradient clipping's norm; summed in another order than one loop, so within rounding of it). */
  sumOfSquares?(x: Float32Array): number;
  /** x[i] = fround(x[i]·factor) in place (gradient clipping's scaling; bit for bit the loop). */
  scaleArray?(x: Float32Array, factor: number): void;
  /** `count` blocks of `length` floats from source[sourceStart + i·sourceStride] to target[targetStart + i·targetStride]. */
  copyBlocks?(source: Float32Array, target: Float32Array, blocks: BlockCopy): void;
  /** out = silu(gate)·up elementwise (a backend may round differently from the spec loop; it states how). */
  swigluForward?(gate: Float32Array, up: Float32Array, out: Float32Array): void;
  /**
   * gradGate = (g·up)·σ(gate)(1 + gate(1 − σ(gate))), gradUp = g·silu(gate) (recomputed, not kept); `out`,
   * when given, receives silu(gate)·up from the same pass, bit for bit this backend's swigluForward.
   */
  swigluBackward?(
    gate: Float32Array,
    up: Float32Array,
    gradOut: Float32Array,
    gradGate: Float32Array,
    gradUp: Float32Array,
    out: Float32Array | null,
  ): void;
  /** RMSNorm over rows [rows, D]: out = x·s·weight, inverseRms[r] = s = 1/√(mean(x²) + eps). */
  rmsNormForward?(
    x: Float32Array,
    weight: Float32Array,
    rows: number,
    D: number,
    eps: number,
    out: Float32Array,
    inverseRms: Float32Array,
  ): void;
  /** RMSNorm gradients: gradX (overwritten) and gradWeight (overwritten with Σ over rows). */
  rmsNormBackward?(
    x: Float32Array,
    weight: Float32Array,
    inverseRms: Float32Array,
    gradOut: Float32Array,
    rows: number,
    D: number,
    gradX: Float32Array,
    gradWeight: Float32Array,
  ): void;
  /**
   * Per row of logits [rows, V] without `entropy`: shift = row max if finite else 0 and logTotal =
   * log Σ exp(x − shift). With `entropy`: shift = the row max as is and entropy = softmax entropy.
   */
  logSumExpRows?(
    logits: Float32Array,
    rows: number,
    V: number,
    shift: Float32Array,
    logTotal: Float64Array,
    entropy: Float32Array | null,
  ): void;
  /** out[r, i] = −rowGrad[r]·exp(x − shift[r] − logTotal[r]); rows with rowGrad 0 are not written. */
  softmaxGradRows?(
    logits: Float32Array,
    rows: number,
    V: number,
    shift: Float32Array,
    logTotal: Float64Array,
    rowGrad: Float32Array,
    out: Float32Array,
  ): void;
  /** One AdamW step on one parameter, in place on parameter, first and second (see nn/optimizer.ts). */
  adamwUpdate?(
    parameter: Float32Array,
    grad: Float32Array,
    first: Float32Array,
    second: Float32Array,
    step: AdamWStep,
  ): void;
  /**
   * One categorical draw per row of logits [rows, V] from softmax(x / temperature) by inverse CDF with
   * uniforms[r] in [0, 1): ids[r] and logprobs[r] = log softmax(x / temperature)[ids[r]]. A −Inf logit is
   * never drawn. The spec is sampling/logits.ts's drawFromLogits on the scaled row.
   */
  sampleRows?(
    logits: Float32Array,
    rows: number,
    V: number,
    temperature: number,
    uniforms: Float64Array,
    ids: Int32Array,
    logprobs: Float64Array,
  ): void;
  /**
   * Decode attention of `rows` queries sharing one prompt (tensor/prefix-attention.ts's loops are the spec):
   * row b, query head h (key-value head h / (Hq/Hkv)) attends, with softmax(scale·q·k), to the prompt's L keys
   * then its own S keys; keys at positions below firstVisible (prompt key s at s, own key s at L + s) are
   * masked, and a row with every key masked gets zeros. q and out are [rows, Hq, D], promptKeys/Values
   * [Hkv, promptCapacity, D], ownKeys/Values [rows, Hkv, ownCapacity, D]. With dims.rowOffsets the rows
   * continue different prompts of one length held in one array each: row b's prompt starts at floats
   * rowOffsets[2b] of promptKeys and rowOffsets[2b + 1] of promptValues (one call for a whole decode step).
   */
  prefixAttentionRows?(
    q: Float32Array,
    promptKeys: Float32Array,
    promptValues: Float32Array,
    ownKeys: Float32Array,
    ownValues: Float32Array,
    out: Float32Array,
    dims: PrefixAttentionDims,
  ): void;
  /**
   * Causal attention of a training forward (tensor/attention.ts's matmul + softmax path is the spec): out =
   * softmax(scale·q·kᵀ + masks)·v and logSumExp[(b·Hq + h)·T + t] = log Σ e^(score) of each query row, kept
   * for the backward (+∞ for a row that sees no key; its output is zeros). See TrainingAttentionDims.
   */
  attentionForward?(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    logSumExp: Float32Array,
    dims: TrainingAttentionDims,
  ): void;
  /**
   * attentionForward's gradients from gradOut (laid out as out) and its logSumExp, the probabilities being
   * recomputed: gradQ is overwritten, and gradK, gradV at key positions s < S (the rest is not written).
   */
  attentionBackward?(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    gradOut: Float32Array,
    logSumExp: Float32Array,
    gradQ: Float32Array,
    gradK: Float32Array,
    gradV: Float32Array,
    dims: TrainingAttentionDims,
  ): void;
  /**
   * Rotate-half RoPE of x [rows, H, D] into out, with angle row r % period of cos and sin [·, D/2] and the
   * sine's sign flipped when direction is −1 (the inverse rotation); bit for bit fused.ts's rope loop.
   */
  ropeRows?(
    x: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    rows: number,
    period: number,
    H: number,
    D: number,
    direction: 1 | -1,
    out: Float32Array,
  ): void;
  /**
   * Runs `fn` with the caller's promise that no array in `operands` changes until it returns, so the
   * backend may keep those arrays, when they are the B of a product, in a faster layout (native packs
   * weights once for all the decode steps of a generation). Optional: without it `fn` just runs.
   * Nested calls add to the set; whatever was kept is dropped when the outermost call returns or throws.
   */
  withConstantOperands?<T>(operands: Iterable<Float32Array>, fn: () => T): T;
  /** Releases worker threads, if any. Safe to call more than once. */
  dispose(): void;
}

/** Geometry of one Backend.copyBlocks call (counts and offsets in floats). */
export interface BlockCopy {
  count: number;
  length: number;
  sourceStart: number;
  sourceStride: number;
  targetStart: number;
  targetStride: number;
}

/** Geometry of one Backend.prefixAttentionRows call. */
export interface PrefixAttentionDims {
  rows: number;
  Hq: number;
  Hkv: number;
  D: number;
  L: number;
  S: number;
  promptCapacity: number;
  ownCapacity: number;
  firstVisible: number;
  scale: number;
  /** Per row, its prompt's key then value offset (floats) in promptKeys / promptValues; absent: 0 for every row. */
  rowOffsets?: Float64Array;
}

/**
 * Geometry of one Backend.attentionForward / attentionBackward call. q, out and their gradients are strided
 * by qStrides, k, v and theirs by kvStrides: element strides along (batch, head, position), the head dim D
 * contiguous, so [B, heads, T, D] and [B, T, heads, D] are both read in place. Query t sits at key position
 * offset + t; key s is visible to it when s < S, s ≤ offset + t (if causal), keyMask[b·S + s] ≠ 0 and
 * segmentIds[b·S + s] = segmentIds[b·S + offset + t] (segmentIds needs 0 ≤ offset and offset + T ≤ S).
 */
export interface TrainingAttentionDims {
  B: number;
  Hq: number;
  Hkv: number;
  T: number;
  S: number;
  D: number;
  offset: number;
  causal: boolean;
  scale: number;
  qStrides: readonly [number, number, number];
  kvStrides: readonly [number, number, number];
  keyMask: Uint8Array | null;
  segmentIds: Int32Array | null;
}

/** The scalars of one AdamW step, shared by every parameter of that step. */
export interface AdamWStep {
  beta1: number;
  beta2: number;
  epsilon: number;
  /** learningRate / (1 − beta1^t). */
  stepSize: number;
  /** √(1 − beta2^t). */
  biasCorrection2Sqrt: number;
  /** 1 − learningRate·weightDecay for decayed parameters, else 1. */
  decayFactor: number;
}
