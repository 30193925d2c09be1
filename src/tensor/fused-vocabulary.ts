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
import { uninitializedFloats } from './uninitialized.js';

/** Per-row state of log-softmax-gather kept for its gradient: the kernel's shift and log Σ, or the loop's normaliser. */
type RowNormalizers =
  { kind: 'kernel'; shift: Float32Array; logTotal: Float64Array } | { kind: 'loop'; logNormalizers: Float64Array };

/**
 * log softmax(data)[id] per row into `output`; returns what the gradient needs (the spec loop or the row
 * kernel). With `entropies` and the row kernel, one kernel pass also gives each row's entropy (as
 * entropyFromLogits): that call shifts by the row max even when it is not finite, where log-softmax-gather
 * shifts by 0, so such a row (an overflowed or all −∞ row) is run again without the entropy, and the
 * state is bit for bit the one a call without entropies keeps.
 */
function gatherRows(
  data: Float32Array,
  rows: number,
  V: number,
  ids: ArrayLike<number>,
  output: Float32Array,
  entropies?: Float32Array,
) {
  for (let r = 0; r < rows; r++) {
    const id = ids[r];
    if (!(id >= 0 && id < V)) throw new Error(`logSoftmaxGather: id ${id} at row ${r} is out of range [0, ${V})`);
  }
  const backend = getBackend();
  // With a row kernel: shift and log Σ exp(x − shift) per row, kept apart for the gradient's exp.
  if (backend.logSumExpRows) {
    const state = { kind: 'kernel' as const, shift: new Float32Array(rows), logTotal: new Float64Array(rows) };
    backend.logSumExpRows(data, rows, V, state.shift, state.logTotal, entropies ?? null);
    if (entropies)
      for (let r = 0; r < rows; r++)
        if (!Number.isFinite(state.shift[r])) {
          const row = data.subarray(r * V, (r + 1) * V);
          backend.logSumExpRows(row, 1, V, state.shift.subarray(r, r + 1), state.logTotal.subarray(r, r + 1), null);
        }
    for (let r = 0; r < rows; r++) output[r] = data[r * V + ids[r]] - (state.logTotal[r] + state.shift[r]);
    return state;
  }
  if (entropies) entropies.set(entropyFromLogits(new Tensor(data.subarray(0, rows * V), [rows, V])));
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

/** The per-row states of consecutive chunks of rows as one state over all of them. */
function joinStates(states: readonly RowNormalizers[], rows: number): RowNormalizers {
  if (states.length === 1) return states[0];
  let offset = 0;
  if (states.every((state) => state.kind === 'kernel')) {
    const joined = { kind: 'kernel' as const, shift: new Float32Array(rows), logTotal: new Float64Array(rows) };
    for (const state of states) {
      joined.shift.set(state.shift, offset);
      joined.logTotal.set(state.logTotal, offset);
      offset += state.shift.length;
    }
    return joined;
  }
  const logNormalizers = new Float64Array(rows);
  for (const state of states) {
    const part =
      state.kind === 'loop'
        ? state.logNormalizers
        : Float64Array.from(state.logTotal, (total, r) => total + state.shift[r]);
    logNormalizers.set(part, offset);
    offset += part.length;
  }
  return { kind: 'loop', logNormalizers };
}

/**
 * gradLogits = g·(onehot(id) − softmax) per row into `out` (all zero on entry), for the vocabulary
 * columns [first, first + width) of every row: `data` and `out` hold only those columns, [rows, width].
 * Each element depends on its own logit and its row's normaliser alone, so a block of columns gives the
 * same floats as the whole row.
 */
function gatherGradient(
  data: Float32Array,
  rows: number,
  columns: { first: number; width: number },
  ids: ArrayLike<number>,
  state: RowNormalizers,
  g: Float32Array,
  out: Float32Array,
): void {
  const { first, width } = columns;
  const backend = getBackend();
  if (backend.softmaxGradRows && state.kind === 'kernel') {
    backend.softmaxGradRows(data, rows, width, state.shift, state.logTotal, g, out);
  } else {
    const logNormalizers =
      state.kind === 'loop'
        ? state.logNormalizers
        : Float64Array.from(state.logTotal, (total, r) => total + state.shift[r]);
    for (let r = 0; r < rows; r++) {
      const base = r * width;
      const gr = g[r];
      if (gr === 0) continue;
      for (let i = 0; i < width; i++) out[base + i] = -gr * Math.exp(data[base + i] - logNormalizers[r]);
    }
  }
  for (let r = 0; r < rows; r++) {
    const column = ids[r] - first;
    if (g[r] !== 0 && column >= 0 && column < width) out[r * width + column] += g[r];
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
    gatherGradient(logits.data, rows, { first: 0, width: V }, ids, state, g, gradLogits);
    return [gradLogits];
  });
}

/** Logits per block of projectedLogSoftmaxGather's backward unless told: about 4M (16 MiB) at a time. */
const CHUNK_LOGITS = 1 << 22;

/**
 * The lm_head and log-softmax-gather in one op, never holding a [N, V] tensor: for x [N, H], a
 * weight [V, H] and one id per row → log softmax(scale·x·Wᵀ)[id] [N], with the entropy of each
 * row's softmax (a metric, no gradient). The forward runs a chunk of rows at a time (logits, then the
 * same row loops as logSoftmaxGather and entropyFromLogits, one row-kernel pass for both) and keeps
 * each row's normaliser. The backward recomputes the logits (one more lm_head product) instead of
 * keeping them, a block of vocabulary columns of every row at a time: a block's softmax gradient
 * needs only the kept normalisers, its rows of dW = dLogitsᵀ·x are written once by one product over
 * all N rows, and dx = dLogits·W is summed block by block into one [N, H] array. (Chunks of rows made
 * each chunk's dW product add a few rows into the whole [V, H] gradient and pack all of W again, three
 * times per chunk.) Same per-element arithmetic as matmul → mul(·, scale) → logSoftmaxGather; the
 * gradients' sums are grouped by block, so they match it within float rounding.
 */
export function projectedLogSoftmaxGather(
  x: Tensor,
  weight: Tensor,
  ids: Int32Array | readonly number[],
  options: { scale?: number; chunkRows?: number; chunkColumns?: number } = {},
): { logprobs: Tensor; entropies: Float32Array } {
  const [N, H] = x.shape;
  const [V] = weight.shape;
  if (x.rank !== 2 || weight.rank !== 2 || weight.shape[1] !== H || ids.length !== N) {
    throw new Error(
      `projectedLogSoftmaxGather: x ${formatShape(x.shape)}, weight ${formatShape(weight.shape)} and ${ids.length} ids do not fit [N,H] / [V,H] / N`,
    );
  }
  const factor = Math.fround(options.scale ?? 1); // as mul(logits, scale): a float32 scalar operand
  const { logprobs, entropies, state } = projectedRows(x.data, weight.data, ids, [N, H, V], factor, options.chunkRows);
  const columns = Math.max(1, Math.min(V, options.chunkColumns ?? Math.floor(CHUNK_LOGITS / Math.max(1, N))));
  const result = record(new Tensor(logprobs, [N]), 'projectedLogSoftmaxGather', [x, weight], (g) => {
    // Written in full: gradX by the first block's product, each block of gradW's rows by its own.
    const gradX = x.requiresGrad ? uninitializedFloats(x.size) : null;
    const gradW = weight.requiresGrad ? uninitializedFloats(weight.size) : null;
    const backend = getBackend();
    const logitsBuffer = uninitializedFloats(N * columns); // written in full by each block's product
    const gradBuffer = new Float32Array(N * columns);
    for (let first = 0; first < V; first += columns) {
      const width = Math.min(columns, V - first);
      const weightBlock = weight.data.subarray(first * H, (first + width) * H); // [width, H]
      const logits = linearInto(x.data, weightBlock, logitsBuffer.subarray(0, N * width), N, H, width);
      if (factor !== 1) for (let i = 0; i < logits.length; i++) logits[i] *= factor;
      const gradLogits = gradBuffer.subarray(0, N * width).fill(0);
      gatherGradient(logits, N, { first, width }, ids, state, g, gradLogits);
      if (factor !== 1) for (let i = 0; i < gradLogits.length; i++) gradLogits[i] *= factor;
      const product = { batch: 1, aBatchStride: 0, bBatchStride: 0, transposeB: false };
      // dx [N, H] += dLogits [N, width] · W [width, H]; dW [width, H] = dLogitsᵀ · x [N, H].
      if (gradX)
        backend.matmul(gradLogits, weightBlock, gradX, {
          ...product,
          M: N,
          K: width,
          N: H,
          transposeA: false,
          accumulate: first > 0,
        });
      if (gradW)
        backend.matmul(gradLogits, x.data, gradW.subarray(first * H, (first + width) * H), {
          ...product,
          M: width,
          K: N,
          N: H,
          transposeA: true,
          accumulate: false,
        });
    }
    return [gradX, gradW];
  });
  return { logprobs: result, entropies };
}

/**
 * The forward of projectedLogSoftmaxGather in chunks of rows: logprobs, entropies and every row's
 * normaliser. Its own function so that the chunk buffer is not in the backward closure's scope (a
 * closure keeps its whole scope alive, and the buffer is not needed after the forward).
 */
function projectedRows(
  x: Float32Array,
  weight: Float32Array,
  ids: Int32Array | readonly number[],
  [N, H, V]: [number, number, number],
  factor: number,
  chunkRows: number | undefined,
): { logprobs: Float32Array; entropies: Float32Array; state: RowNormalizers } {
  // Twice the backward's block: its two buffers are live at the same point of the step (all activations
  // kept), so the forward's one is no larger; fewer chunks pack all of W fewer times (each chunk's product
  // packs the whole weight). Equal chunks: no short last one packing W for a few rows.
  const most = Math.max(1, Math.floor((2 * CHUNK_LOGITS) / Math.max(1, V)));
  const chunk = Math.max(1, Math.min(N, chunkRows ?? Math.ceil(N / Math.ceil(N / most))));
  const buffer = uninitializedFloats(chunk * V); // written in full by each chunk's product
  const logprobs = new Float32Array(N);
  const entropies = new Float32Array(N);
  const states: RowNormalizers[] = [];
  for (let first = 0; first < N; first += chunk) {
    const rows = Math.min(chunk, N - first);
    const logits = linearInto(
      x.subarray(first * H, (first + rows) * H),
      weight,
      buffer.subarray(0, rows * V),
      rows,
      H,
      V,
    );
    if (factor !== 1) for (let i = 0; i < logits.length; i++) logits[i] *= factor;
    const chunkIds = ids.slice(first, first + rows);
    const chunkEntropies = entropies.subarray(first, first + rows);
    states.push(gatherRows(logits, rows, V, chunkIds, logprobs.subarray(first, first + rows), chunkEntropies));
  }
  return { logprobs, entropies, state: joinStates(states, N) };
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
