/**
 * GTPO's array-side parts: conflict-token weights and the entropy filter on advantages. The loss
 * itself is `gtpoLoss` in policy-losses.ts, which takes these weights as `input.tokenWeights`.
 *
 * Is: plain functions over token ids, advantages and entropies.
 * Is not: anything on tensors.
 */
import { resolveGroups } from './advantages-groups.js';

/** Tunables of the GTPO conflict-token weights. */
export interface GtpoWeightOptions {
  /** Weight of conflict tokens in positive completions (default 2). */
  positiveWeight?: number;
  /** Weight of conflict tokens in negative completions (default 0: protected from the push-down). */
  negativeWeight?: number;
  /** 'forward' (leading run), 'backward' (trailing run aligned at the end) or 'both' (product, default). */
  direction?: 'forward' | 'backward' | 'both';
}

/** Leading-run conflict flags of `ids` against the other side's completions (cumprod of "some match here"). */
function leadingConflicts(ids: ArrayLike<number>, others: readonly ArrayLike<number>[], fromEnd: boolean): Uint8Array {
  const flags = new Uint8Array(ids.length);
  for (let k = 0; k < ids.length; k++) {
    const t = fromEnd ? ids.length - 1 - k : k;
    const matched = others.some((other) => {
      const u = fromEnd ? other.length - 1 - k : k;
      return u >= 0 && u < other.length && other[u] === ids[t];
    });
    if (!matched) break;
    flags[t] = 1;
  }
  return flags;
}

/**
 * GTPO conflict-token weights δ per completion: a token in the leading run (and, separately, the
 * trailing run aligned at the end) where some completion of the opposite sign has the same id at the
 * same position is a conflict token; δ = positiveWeight (2) in positive completions, negativeWeight
 * (0) in negative ones, 1 otherwise; 'both' multiplies the two directions. Sign comes from the
 * advantage (> 0 positive, < 0 negative; 0 gets all-1 weights). GTPO (#197; code winstonsmith1897/GTPO).
 */
export function gtpoTokenWeights(
  completionIds: readonly ArrayLike<number>[],
  advantages: ArrayLike<number>,
  groupSizes: number | readonly number[],
  options: GtpoWeightOptions = {},
): Float32Array[] {
  if (completionIds.length !== advantages.length)
    throw new RangeError(`completionIds has ${completionIds.length} entries but advantages has ${advantages.length}.`);
  const layout = resolveGroups(advantages.length, groupSizes);
  const positiveWeight = options.positiveWeight ?? 2;
  const negativeWeight = options.negativeWeight ?? 0;
  const direction = options.direction ?? 'both';
  const weights = completionIds.map((ids) => new Float32Array(ids.length).fill(1));
  for (let g = 0; g < layout.groupCount; g++) {
    const members = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k);
    const positives = members.filter((i) => advantages[i] > 0);
    const negatives = members.filter((i) => advantages[i] < 0);
    for (const i of members) {
      if (advantages[i] === 0) continue;
      const others = (advantages[i] > 0 ? negatives : positives).map((j) => completionIds[j]);
      const conflictWeight = advantages[i] > 0 ? positiveWeight : negativeWeight;
      for (const fromEnd of direction === 'both' ? [false, true] : [direction === 'backward']) {
        const flags = leadingConflicts(completionIds[i], others, fromEnd);
        flags.forEach((flag, t) => {
          if (flag) weights[i][t] *= conflictWeight;
        });
      }
    }
  }
  return weights;
}

/** Tunables of the GTPO entropy filter. */
export interface GtpoEntropyOptions {
  /** Completions whose mean token entropy exceeds this get A = 0 (default 0.7). */
  threshold?: number;
  /** Otherwise A ← A − coefficient·H (default 0.1). */
  coefficient?: number;
}

/** GTPO entropy filter: A_i = 0 if mean entropy H_i > 0.7, else A_i − 0.1·H_i. GTPO (#197). */
export function gtpoEntropyFilter(
  advantages: ArrayLike<number>,
  meanEntropies: ArrayLike<number>,
  options: GtpoEntropyOptions = {},
): Float32Array {
  if (advantages.length !== meanEntropies.length)
    throw new RangeError(`advantages has ${advantages.length} entries but meanEntropies has ${meanEntropies.length}.`);
  const threshold = options.threshold ?? 0.7;
  const coefficient = options.coefficient ?? 0.1;
  return Float32Array.from({ length: advantages.length }, (_, i) =>
    meanEntropies[i] > threshold ? 0 : advantages[i] - coefficient * meanEntropies[i],
  );
}
