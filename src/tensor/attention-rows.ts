/**
 * The row loops of causalAttention (fused.ts): scaled scores → softmax probabilities in place, and the
 * softmax backward in place. Plain loops, the same on every backend.
 *
 * Is: two paths per loop. A plain causal call (no key mask, document ids, additive mask or window) visits
 * only the keys each query can see and writes zeros past them; every other call tests each key. They
 * agree bit for bit on finite input: a hidden key's score is −∞, its exp an exact 0, which adds nothing
 * to a sum (the backward's hidden entries are ±0 before, +0 now). The plain path skips about half the
 * entries of a training-length causal row and the per-key mask tests, the JS time of attention.
 * Is not: the matrix products, shape checks or autograd (fused.ts).
 */
import type { Tensor } from './tensor.js';

/** Geometry of the [B, Hq, T, S] score block and the masks to apply (AttentionOptions, resolved). */
export interface AttentionRows {
  B: number;
  Hq: number;
  T: number;
  S: number;
  /** Absolute position of query 0; query t sees keys s ≤ offset + t when causal. */
  offset: number;
  causal: boolean;
  scale: number;
  window?: number;
  keyMask?: Uint8Array;
  segmentIds?: Int32Array;
  additiveMask?: Tensor;
  /** Element strides of additiveMask along B, Hq, T (0 where it broadcasts). */
  maskStrides?: [number, number, number] | null;
}

/** True when only the causal limit hides keys: the rows then need no per-key tests. */
function isPlainCausal(rows: AttentionRows): boolean {
  return rows.causal && !rows.keyMask && !rows.segmentIds && !rows.additiveMask && rows.window === undefined;
}

/** Scores [B, Hq, T, S] (unscaled q·kᵀ) → probabilities, in place; a query that sees no key gets zeros. */
export function softmaxScoreRows(probabilities: Float32Array, rows: AttentionRows): void {
  if (isPlainCausal(rows)) return plainCausalSoftmax(probabilities, rows);
  const { B, Hq, T, S, offset, causal, scale, keyMask, segmentIds: segments, additiveMask: additive } = rows;
  const maskStrides = rows.maskStrides;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < Hq; h++) {
      for (let t = 0; t < T; t++) {
        const base = ((b * Hq + h) * T + t) * S;
        const visible = causal ? Math.min(S, offset + t + 1) : S;
        const firstVisible = rows.window === undefined ? 0 : offset + t - rows.window + 1;
        const querySegment = segments ? segments[b * S + offset + t] : 0;
        let rowMax = -Infinity;
        for (let s = 0; s < S; s++) {
          let value = s < visible && s >= firstVisible ? probabilities[base + s] * scale : -Infinity;
          if (keyMask && keyMask[b * S + s] === 0) value = -Infinity;
          if (segments && segments[b * S + s] !== querySegment) value = -Infinity;
          if (additive && maskStrides)
            value += additive.data[b * maskStrides[0] + h * maskStrides[1] + t * maskStrides[2] + s];
          probabilities[base + s] = value;
          if (value > rowMax) rowMax = value;
        }
        if (rowMax === -Infinity) {
          probabilities.fill(0, base, base + S);
          continue;
        }
        normaliseRow(probabilities, base, S, rowMax);
      }
    }
  }
}

/** The general loop's arithmetic on the first `visible` keys of each row (the max is of the unrounded scores). */
function plainCausalSoftmax(probabilities: Float32Array, rows: AttentionRows): void {
  const { B, Hq, T, S, offset, scale } = rows;
  for (let row = 0; row < B * Hq * T; row++) {
    const base = row * S;
    const visible = Math.min(S, offset + (row % T) + 1);
    let rowMax = -Infinity;
    for (let s = 0; s < visible; s++) {
      const value = probabilities[base + s] * scale;
      probabilities[base + s] = value;
      if (value > rowMax) rowMax = value;
    }
    if (rowMax === -Infinity) {
      probabilities.fill(0, base, base + S);
      continue;
    }
    normaliseRow(probabilities, base, visible, rowMax);
    probabilities.fill(0, base + visible, base + S);
  }
}

/** dScores = P ⊙ (dP − rowsum(dP ⊙ P)) · scale, in place on gradProbabilities (rows of S). */
export function softmaxBackwardRows(
  gradProbabilities: Float32Array,
  probabilities: Float32Array,
  rows: AttentionRows,
): void {
  const { B, Hq, T, S, offset, scale } = rows;
  const plain = isPlainCausal(rows);
  for (let row = 0; row < B * Hq * T; row++) {
    const base = row * S;
    const visible = plain ? Math.max(0, Math.min(S, offset + (row % T) + 1)) : S;
    let dot = 0;
    for (let s = 0; s < visible; s++) dot += gradProbabilities[base + s] * probabilities[base + s];
    for (let s = 0; s < visible; s++)
      gradProbabilities[base + s] = probabilities[base + s] * (gradProbabilities[base + s] - dot) * scale;
    if (visible < S) gradProbabilities.fill(0, base + visible, base + S);
  }
}

/** exp(score − rowMax) / Σ over the row's first `count` entries, in place (masked scores are −∞ and give 0). */
function normaliseRow(probabilities: Float32Array, base: number, count: number, rowMax: number): void {
  let total = 0;
  for (let s = 0; s < count; s++) {
    const e = Math.exp(probabilities[base + s] - rowMax);
    probabilities[base + s] = e;
    total += e;
  }
  for (let s = 0; s < count; s++) probabilities[base + s] /= total;
}
