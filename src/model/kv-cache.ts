/**
 * The KV cache's storage: the cache type and the three ways a forward adds new keys and values to it
 * (concatenation that keeps the graph while training; an in-place write of T new positions; one new
 * position per row at each row's own column, for rows at different steps). In-place writes grow the
 * room by doubling (or to the capacity hint) so a decode step never copies the whole cache.
 *
 * Is not: attention or the model (transformer.ts calls these per layer).
 */
import { concat, copyBlocks, formatShape, slice, Tensor } from '../tensor/index.js';

/**
 * Keys and values of every layer for the sequences of a batch: [B, Hkv, capacity, D] each, of which
 * the first `length` positions are filled. The room after them lets a decode step write its key in
 * place instead of copying the whole cache (which made each token cost O(S) copies).
 */
export interface KvCache {
  keys: (Tensor | null)[];
  values: (Tensor | null)[];
  /** Number of positions already stored (S before the next call). */
  length: number;
  /** Positions to allocate when a layer's tensors are first created or must grow (0 = just enough). */
  capacityHint?: number;
}

/** Appends k, v [B, Hkv, T, D] by concatenation, recording gradients (a cache used while training). */
export function concatToCache(cache: KvCache, layer: number, k: Tensor, v: Tensor): [Tensor, Tensor] {
  const previousKeys = cache.keys[layer];
  const previousValues = cache.values[layer];
  const used = (stored: Tensor): Tensor =>
    stored.shape[2] === cache.length ? stored : slice(stored, 2, 0, cache.length);
  const keys = previousKeys && previousValues && cache.length > 0 ? concat([used(previousKeys), k], 2) : k; // [B, Hkv, S, D]
  const values = previousKeys && previousValues && cache.length > 0 ? concat([used(previousValues), v], 2) : v;
  cache.keys[layer] = keys;
  cache.values[layer] = values;
  return [keys, values];
}

/**
 * The stored tensor of one layer's keys or values with room for `needed` positions: the stored one
 * when it has that room, else a new one (doubled, at least the capacity hint) holding the first
 * `kept` positions of every row.
 */
function withRoom(
  cache: KvCache,
  layer: number,
  stored: Tensor | null,
  fresh: Tensor,
  needed: number,
  kept: (capacity: number) => number,
): Tensor {
  const [B, Hkv, , D] = fresh.shape;
  if (stored && (stored.shape[0] !== B || stored.shape[1] !== Hkv || stored.shape[3] !== D))
    throw new Error(
      `Transformer: KV cache of layer ${layer} holds ${formatShape(stored.shape)}, new keys are ${formatShape(fresh.shape)}`,
    );
  const capacity = stored ? stored.shape[2] : 0;
  if (stored && needed <= capacity) return stored;
  const grown = Math.max(needed, cache.capacityHint ?? 0, capacity * 2);
  const data = new Float32Array(B * Hkv * grown * D);
  const keep = stored ? kept(capacity) : 0;
  for (let row = 0; row < B * Hkv && keep > 0; row++)
    data.set(stored!.data.subarray(row * capacity * D, (row * capacity + keep) * D), row * grown * D);
  return new Tensor(data, [B, Hkv, grown, D]);
}

/** Writes k, v [B, Hkv, T, D] at positions length..length+T−1 in place, growing the room by doubling. */
export function writeToCache(cache: KvCache, layer: number, k: Tensor, v: Tensor): [Tensor, Tensor] {
  const [B, Hkv, T, D] = k.shape;
  const past = cache.length;
  const stored = [cache.keys[layer], cache.values[layer]];
  const [keys, values] = [k, v].map((fresh, which) => {
    const target = withRoom(cache, layer, stored[which], fresh, past + T, () => past);
    const room = target.shape[2];
    copyBlocks(fresh.data, target.data, {
      count: B * Hkv,
      length: T * D,
      sourceStart: 0,
      sourceStride: T * D,
      targetStart: past * D,
      targetStride: room * D,
    });
    return target;
  });
  cache.keys[layer] = keys;
  cache.values[layer] = values;
  return [keys, values];
}

/** Writes one new key/value per row [B, Hkv, 1, D] at column columns[b] of the cache (rows at different steps). */
export function writeRowsToCache(
  cache: KvCache,
  layer: number,
  k: Tensor,
  v: Tensor,
  columns: Int32Array,
  needed: number,
): [Tensor, Tensor] {
  const [B, Hkv, T, D] = k.shape;
  if (T !== 1 || columns.length !== B) throw new Error(`Transformer: rowLengths need one new token per row (T = ${T})`);
  const stored = [cache.keys[layer], cache.values[layer]];
  // Rows sit at different columns, so a grown tensor keeps every row's whole old room.
  const [keys, values] = [k, v].map((fresh, which) => {
    const target = withRoom(cache, layer, stored[which], fresh, needed, (capacity) => capacity);
    const room = target.shape[2];
    for (let b = 0; b < B; b++)
      for (let h = 0; h < Hkv; h++) {
        const row = b * Hkv + h;
        target.data.set(fresh.data.subarray(row * D, (row + 1) * D), (row * room + columns[b]) * D);
      }
    return target;
  });
  cache.keys[layer] = keys;
  cache.values[layer] = values;
  return [keys, values];
}
