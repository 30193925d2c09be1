/**
 * Fused ops over the vocabulary axis: log-softmax-gather (per-token logprobs of chosen ids without
 * materialising a second vocabulary-sized tensor), cross-entropy on top of it, and per-row entropy.
 * The backend's row kernels are used when it has them; the loops here are the spec.
 *
 * Legend: N = rows, V = vocabulary. Is not: attention or normalisation (fused.ts).
 */
import { needsGrad } from './autograd.js';
import { getBackend } from './backends/select.js';
import { mul } from './elementwise.js';
import { sum } from './primitives.js';
import { formatShape, sizeOf } from './shape.js';
import { Tensor, tensor } from './tensor.js';

function record(
  result: Tensor,
  opName: string,
  inputs: Tensor[],
  backward: (g: Float32Array) => (Float32Array | null)[],
): Tensor {
  if (needsGrad(inputs)) {
    result.requiresGrad = true;
    result.node = { opName, inputs, backward };
  }
  return result;
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
  const logNormalizers = new Float64Array(rows);
  const output = new Float32Array(rows);
  const data = logits.data;
  for (let r = 0; r < rows; r++) {
    const id = ids[r];
    if (!(id >= 0 && id < V)) throw new Error(`logSoftmaxGather: id ${id} at row ${r} is out of range [0, ${V})`);
  }
  const forwardBackend = getBackend();
  // With a row kernel: shift and log Σ exp(x − shift) per row, kept apart for the gradient's exp.
  const kernelRows = forwardBackend.logSumExpRows
    ? { shift: new Float32Array(rows), logTotal: new Float64Array(rows) }
    : null;
  if (forwardBackend.logSumExpRows && kernelRows) {
    forwardBackend.logSumExpRows(data, rows, V, kernelRows.shift, kernelRows.logTotal, null);
    for (let r = 0; r < rows; r++) {
      logNormalizers[r] = kernelRows.logTotal[r] + kernelRows.shift[r];
      output[r] = data[r * V + ids[r]] - logNormalizers[r];
    }
  }
  for (let r = 0; r < rows && !kernelRows; r++) {
    const id = ids[r];
    const base = r * V;
    let rowMax = -Infinity;
    for (let i = 0; i < V; i++)
      if (data[base + i] > rowMax || data[base + i] !== data[base + i]) rowMax = data[base + i];
    let total = 0;
    const shift = Number.isFinite(rowMax) ? rowMax : 0;
    for (let i = 0; i < V; i++) total += Math.exp(data[base + i] - shift);
    logNormalizers[r] = Math.log(total) + shift;
    output[r] = data[base + id] - logNormalizers[r];
  }
  return record(new Tensor(output, logits.shape.slice(0, -1)), 'logSoftmaxGather', [logits], (g) => {
    const gradLogits = new Float32Array(logits.size);
    const backend = getBackend();
    if (backend.softmaxGradRows && kernelRows) {
      backend.softmaxGradRows(data, rows, V, kernelRows.shift, kernelRows.logTotal, g, gradLogits);
      for (let r = 0; r < rows; r++) if (g[r] !== 0) gradLogits[r * V + ids[r]] += g[r];
      return [gradLogits];
    }
    for (let r = 0; r < rows; r++) {
      const base = r * V;
      const gr = g[r];
      if (gr === 0) continue;
      for (let i = 0; i < V; i++) gradLogits[base + i] = -gr * Math.exp(data[base + i] - logNormalizers[r]);
      gradLogits[base + ids[r]] += gr;
    }
    return [gradLogits];
  });
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
