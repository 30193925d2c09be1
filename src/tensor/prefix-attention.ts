/**
 * Decode-step attention for sequences that share a prompt (a GRPO group): each query sees its
 * prompt's keys, stored once per prompt, then its own generated keys. The G rows of a group multiply
 * the prompt keys in one product of G·rep rows, so the prompt part of the KV cache is read once per
 * group instead of once per row, and it is never copied G times.
 *
 * Legend: B = rows (sequences), Hq/Hkv = query/key-value heads, rep = Hq / Hkv, D = head dim,
 * L = a prompt's length (its keys), S = generated keys per row (the same for every row).
 * Is not: differentiable (generation runs without a graph; it refuses inputs that need gradients),
 * or a general attention: one query per row (T = 1), all keys in the past. The softmax runs over the
 * concatenated scores [prompt keys, generated keys], so the result is causalAttention's over the
 * concatenated cache up to float rounding of the split P·V sum. A backend with prefixAttentionRows
 * (native) runs the whole of it in one fused kernel, one call for all the groups of one prefill; the loops
 * here are its spec.
 */
import { isGradEnabled } from './autograd.js';
import { getBackend } from './backends/select.js';
import { formatShape } from './shape.js';
import { Tensor } from './tensor.js';

/** The prompts' caches of one layer and which prompt each row continues. */
export interface SharedPrefix {
  /** Per prompt: keys and values [1, Hkv, capacity, D], of which the first `lengths[p]` are used. */
  keys: Tensor[];
  values: Tensor[];
  lengths: number[];
  /** [B] index of each row's prompt; rows of one prompt are contiguous. */
  rowPrefix: Int32Array;
  /** Sliding window (Mistral/Qwen): a query at position p sees keys s with p − s < window. */
  window?: number;
  /**
   * [B] generated keys each row sees (its first ownLengths[b] of `keys`), when rows are at different
   * steps (continuous batching: a refilled slot starts again at 0); `S` is then their maximum. Each
   * run of consecutive rows with the same prompt and length is computed as one call with that length.
   */
  ownLengths?: Int32Array;
  /** Where to write the result (B·Hq·D floats, e.g. an array every decode step reuses); a new array when absent. */
  output?: Float32Array;
}

/**
 * softmax(q·[kPrompt; k]ᵀ/√D)·[vPrompt; v] for q [B, Hq, 1, D] and the rows' own keys and values
 * [B, Hkv, capacity, D] (first `S` used) → [B, Hq, 1, D].
 */
export function prefixAttention(q: Tensor, keys: Tensor, values: Tensor, S: number, prefix: SharedPrefix): Tensor {
  const [B, Hq, T, D] = q.shape;
  const [, Hkv, capacity] = keys.shape;
  if (
    q.rank !== 4 ||
    T !== 1 ||
    keys.rank !== 4 ||
    keys.shape[0] !== B ||
    keys.shape[3] !== D ||
    Hq % Hkv !== 0 ||
    !keys.shape.every((dim, i) => dim === values.shape[i]) ||
    !(S >= 0 && S <= capacity) ||
    prefix.rowPrefix.length !== B
  ) {
    throw new Error(
      `prefixAttention: q ${formatShape(q.shape)}, keys ${formatShape(keys.shape)} (${S} used), ${prefix.rowPrefix.length} row prompts do not fit [B,Hq,1,D] / [B,Hkv,S,D]`,
    );
  }
  if (isGradEnabled() && (q.requiresGrad || keys.requiresGrad || values.requiresGrad)) {
    throw new Error('prefixAttention: has no gradient; call it under noGrad (generation only)');
  }
  if (prefix.ownLengths) return byOwnLength(q, keys, values, S, prefix, prefix.ownLengths);
  const rep = Hq / Hkv;
  const backend = getBackend();
  if (backend.prefixAttentionRows) return prefixAttentionKernel(q, keys, values, S, prefix);
  const ownScores = new Float32Array(B * Hq * S); // [B, Hkv, rep, S]
  if (S > 0) {
    backend.matmul(q.data, keys.data, ownScores, {
      batch: B * Hkv,
      M: rep,
      K: D,
      N: S,
      transposeA: false,
      transposeB: true,
      aBatchStride: rep * D,
      bBatchStride: capacity * D,
      accumulate: false,
    });
  }
  const output = outputOf(prefix, B * Hq * D); // [B, Hq, 1, D]
  forEachGroup(prefix.rowPrefix, (p, start, end) =>
    groupAttention(q.data, ownScores, output, prefix, p, start, end - start, { Hkv, rep, D, S }),
  );
  if (S > 0) {
    const ownOutput = new Float32Array(B * Hq * D);
    backend.matmul(ownScores, values.data, ownOutput, {
      batch: B * Hkv,
      M: rep,
      K: S,
      N: D,
      transposeA: false,
      transposeB: false,
      aBatchStride: rep * S,
      bBatchStride: capacity * D,
      accumulate: false,
    });
    for (let i = 0; i < output.length; i++) output[i] += ownOutput[i];
  }
  return new Tensor(output, [B, Hq, 1, D]);
}

/** Rows at different steps: each run of rows with one prompt and one own length as its own call, on views. */
function byOwnLength(
  q: Tensor,
  keys: Tensor,
  values: Tensor,
  S: number,
  prefix: SharedPrefix,
  ownLengths: Int32Array,
): Tensor {
  const [B, Hq, , D] = q.shape;
  const [, Hkv, capacity] = keys.shape;
  if (ownLengths.length !== B || ownLengths.some((length) => !(length >= 0 && length <= S)))
    throw new Error(`prefixAttention: ownLengths [${ownLengths.join(', ')}] do not fit ${B} rows of at most ${S} keys`);
  const output = outputOf(prefix, B * Hq * D);
  const queryRow = Hq * D;
  const cacheRow = Hkv * capacity * D;
  for (let start = 0; start < B;) {
    let end = start + 1;
    while (end < B && ownLengths[end] === ownLengths[start] && prefix.rowPrefix[end] === prefix.rowPrefix[start]) end++;
    const rows = end - start;
    const view = (tensor: Tensor) =>
      new Tensor(tensor.data.subarray(start * cacheRow, end * cacheRow), [rows, Hkv, capacity, D]);
    prefixAttention(
      new Tensor(q.data.subarray(start * queryRow, end * queryRow), [rows, Hq, 1, D]),
      view(keys),
      view(values),
      ownLengths[start],
      {
        ...prefix,
        rowPrefix: prefix.rowPrefix.subarray(start, end),
        ownLengths: undefined,
        output: output.subarray(start * queryRow, end * queryRow), // the run's rows, written in place
      },
    );
    start = end;
  }
  return new Tensor(output, [B, Hq, 1, D]);
}

/**
 * The same through the backend's fused kernel: one call per run of rows whose prompts were stored by one
 * prefill (one array, one length), with each row's offset into it, so a decode step of P prompts makes one
 * call per layer instead of P; prompts stored apart take a call per group.
 */
function prefixAttentionKernel(q: Tensor, keys: Tensor, values: Tensor, S: number, prefix: SharedPrefix): Tensor {
  const [B, Hq, , D] = q.shape;
  const [, Hkv, ownCapacity] = keys.shape;
  const output = outputOf(prefix, B * Hq * D);
  const queryRow = Hq * D;
  const cacheRow = Hkv * ownCapacity * D;
  forEachStoredRun(prefix, Hkv, D, (run, start, end) => {
    getBackend().prefixAttentionRows!(
      q.data.subarray(start * queryRow, end * queryRow),
      run.keys,
      run.values,
      keys.data.subarray(start * cacheRow, end * cacheRow),
      values.data.subarray(start * cacheRow, end * cacheRow),
      output.subarray(start * queryRow, end * queryRow),
      {
        rows: end - start,
        Hq,
        Hkv,
        D,
        L: run.L,
        S,
        promptCapacity: run.capacity,
        ownCapacity,
        firstVisible: prefix.window === undefined ? 0 : run.L + S - prefix.window,
        scale: 1 / Math.sqrt(D),
        rowOffsets: run.rowOffsets,
      },
    );
  });
  return new Tensor(output, [B, Hq, 1, D]);
}

/** Prompt keys and values of a run of rows: one prompt's arrays, or one stored span with per-row offsets. */
interface StoredRun {
  keys: Float32Array;
  values: Float32Array;
  L: number;
  capacity: number;
  rowOffsets?: Float64Array;
}

/**
 * Calls fn(run, start, end) for each run of consecutive prompt groups whose keys (and values) lie in one
 * buffer with one length and capacity, as a prefill of equal-length prompts stores them.
 */
function forEachStoredRun(
  prefix: SharedPrefix,
  Hkv: number,
  D: number,
  fn: (run: StoredRun, start: number, end: number) => void,
): void {
  const groups: { p: number; start: number; end: number; L: number; capacity: number }[] = [];
  forEachGroup(prefix.rowPrefix, (p, start, end) => {
    const { L, promptCapacity } = promptOf(prefix, p, Hkv, D);
    groups.push({ p, start, end, L, capacity: promptCapacity });
  });
  const sameStore = (a: (typeof groups)[number], b: (typeof groups)[number]) =>
    a.L === b.L &&
    a.capacity === b.capacity &&
    prefix.keys[a.p].data.buffer === prefix.keys[b.p].data.buffer &&
    prefix.values[a.p].data.buffer === prefix.values[b.p].data.buffer;
  for (let first = 0; first < groups.length;) {
    let last = first + 1;
    while (last < groups.length && sameStore(groups[first], groups[last])) last++;
    const run = groups.slice(first, last);
    const { L, capacity } = run[0];
    const [start, end] = [run[0].start, run[run.length - 1].end];
    if (run.length === 1)
      fn({ keys: prefix.keys[run[0].p].data, values: prefix.values[run[0].p].data, L, capacity }, start, end);
    else {
      const keys = span(run.map(({ p }) => prefix.keys[p].data));
      const values = span(run.map(({ p }) => prefix.values[p].data));
      const rowOffsets = new Float64Array(2 * (end - start));
      run.forEach(({ start: from, end: to }, i) => {
        for (let row = from; row < to; row++) {
          rowOffsets[2 * (row - start)] = keys.offsets[i];
          rowOffsets[2 * (row - start) + 1] = values.offsets[i];
        }
      });
      fn({ keys: keys.array, values: values.array, L, capacity, rowOffsets }, start, end);
    }
    first = last;
  }
}

/** One view over arrays of one buffer, from the first to the end of the last, and each one's offset in it. */
function span(arrays: Float32Array[]): { array: Float32Array; offsets: number[] } {
  const from = Math.min(...arrays.map((array) => array.byteOffset));
  const to = Math.max(...arrays.map((array) => array.byteOffset + array.byteLength));
  return {
    array: new Float32Array(arrays[0].buffer, from, (to - from) / 4),
    offsets: arrays.map((array) => (array.byteOffset - from) / 4),
  };
}

/** The first `size` floats of prefix.output (every one is overwritten), or a new array. */
function outputOf(prefix: SharedPrefix, size: number): Float32Array {
  if (!prefix.output) return new Float32Array(size);
  if (prefix.output.length < size)
    throw new Error(`prefixAttention: output has ${prefix.output.length} floats, the result needs ${size}`);
  return prefix.output.subarray(0, size);
}

/** Calls fn(prompt, start, end) for each run of rows [start, end) that continue the same prompt. */
function forEachGroup(rowPrefix: Int32Array, fn: (prompt: number, start: number, end: number) => void): void {
  for (let start = 0; start < rowPrefix.length;) {
    let end = start + 1;
    while (end < rowPrefix.length && rowPrefix[end] === rowPrefix[start]) end++;
    fn(rowPrefix[start], start, end);
    start = end;
  }
}

/** Prompt p's keys and used length, checked against the rows' heads and head dim. */
function promptOf(
  prefix: SharedPrefix,
  p: number,
  Hkv: number,
  D: number,
): { L: number; promptKeys: Tensor; promptCapacity: number } {
  const L = prefix.lengths[p];
  const promptKeys = prefix.keys[p];
  const promptCapacity = promptKeys.shape[2];
  if (promptKeys.shape[1] !== Hkv || promptKeys.shape[3] !== D || L > promptCapacity) {
    throw new Error(
      `prefixAttention: prompt ${p} keys ${formatShape(promptKeys.shape)} (${L} used) do not fit ${Hkv} heads of ${D}`,
    );
  }
  return { L, promptKeys, promptCapacity };
}

interface Sizes {
  Hkv: number;
  rep: number;
  D: number;
  S: number;
}

/**
 * Rows start..start+count−1 (one prompt p): their prompt scores in one product per key-value head,
 * the softmax over [prompt scores, own scores] (own scores normalised in place), and the prompt
 * part of the output written into `output`.
 */
function groupAttention(
  q: Float32Array,
  ownScores: Float32Array,
  output: Float32Array,
  prefix: SharedPrefix,
  p: number,
  start: number,
  count: number,
  sizes: Sizes,
): void {
  const { Hkv, rep, D, S } = sizes;
  const { L, promptKeys, promptCapacity } = promptOf(prefix, p, Hkv, D);
  const rows = count * rep; // query rows per key-value head
  // Queries of the group regrouped by key-value head: [Hkv, count, rep, D].
  const grouped = new Float32Array(Hkv * rows * D);
  for (let i = 0; i < count; i++) {
    for (let g = 0; g < Hkv; g++) {
      const from = ((start + i) * Hkv + g) * rep * D;
      grouped.set(q.subarray(from, from + rep * D), (g * count + i) * rep * D);
    }
  }
  const backend = getBackend();
  const scores = new Float32Array(Hkv * rows * L); // [Hkv, count, rep, L]
  backend.matmul(grouped, promptKeys.data, scores, {
    batch: Hkv,
    M: rows,
    K: D,
    N: L,
    transposeA: false,
    transposeB: true,
    aBatchStride: rows * D,
    bBatchStride: promptCapacity * D,
    accumulate: false,
  });
  // The query sits at absolute position L + S − 1; a window hides keys before firstVisible.
  const firstVisible = prefix.window === undefined ? 0 : L + S - prefix.window;
  const scale = 1 / Math.sqrt(D);
  for (let g = 0; g < Hkv; g++) {
    for (let i = 0; i < count; i++) {
      for (let r = 0; r < rep; r++) {
        const promptBase = ((g * count + i) * rep + r) * L;
        const ownBase = (((start + i) * Hkv + g) * rep + r) * S;
        softmaxTwoParts(scores, promptBase, L, ownScores, ownBase, S, scale, firstVisible, L);
      }
    }
  }
  const promptOutput = new Float32Array(Hkv * rows * D);
  const promptValues = prefix.values[p];
  backend.matmul(scores, promptValues.data, promptOutput, {
    batch: Hkv,
    M: rows,
    K: L,
    N: D,
    transposeA: false,
    transposeB: false,
    aBatchStride: rows * L,
    bBatchStride: promptCapacity * D,
    accumulate: false,
  });
  for (let i = 0; i < count; i++) {
    for (let g = 0; g < Hkv; g++) {
      output.set(
        promptOutput.subarray((g * count + i) * rep * D, (g * count + i + 1) * rep * D),
        ((start + i) * Hkv + g) * rep * D,
      );
    }
  }
}

/**
 * In-place softmax of scale·[a[aBase..aBase+aLength), b[bBase..bBase+bLength)] as one row; keys at
 * absolute positions below firstVisible (a's are 0.., b's are bOffset..) get probability 0.
 */
function softmaxTwoParts(
  a: Float32Array,
  aBase: number,
  aLength: number,
  b: Float32Array,
  bBase: number,
  bLength: number,
  scale: number,
  firstVisible: number,
  bOffset: number,
): void {
  let rowMax = -Infinity;
  for (let s = 0; s < aLength; s++) {
    const value = s >= firstVisible ? a[aBase + s] * scale : -Infinity;
    a[aBase + s] = value;
    if (value > rowMax) rowMax = value;
  }
  for (let s = 0; s < bLength; s++) {
    const value = bOffset + s >= firstVisible ? b[bBase + s] * scale : -Infinity;
    b[bBase + s] = value;
    if (value > rowMax) rowMax = value;
  }
  if (rowMax === -Infinity) {
    a.fill(0, aBase, aBase + aLength);
    b.fill(0, bBase, bBase + bLength);
    return;
  }
  let total = 0;
  for (let s = 0; s < aLength; s++) total += a[aBase + s] = Math.exp(a[aBase + s] - rowMax);
  for (let s = 0; s < bLength; s++) total += b[bBase + s] = Math.exp(b[bBase + s] - rowMax);
  for (let s = 0; s < aLength; s++) a[aBase + s] /= total;
  for (let s = 0; s < bLength; s++) b[bBase + s] /= total;
}
