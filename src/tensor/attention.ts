/**
 * Causal attention with grouped-query heads, masks and the KV-cache offset, in two layouts: heads first
 * (`causalAttention`, q [B, Hq, T, D], the KV cache's layout) and tokens first (`causalAttentionTokensFirst`,
 * q [B, T, Hq, D] as the projections produce it, so a training forward needs no permute copies).
 *
 * Is: two paths with one result. When the backend has attentionForward/attentionBackward (native) and no
 * sliding window or additive mask is asked for, one kernel call each way: the flash-attention scheme, which
 * keeps a log-sum-exp per query row instead of the [B, Hq, T, S] probabilities and recomputes them in the
 * backward. Otherwise the spec: batched matmuls around attention-rows.ts's softmax loops, keeping the
 * probabilities (tokens first permutes into and out of it). They agree within float rounding
 * (attention.test.ts), not bit for bit: the kernel uses a float exp and float sums.
 * Is not: decode attention over a shared prompt (prefix-attention.ts) or RoPE (fused.ts).
 *
 * Legend: B = batch, T = query length, S = key length, Hq/Hkv = query/key-value heads, D = head dim.
 */
import { type AttentionRows, softmaxBackwardRows, softmaxScoreRows } from './attention-rows.js';
import { isGradEnabled, record } from './autograd.js';
import type { Backend, TrainingAttentionDims } from './backend.js';
import { getBackend } from './backends/select.js';
import { permute } from './primitives.js';
import { formatShape } from './shape.js';
import { Tensor } from './tensor.js';

export interface AttentionOptions {
  /** Absolute position of the first query (the KV-cache length before these queries). Default S − T. */
  positionOffset?: number;
  /** Causal masking: key s is visible to query t when s <= positionOffset + t. Default true. */
  causal?: boolean;
  /** Sliding window (Mistral/Qwen): query at position p sees keys s with p − s < window. */
  window?: number;
  /** Per-key validity [B, S] (1 = attend, 0 = padding). */
  keyMask?: Uint8Array;
  /** Additive mask broadcastable to [B, Hq, T, S] (no gradient), e.g. -Infinity to hide keys. */
  additiveMask?: Tensor;
  /**
   * Document ids [B, S] of packed sequences: a query sees only keys of its own document (query t
   * sits at key position positionOffset + t). Packing several examples into one row needs this.
   */
  segmentIds?: Int32Array;
  /**
   * Keys in use along axis 2 of k and v (S; default: all of it). A preallocated KV cache passes its
   * length here: the rest of the axis is room for later tokens, skipped by stride, never read.
   */
  keyLength?: number;
  /**
   * An attention recomputed in backward (recompute.ts's rerun of the block around it): on the kernel
   * path the run without a graph leaves its output and log-sum-exp here, and the rerun that records the
   * graph takes them instead of running the forward kernel again. The rerun sees the same inputs (the
   * recompute contract), so the values are the same; its backward kernel reads only the log-sum-exp.
   */
  replay?: AttentionReplay;
}

/** What the first run of a recomputed attention leaves for its rerun; see AttentionOptions.replay. */
export interface AttentionReplay {
  output: Float32Array | null;
  logSumExp: Float32Array | null;
}

/**
 * softmax(q·kᵀ/√D + mask)·v with grouped-query attention: q [B, Hq, T, D], k and v [B, Hkv, S, D],
 * Hq a multiple of Hkv. Query heads h·rep..h·rep+rep−1 share key-value head h, so each group is one
 * matmul of rep·T rows. A query that can see no key outputs zeros (not NaN) and gets zero gradient.
 * k and v may have room past keyLength (a preallocated KV cache).
 */
export function causalAttention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  const [B, Hq, T, D] = q.shape;
  const [, Hkv, capacity] = k.shape;
  if (
    q.rank !== 4 ||
    k.rank !== 4 ||
    !k.shape.every((dim, i) => dim === v.shape[i]) ||
    k.shape[0] !== B ||
    k.shape[3] !== D ||
    Hq % Hkv !== 0
  ) {
    throw new Error(
      `causalAttention: q ${formatShape(q.shape)}, k ${formatShape(k.shape)}, v ${formatShape(v.shape)} do not fit [B,Hq,T,D] / [B,Hkv,S,D]`,
    );
  }
  const S = options.keyLength ?? capacity;
  if (!(Number.isInteger(S) && S >= 0 && S <= capacity)) {
    throw new Error(`causalAttention: keyLength ${S} is outside the ${capacity} keys of k ${formatShape(k.shape)}`);
  }
  const kvStride = capacity * D; // elements between consecutive (b, h) blocks of k and v
  const rep = Hq / Hkv;
  const offset = options.positionOffset ?? S - T;
  const causal = options.causal ?? true;
  const scale = 1 / Math.sqrt(D);
  const kernel = attentionKernel(options, offset, T, S);
  if (kernel) {
    const qStrides = [Hq * T * D, T * D, D] as const;
    const kvStrides = [Hkv * capacity * D, capacity * D, D] as const;
    const dims = { B, Hq, Hkv, T, S, D, offset, causal, scale, qStrides, kvStrides, ...masksOf(options) };
    return attentionOnKernel(kernel, q, k, v, dims, options.replay);
  }
  const groups = B * Hkv;
  const rows = rep * T;
  const backend = getBackend();
  const probabilities = new Float32Array(groups * rows * S); // [B, Hq, T, S]
  groupProducts(backend, q.data, k.data, probabilities, [groups, rows, D, S], [rows * D, kvStride], [false, true]);
  const additive = options.additiveMask;
  const attentionRows: AttentionRows = {
    B,
    Hq,
    T,
    S,
    offset,
    causal,
    scale,
    window: options.window,
    keyMask: options.keyMask,
    segmentIds: options.segmentIds,
    additiveMask: additive,
    maskStrides: additive ? maskStridesFor(additive, B, Hq, T, S) : null,
  };
  softmaxScoreRows(probabilities, attentionRows);
  const output = new Float32Array(B * Hq * T * D);
  groupProducts(backend, probabilities, v.data, output, [groups, rows, S, D], [rows * S, kvStride], [false, false]);
  return record(new Tensor(output, [B, Hq, T, D]), 'causalAttention', [q, k, v], (g) => {
    // dP = dO·vᵀ; dV = Pᵀ·dO; dScores = P ⊙ (dP − rowsum(dP ⊙ P)) · scale; dQ = dScores·k; dK = dScoresᵀ·q.
    const gradProbabilities = new Float32Array(probabilities.length);
    groupProducts(backend, g, v.data, gradProbabilities, [groups, rows, D, S], [rows * D, kvStride], [false, true]);
    const gradV = new Float32Array(groups * S * D);
    groupProducts(backend, probabilities, g, gradV, [groups, S, rows, D], [rows * S, rows * D], [true, false]);
    softmaxBackwardRows(gradProbabilities, probabilities, attentionRows);
    const gradQ = new Float32Array(q.size);
    groupProducts(
      backend,
      gradProbabilities,
      k.data,
      gradQ,
      [groups, rows, S, D],
      [rows * S, kvStride],
      [false, false],
    );
    const gradK = new Float32Array(groups * S * D);
    groupProducts(backend, gradProbabilities, q.data, gradK, [groups, S, rows, D], [rows * S, rows * D], [true, false]);
    return [gradQ, spreadToCapacity(gradK, groups, S, capacity, D), spreadToCapacity(gradV, groups, S, capacity, D)];
  });
}

/**
 * out[g] = op(a[g])·op(b[g]) for the groups (b, key-value head) of the matmul path, a and b advancing by
 * their strides (a key-value block's stride is its cache capacity, not S).
 */
function groupProducts(
  backend: Backend,
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  [batch, M, K, N]: [number, number, number, number],
  [aBatchStride, bBatchStride]: [number, number],
  [transposeA, transposeB]: [boolean, boolean],
): void {
  backend.matmul(a, b, out, { batch, M, K, N, transposeA, transposeB, aBatchStride, bBatchStride, accumulate: false });
}

/** Packed [groups, S, D] gradients laid out as [groups, capacity, D] (zeros in the unused room). */
function spreadToCapacity(packed: Float32Array, groups: number, S: number, capacity: number, D: number): Float32Array {
  if (S === capacity) return packed;
  const spread = new Float32Array(groups * capacity * D);
  for (let group = 0; group < groups; group++)
    spread.set(packed.subarray(group * S * D, (group + 1) * S * D), group * capacity * D);
  return spread;
}

function maskStridesFor(mask: Tensor, B: number, H: number, T: number, S: number): [number, number, number] {
  const [mb, mh, mt, ms] = mask.rank === 4 ? mask.shape : [];
  const fits = (dim: number, full: number) => dim === full || dim === 1;
  if (mask.rank !== 4 || !fits(mb, B) || !fits(mh, H) || mt !== T || ms !== S) {
    throw new Error(
      `causalAttention: additive mask ${formatShape(mask.shape)} does not broadcast to [${B}, ${H}, ${T}, ${S}]`,
    );
  }
  return [mb === 1 ? 0 : mh * T * S, mh === 1 ? 0 : T * S, S];
}

/**
 * causalAttention on the projections' layout: q [B, T, Hq, D], k and v [B, S, Hkv, D] (no room past S) →
 * [B, T, Hq, D]. The same options and result as permuting into causalAttention and back, without the copies
 * when the backend has the attention kernel.
 */
export function causalAttentionTokensFirst(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
  const [B, T, Hq, D] = q.shape;
  const [, S, Hkv] = k.shape;
  const fits = q.rank === 4 && k.rank === 4 && k.shape.every((dim, i) => dim === v.shape[i]);
  if (!fits || k.shape[0] !== B || k.shape[3] !== D || Hq % Hkv !== 0 || options.keyLength !== undefined) {
    throw new Error(
      `causalAttentionTokensFirst: q ${formatShape(q.shape)}, k ${formatShape(k.shape)}, v ${formatShape(v.shape)} do not fit [B,T,Hq,D] / [B,S,Hkv,D] (no keyLength)`,
    );
  }
  const offset = options.positionOffset ?? S - T;
  const kernel = attentionKernel(options, offset, T, S);
  if (!kernel) {
    const heads = (x: Tensor) => permute(x, [0, 2, 1, 3]);
    return heads(causalAttention(heads(q), heads(k), heads(v), options));
  }
  const qStrides = [T * Hq * D, D, Hq * D] as const;
  const kvStrides = [S * Hkv * D, D, Hkv * D] as const;
  const causal = options.causal ?? true;
  const dims = {
    B,
    Hq,
    Hkv,
    T,
    S,
    D,
    offset,
    causal,
    scale: 1 / Math.sqrt(D),
    qStrides,
    kvStrides,
    ...masksOf(options),
  };
  return attentionOnKernel(kernel, q, k, v, dims, options.replay);
}

type AttentionKernel = Required<Pick<Backend, 'attentionForward' | 'attentionBackward'>>;

/** The backend when it has the attention kernel and the call needs nothing the kernel lacks, else null. */
function attentionKernel(options: AttentionOptions, offset: number, T: number, S: number): AttentionKernel | null {
  const backend = getBackend();
  if (!hasAttentionKernel(backend)) return null;
  if (options.window !== undefined || options.additiveMask) return null;
  // The kernel reads a query's document id at key position offset + t, so that position must exist.
  if (options.segmentIds && (offset < 0 || offset + T > S)) return null;
  return backend;
}

function hasAttentionKernel(backend: Backend): backend is Backend & AttentionKernel {
  return backend.attentionForward !== undefined && backend.attentionBackward !== undefined;
}

function masksOf(options: AttentionOptions): Pick<TrainingAttentionDims, 'keyMask' | 'segmentIds'> {
  return { keyMask: options.keyMask ?? null, segmentIds: options.segmentIds ?? null };
}

/**
 * One forward kernel call, or none for the recording rerun of a replayed attention (the first run's
 * output and log-sum-exp, handed over once); the backward recomputes the probabilities from the kept
 * log-sum-exp rows.
 */
function attentionOnKernel(
  backend: AttentionKernel,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  dims: TrainingAttentionDims,
  replay: AttentionReplay | undefined,
): Tensor {
  let { output, logSumExp } = replay && isGradEnabled() ? replay : { output: null, logSumExp: null };
  if (replay) [replay.output, replay.logSumExp] = [null, null]; // the rerun's graph holds them from here
  if (!output || !logSumExp || output.length !== q.size) {
    output = new Float32Array(q.size); // q's shape and layout
    logSumExp = new Float32Array(dims.B * dims.Hq * dims.T); // [B, Hq, T]
    backend.attentionForward(q.data, k.data, v.data, output, logSumExp, dims);
    if (replay && !isGradEnabled()) [replay.output, replay.logSumExp] = [output, logSumExp];
  }
  const kept = logSumExp;
  return record(new Tensor(output, q.shape), 'causalAttention', [q, k, v], (g) => {
    const gradQ = new Float32Array(q.size);
    const gradK = new Float32Array(k.size); // zeros stay in a cache's room past S
    const gradV = new Float32Array(v.size);
    backend.attentionBackward(q.data, k.data, v.data, g, kept, gradQ, gradK, gradV, dims);
    return [gradQ, gradK, gradV];
  });
}
