/**
 * Fused ops over the vocabulary axis: log-softmax-gather (per-token logprobs of chosen ids without
 * materialising a second vocabulary-sized tensor), cross-entropy on top of it, and per-row entropy.
 * The backend's row kernels are used when it has them; the loops here are the spec.
 *
 * Legend: N = rows, V = vocabulary. Is not: attention or normalisation (fused.ts).
 */
import { record } from './autograd.js';
import { getBackend } from './backends/select.js';
import { mul } from './elementwise.js';
import { linearInto } from './matmul.js';
import { sum } from './primitives.js';
import { formatShape, sizeOf } from './shape.js';
import { Tensor, tensor } from './tensor.js';

/** Per-row state of log-softmax-gather kept for its gradient: the kernel's shift and log Σ, or the loop's normaliser. */
type RowNormalizers =
  { kind: 'kernel'; shift: Float32Array; logTotal: Float64Array } | { kind: 'loop'; logNormalizers: Float64Array };

/** log softmax(data)[id] per row into `output`; returns what the gradient needs (the spec loop or the row kernel). */
function gatherRows(data: Float32Array, rows: number, V: number, ids: ArrayLike<number>, output: Float32Array) {
  for (let r = 0; r < rows; r++) {
    const id = ids[r];
    if (!(id >= 0 && id < V)) throw new Error(`logSoftmaxGather: id ${id} at row ${r} is out of range [0, ${V})`);
  }
  const backend = getBackend();
  // With a row kernel: shift and log Σ exp(x − shift) per row, kept apart for the gradient's exp.
  if (backend.logSumExpRows) {
    const state = { kind: 'kernel' as const, shift: new Float32Array(rows), logTotal: new Float64Array(rows) };
    backend.logSumExpRows(data, rows, V, state.shift, state.logTotal, null);
    for (let r = 0; r < rows; r++) output[r] = data[r * V + ids[r]] - (state.logTotal[r] + state.shift[r]);
    return state;
  }
  const logNormalizers = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const base = r * V;
    let rowMax = -Infinity;
    for (let i = 0; i < V; i++)
      if (data[base + i] > rowMax || data[base + i] !== data[base + i]) rowMax = data[base + i];
    let total = 0;
    const shift = Number.isFinite(rowMax) ? rowMax : 0;
    for (let i = 0; i < V; i++) total += Math.exp(data[base + i] - shift);
    logNormalizers[r] = Math.log(total) + shift;
    output[r] = data[base + ids[r]] - logNormalizers[r];
  }
  return { kind: 'loop' as const, logNormalizers };
}

/** gradLogits = g·(onehot(id) − softmax) per row into `out` (all zero on entry). */
function gatherGradient(
  data: Float32Array,
  rows: number,
  V: number,
  ids: ArrayLike<number>,
  state: RowNormalizers,
  g: Float32Array,
  out: Float32Array,
): void {
  const backend = getBackend();
  if (backend.softmaxGradRows && state.kind === 'kernel') {
    backend.softmaxGradRows(data, rows, V, state.shift, state.logTotal, g, out);
    for (let r = 0; r < rows; r++) if (g[r] !== 0) out[r * V + ids[r]] += g[r];
    return;
  }
  const logNormalizers =
    state.kind === 'loop'
      ? state.logNormalizers
      : Float64Array.from(state.logTotal, (total, r) => total + state.shift[r]);
  for (let r = 0; r < rows; r++) {
    const base = r * V;
    const gr = g[r];
    if (gr === 0) continue;
    for (let i = 0; i < V; i++) out[base + i] = -gr * Math.exp(data[base + i] - logNormalizers[r]);
    out[base + ids[r]] += gr;
  }
}

/**
 * log softmax(logits)[id] per row, without materialising the log-softmax: logits [..., V] and one id
 * per row → [...]. Its gradient is g·(onehot(id) − softmax), built in backward only.
 */
export function logSoftmaxGather(logits: Tensor, ids: Int32Array | readonly number[]): Tensor {
  const V = logits.shape[logits.rank - 1];
  const rows = V === 0 ? 0 : logits.size / V;
  if (ids.length !== rows) {
    throw new Error(`logSoftmaxGather: ${ids.length} ids for logits ${formatShape(logits.shape)} (${rows} rows)`);
  }
  const output = new Float32Array(rows);
  const state = gatherRows(logits.data, rows, V, ids, output);
  return record(new Tensor(output, logits.shape.slice(0, -1)), 'logSoftmaxGather', [logits], (g) => {
    const gradLogits = new Float32Array(logits.size);
    gatherGradient(logits.data, rows, V, ids, state, g, gradLogits);
    return [gradLogits];
  });
}

/** Rows per chunk of projectedLogSoftmaxGather unless told: about 4M logits (16 MiB) at a time. */
const CHUNK_LOGITS = 1 << 22;

/**
 * The lm_head and log-softmax-gather in one op, never holding a [N, V] tensor: for x [N, H], a
 * weight [V, H] and one id per row → log softmax(scale·x·Wᵀ)[id] [N], with the entropy of each
 * row's softmax (a metric, no gradient). It runs a chunk of rows at a time (logits, then the same
 * row loops as logSoftmaxGather and entropyFromLogits), and the backward recomputes each chunk's
 * logits (one more lm_head product) instead of keeping them: gradients to x and W, with the same
 * per-element arithmetic as matmul → mul(·, scale) → logSoftmaxGather.
 */
export function projectedLogSoftmaxGather(
  x: Tensor,
  weight: Tensor,
  ids: Int32Array | readonly number[],
  options: { scale?: number; chunkRows?: number } = {},
): { logprobs: Tensor; entropies: Float32Array } {
  const [N, H] = x.shape;
  const [V] = weight.shape;
  if (x.rank !== 2 || weight.rank !== 2 || weight.shape[1] !== H || ids.length !== N) {
    throw new Error(
      `projectedLogSoftmaxGather: x ${formatShape(x.shape)}, weight ${formatShape(weight.shape)} and ${ids.length} ids do not fit [N,H] / [V,H] / N`,
    );
  }
  const chunk = Math.max(1, Math.min(N, options.chunkRows ?? Math.floor(CHUNK_LOGITS / Math.max(1, V))));
  const buffer = new Float32Array(chunk * V);
  const factor = Math.fround(options.scale ?? 1); // as mul(logits, scale): a float32 scalar operand
  const logprobs = new Float32Array(N);
  const entropies = new Float32Array(N);
  const states: RowNormalizers[] = [];
  const chunkLogits = (first: number, rows: number): Float32Array => {
    const logits = linearInto(
      x.data.subarray(first * H, (first + rows) * H),
      weight.data,
      buffer.subarray(0, rows * V),
      rows,
      H,
      V,
    );
    if (factor !== 1) for (let i = 0; i < logits.length; i++) logits[i] *= factor;
    return logits;
  };
  for (let first = 0; first < N; first += chunk) {
    const rows = Math.min(chunk, N - first);
    const logits = chunkLogits(first, rows);
    const chunkIds = ids.slice(first, first + rows);
    states.push(gatherRows(logits, rows, V, chunkIds, logprobs.subarray(first, first + rows)));
    entropies.set(entropyFromLogits(new Tensor(logits, [rows, V])), first);
  }
  const result = record(new Tensor(logprobs, [N]), 'projectedLogSoftmaxGather', [x, weight], (g) => {
    const gradX = x.requiresGrad ? new Float32Array(x.size) : null;
    const gradW = weight.requiresGrad ? new Float32Array(weight.size) : null;
    const backend = getBackend();
    const gradBuffer = new Float32Array(chunk * V);
    for (let first = 0, k = 0; first < N; first += chunk, k++) {
      const rows = Math.min(chunk, N - first);
      const logits = chunkLogits(first, rows);
      const gradLogits = gradBuffer.subarray(0, rows * V).fill(0);
      gatherGradient(
        logits,
        rows,
        V,
        ids.slice(first, first + rows),
        states[k],
        g.subarray(first, first + rows),
        gradLogits,
      );
      if (factor !== 1) for (let i = 0; i < gradLogits.length; i++) gradLogits[i] *= factor;
      const product = { batch: 1, aBatchStride: 0, bBatchStride: 0, transposeB: false };
      // dx [rows, H] = dLogits [rows, V] · W [V, H]; dW [V, H] += dLogitsᵀ · x [rows, H].
      if (gradX)
        backend.matmul(gradLogits, weight.data, gradX.subarray(first * H, (first + rows) * H), {
          ...product,
          M: rows,
          K: V,
          N: H,
          transposeA: false,
          accumulate: false,
        });
      if (gradW)
        backend.matmul(gradLogits, x.data.subarray(first * H, (first + rows) * H), gradW, {
          ...product,
          M: V,
          K: rows,
          N: H,
          transposeA: true,
          accumulate: k > 0,
        });
    }
    return [gradX, gradW];
  });
  return { logprobs: result, entropies };
}

export interface CrossEntropyOptions {
  /** Targets equal to this are left out of the mean (PyTorch's default, -100). */
  ignoreIndex?: number;
}

/** Mean negative log-likelihood of `targets` under logits [..., V], skipping ignored targets. */
export function crossEntropy(
  logits: Tensor,
  targets: Int32Array | readonly number[],
  options: CrossEntropyOptions = {},
): Tensor {
  const ignoreIndex = options.ignoreIndex ?? -100;
  const safe = Int32Array.from(targets, (id) => (id === ignoreIndex ? 0 : id));
  const weights = Float32Array.from(targets, (id) => (id === ignoreIndex ? 0 : 1));
  const count = weights.reduce((total, w) => total + w, 0);
  const logprobs = logSoftmaxGather(logits, safe);
  return mul(sum(mul(logprobs, tensor(weights, logprobs.shape))), -1 / count);
}

/** Per-row entropy of softmax(logits) [..., V] → Float32Array (a metric; no gradient). */
export function entropyFromLogits(logits: Tensor): Float32Array {
  const V = logits.shape[logits.rank - 1];
  const rows = V === 0 ? 0 : sizeOf(logits.shape) / V;
  const result = new Float32Array(rows);
  const data = logits.data;
  const backend = getBackend();
  if (backend.logSumExpRows) {
    backend.logSumExpRows(data, rows, V, new Float32Array(rows), new Float64Array(rows), result);
    return result;
  }
  for (let r = 0; r < rows; r++) {
    // Indexed loops (no iterators): this runs over the whole vocabulary of every completion token.
    const base = r * V;
    let rowMax = -Infinity;
    for (let i = 0; i < V; i++) if (data[base + i] > rowMax) rowMax = data[base + i];
    let total = 0;
    let weighted = 0;
    for (let i = 0; i < V; i++) {
      const shifted = data[base + i] - rowMax;
      const e = Math.exp(shifted);
      total += e;
      weighted += e * shifted;
    }
    result[r] = Math.log(total) - weighted / total;
  }
  return result;
}
