/**
 * Turning (prompt ids, completion ids) pairs into padded training batches and computing the
 * per-token log-probabilities of the completion tokens under the model, with gradient.
 *
 * Legend: B = sequences in the micro-batch, L = padded full length, Tc = padded completion length.
 * Is not: sampling (src/sampling) or loss maths (src/algorithms). Only completion positions reach
 * the lm_head (the prompt's logits are never computed), and right padding keeps real tokens at the
 * same positions as during sampling, so the causal mask alone is enough.
 */
import type { Transformer } from '../model/transformer.js';
import { entropyFromLogits, logSoftmaxGather, mul, noGrad, reshape, type Tensor } from '../tensor/index.js';

export interface TokenSequence {
  promptIds: readonly number[];
  completionIds: readonly number[];
  /** Per completion token: 1 = in the loss (multi-turn rollouts mask tool output with 0). */
  lossMask?: readonly number[];
}

export interface CompletionLogprobs {
  /** [B, Tc] log π of each completion token (padding positions hold 0). */
  logprobs: Tensor;
  /** [B·Tc] 1 where a real, loss-carrying completion token sits. */
  mask: Float32Array;
  /** [B·Tc] entropy of the policy at each position (metrics, entropy-based token selection). */
  entropies: Float32Array;
  Tc: number;
}

/** Per-token logprobs of each completion under `model` (logits divided by `temperature`, as at sampling). */
export function completionLogprobs(model: Transformer, sequences: readonly TokenSequence[], temperature = 1): CompletionLogprobs {
  const B = sequences.length;
  const L = Math.max(...sequences.map((s) => s.promptIds.length + s.completionIds.length));
  const Tc = Math.max(1, ...sequences.map((s) => s.completionIds.length));
  const ids = new Int32Array(B * L);
  const rows = new Int32Array(B * Tc);
  const targets = new Int32Array(B * Tc);
  const mask = new Float32Array(B * Tc);
  sequences.forEach((sequence, b) => {
    const full = [...sequence.promptIds, ...sequence.completionIds];
    ids.set(full, b * L);
    const start = sequence.promptIds.length;
    for (let t = 0; t < Tc; t++) {
      if (t < sequence.completionIds.length) {
        rows[b * Tc + t] = b * L + start - 1 + t; // the position that predicts completion token t
        targets[b * Tc + t] = sequence.completionIds[t];
        mask[b * Tc + t] = sequence.lossMask ? sequence.lossMask[t] : 1;
      } else {
        rows[b * Tc + t] = b * L; // padding: any valid row; masked out below
      }
    }
  });
  let logits = model.forward(ids, B, { logitRows: rows }); // [B·Tc, V]
  if (temperature !== 1) logits = mul(logits, 1 / temperature);
  const entropies = noGrad(() => entropyFromLogits(logits));
  const logprobs = reshape(logSoftmaxGather(logits, targets), [B, Tc]); // [B, Tc]
  return { logprobs, mask, entropies, Tc };
}

/** Pads ragged per-token arrays to [B, Tc] row-major (missing positions = `fill`). */
export function padRows(rows: readonly (readonly number[])[], Tc: number, fill = 0): Float32Array {
  const out = new Float32Array(rows.length * Tc).fill(fill);
  rows.forEach((row, b) => out.set(row.slice(0, Tc), b * Tc));
  return out;
}
