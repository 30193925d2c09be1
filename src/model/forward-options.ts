/**
 * The options of one Transformer forward pass (positions, masks, cache, the shared prompt of a decode
 * step, the dropout seed of a training pass); apart from transformer.ts, whose forward reads them.
 * Is not: the forward itself (transformer.ts).
 */
import type { KvCache } from './kv-cache.js';
import type { ImageFeaturesInput } from './vision/image-merge.js';
import type { DecodeBuffers } from './decode-buffers.js';

export interface ForwardOptions {
  /** Absolute position of each new token, [T] shared or [B·T]; defaults to cache length + t. */
  positions?: Int32Array;
  /** Per-key validity over all S keys, [B·S] (1 = real token, 0 = left padding). */
  keyMask?: Uint8Array;
  /** Document id of every token, [B·T], for packed rows: tokens attend only within their document. */
  segmentIds?: Int32Array;
  /** When given, new keys/values are appended to it and attention sees the whole cache. */
  cache?: KvCache;
  /** Rows (b·T + t) whose logits are wanted; all rows when omitted. Saves the lm_head on prompts. */
  logitRows?: Int32Array;
  /**
   * Decode steps of groups sharing a prompt (T = 1, no graph): row b continues prompt rowPrefix[b],
   * whose keys/values sit in prompts[rowPrefix[b]] (stored once per prompt); `cache` then holds only
   * each row's generated keys. Positions must be given (prompt length + tokens generated).
   * With rowLengths, rows may be at different steps (continuous batching): row b holds
   * rowLengths[b] generated keys, its new key goes to column rowLengths[b] and it attends to those
   * alone (a slot given to a new sequence starts again at 0); cache.length becomes max + 1.
   */
  sharedPrefix?: { prompts: KvCache[]; rowPrefix: Int32Array; rowLengths?: Int32Array };
  /**
   * Marks a training forward: LoRA dropout (adapterDropout > 0) is applied with masks derived from
   * this seed, the layer and the module, so a recomputed layer draws the same masks. Absent (every
   * rollout, scoring, old-logprob and reference pass) = no dropout.
   */
  dropoutSeed?: number;
  /**
   * Vision-language models: the embedding rows of every position whose id is tokenId are replaced, in
   * order over the flat [B·T] ids, by the rows of features [count, H] (image-merge.ts); differentiable
   * w.r.t. the embedding table and the features. Prefill only: a decode step's ids hold no image tokens.
   */
  imageFeatures?: ImageFeaturesInput;
  /**
   * Generation only (no graph): the plain linear layers write into these arrays, one per module, which
   * the next forward given the same buffers overwrites; so nothing may keep this forward's projections.
   */
  outputBuffers?: DecodeBuffers;
}
