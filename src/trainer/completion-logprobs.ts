/**
 * Turning (prompt ids, completion ids) pairs into padded training batches and computing the
 * per-token log-probabilities of the completion tokens under the model, with gradient.
 *
 * Legend: B = rows of the forward pass, L = row length, Tc = padded completion length.
 * Is not: sampling (src/sampling) or loss maths (src/algorithms). Only completion positions reach
 * the lm_head (the prompt's logits are never computed). Unpacked, right padding keeps real tokens at
 * the positions they had during sampling, so the causal mask alone is enough; packed, each sequence
 * restarts its positions and a segment mask keeps documents apart.
 */
import type { Transformer } from '../model/transformer.js';
import type { SequenceImages } from '../rollout/rollout.js';
import {
  concat,
  embedding,
  indexSelect,
  entropy,
  entropyFromLogits,
  logSoftmaxGather,
  mul,
  noGrad,
  projectedLogSoftmaxGather,
  reshape,
  Tensor,
} from '../tensor/index.js';

export interface TokenSequence {
  promptIds: readonly number[];
  completionIds: readonly number[];
  /** Per completion token: 1 = in the loss (multi-turn rollouts mask tool output with 0). */
  lossMask?: readonly number[];
  /** The prompt's images (vision-language runs): their features replace the prompt's image tokens. */
  images?: SequenceImages;
}

export interface CompletionLogprobs {
  /** [B, Tc] log π of each completion token (padding positions hold any finite value; `mask` is 0 there). */
  logprobs: Tensor;
  /** [B·Tc] 1 where a real, loss-carrying completion token sits. */
  mask: Float32Array;
  /** [B·Tc] entropy of the policy at each position (metrics, entropy-based token selection). */
  entropies: Float32Array;
  /** [B, Tc] the same entropies with gradient, when asked for (the entropy bonus). */
  entropyTensor?: Tensor;
  Tc: number;
}

/** How sequences share the rows of a forward pass. */
export interface LayoutOptions {
  /**
   * Pack several sequences into rows of at most this many tokens (each keeps its own positions and
   * attends only within itself); 0 = one sequence per row, right-padded.
   */
  packLength?: number;
  /** Also return the per-token entropy as a tensor with gradient (costs a [rows, V] softmax graph). */
  entropyWithGradient?: boolean;
  /** Seed of this training forward's LoRA dropout masks (Transformer's ForwardOptions); absent = no dropout. */
  dropoutSeed?: number;
  /**
   * Pad the completion axis to at least this length (a micro-batch of a training batch whose
   * columns are [rows, Tc] reads them as views instead of re-padding them).
   */
  completionLength?: number;
}

interface RowLayout {
  ids: Int32Array;
  B: number;
  L: number;
  positions?: Int32Array;
  segmentIds?: Int32Array;
  /** Flat row (b·L + t) where each sequence starts. */
  starts: number[];
}

/** First-fit packing in order; a sequence longer than packLength gets a row of its own. */
function layoutRows(sequences: readonly TokenSequence[], packLength: number): RowLayout {
  const lengths = sequences.map((s) => s.promptIds.length + s.completionIds.length);
  const rows: number[][] = [];
  const used: number[] = [];
  sequences.forEach((_, index) => {
    const row = packLength > 0 ? used.findIndex((total) => total + lengths[index] <= packLength) : -1;
    if (row >= 0) {
      rows[row].push(index);
      used[row] += lengths[index];
    } else {
      rows.push([index]);
      used.push(lengths[index]);
    }
  });
  const B = rows.length;
  const L = Math.max(...used);
  const ids = new Int32Array(B * L);
  const starts = new Array<number>(sequences.length);
  const positions = packLength > 0 ? new Int32Array(B * L) : undefined;
  const segmentIds = packLength > 0 ? new Int32Array(B * L).fill(-1) : undefined;
  rows.forEach((members, b) => {
    let offset = 0;
    for (const index of members) {
      const sequence = sequences[index];
      starts[index] = b * L + offset;
      ids.set([...sequence.promptIds, ...sequence.completionIds], b * L + offset);
      for (let t = 0; t < lengths[index]; t++) {
        if (positions) positions[b * L + offset + t] = t;
        if (segmentIds) segmentIds[b * L + offset + t] = index;
      }
      offset += lengths[index];
    }
    // Padding at the end of a packed row forms its own document, so it never leaks into real ones.
    if (segmentIds) for (let t = offset; t < L; t++) segmentIds[b * L + t] = sequences.length + b;
  });
  return { ids, B, L, positions, segmentIds, starts };
}

/** Per-token logprobs of each completion under `model` (logits divided by `temperature`, as at sampling). */
export function completionLogprobs(
  model: Transformer,
  sequences: readonly TokenSequence[],
  temperature = 1,
  layout: LayoutOptions = {},
): CompletionLogprobs {
  const count = sequences.length;
  // The lm_head runs over [count, own] positions, `own` the longest completion here (as every
  // forward always has: the same rows, so the same sums); `completionLength` only widens the output.
  const own = Math.max(1, ...sequences.map((s) => s.completionIds.length));
  const Tc = Math.max(own, layout.completionLength ?? 0);
  const { ids, B, positions, segmentIds, starts } = layoutRows(sequences, layout.packLength ?? 0);
  const imageFeatures = imageFeaturesOf(sequences, starts);
  const rows = new Int32Array(count * own);
  const targets = new Int32Array(count * own);
  const mask = new Float32Array(count * Tc);
  sequences.forEach((sequence, index) => {
    const start = starts[index] + sequence.promptIds.length;
    for (let t = 0; t < own; t++) {
      if (t < sequence.completionIds.length) {
        rows[index * own + t] = start - 1 + t; // the position that predicts completion token t
        targets[index * own + t] = sequence.completionIds[t];
        mask[index * Tc + t] = sequence.lossMask ? sequence.lossMask[t] : 1;
      } else {
        rows[index * own + t] = starts[index]; // padding: any valid row; masked out by the caller
      }
    }
  });
  const widen = widening(count, own, Tc);
  if (!layout.entropyWithGradient) {
    // The lm_head, log-softmax-gather and entropy in chunks of rows: no [count·own, V] tensor is kept.
    const { dropoutSeed } = layout;
    const states = model.hiddenStates(ids, B, { positions, segmentIds, dropoutSeed, imageFeatures }); // [B, L, H]
    const hidden = reshape(states, [-1, model.config.hiddenSize]);
    const selected = embedding(hidden, rows); // [count·own, H]
    const projected = projectedLogSoftmaxGather(selected, model.headWeight(), targets, {
      scale: 1 / temperature,
    });
    return {
      logprobs: widen.tensor(projected.logprobs),
      mask,
      entropies: widen.numbers(projected.entropies),
      Tc,
    };
  }
  const forwardOptions = { logitRows: rows, positions, segmentIds, dropoutSeed: layout.dropoutSeed, imageFeatures };
  let logits = model.forward(ids, B, forwardOptions); // [count·own, V]
  if (temperature !== 1) logits = mul(logits, 1 / temperature);
  const entropies = widen.numbers(noGrad(() => entropyFromLogits(logits)));
  const logprobs = widen.tensor(logSoftmaxGather(logits, targets));
  return { logprobs, mask, entropies, entropyTensor: widen.tensor(entropy(logits)), Tc };
}

/** [count·own] values → [count, Tc] (the extra columns 0; with gradient for tensors). */
function widening(count: number, own: number, Tc: number) {
  if (Tc === own)
    return { tensor: (values: Tensor) => reshape(values, [count, Tc]), numbers: (values: Float32Array) => values };
  const source = Int32Array.from({ length: count * Tc }, (_, i) =>
    i % Tc < own ? Math.floor(i / Tc) * own + (i % Tc) : count * own,
  );
  const zero = new Tensor(new Float32Array(1), [1]);
  return {
    tensor: (values: Tensor) => reshape(indexSelect(concat([reshape(values, [-1]), zero], 0), source), [count, Tc]),
    numbers: (values: Float32Array) => Float32Array.from(source, (k) => (k < values.length ? values[k] : 0)),
  };
}

/**
 * The features of the prompts' image tokens, in order of appearance over the flat ids, with their
 * positions (an image token the policy generated in a completion keeps its plain embedding, as it
 * had when it was sampled): each distinct SequenceImages connected once, then its rows picked per
 * sequence. Undefined when no sequence has images.
 */
function imageFeaturesOf(
  sequences: readonly TokenSequence[],
  starts: readonly number[],
): { tokenId: number; features: Tensor; positions: Int32Array } | undefined {
  const withImages = sequences.flatMap((sequence, index) => (sequence.images ? [index] : []));
  if (withImages.length === 0) return undefined;
  const tokenId = sequences[withImages[0]].images!.tokenId;
  const distinct = [...new Set(withImages.map((index) => sequences[index].images!))];
  if (distinct.some((images) => images.tokenId !== tokenId))
    throw new Error('completionLogprobs: sequences of one forward name different image token ids');
  const connected = distinct.map((images) => images.connect(images.visionOutputs)); // each [n_k, H]
  const offsets: number[] = [];
  distinct.reduce((offset, _, k) => (offsets.push(offset), offset + connected[k].shape[0]), 0);
  const rows: number[] = [];
  const positions: number[] = [];
  for (const index of [...withImages].sort((a, b) => starts[a] - starts[b])) {
    const { images, promptIds } = sequences[index];
    const k = distinct.indexOf(images!);
    const count = connected[k].shape[0];
    promptIds.forEach((id, t) => id === tokenId && positions.push(starts[index] + t));
    const tokens = promptIds.filter((id) => id === tokenId).length;
    if (tokens !== count)
      throw new Error(
        `completionLogprobs: sequence ${index} has ${tokens} image tokens (id ${tokenId}) in its prompt but its images give ${count} feature rows`,
      );
    for (let r = 0; r < count; r++) rows.push(offsets[k] + r);
  }
  const all = connected.length === 1 ? connected[0] : concat(connected, 0);
  return { tokenId, features: indexSelect(all, rows), positions: Int32Array.from(positions) };
}

/** Pads ragged per-token arrays to [B, Tc] row-major (missing positions = `fill`). */
export function padRows(rows: readonly ArrayLike<number>[], Tc: number, fill = 0): Float32Array {
  const out = new Float32Array(rows.length * Tc).fill(fill);
  rows.forEach((row, b) => {
    for (let t = 0; t < Math.min(Tc, row.length); t++) out[b * Tc + t] = row[t];
  });
  return out;
}
