/**
 * Tree-derived token advantages (TreeRL): the completions of a group that share token prefixes form
 * a prefix tree; every token gets the advantage of the tree node (segment) it lies in.
 *
 * Is: a token-level `AdvantageFn` built from `input.completionIds`, no tree object needed — a node is
 * the set of completions sharing the prefix up to and including a token.
 * Is not: a tree sampler (the rollout side, e.g. EPTree, is the sampler's job) nor TEMPO's TD term.
 */
import { z } from 'zod';
import { defineAdvantageEstimator } from './advantages-groups.js';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  finishAdvantages,
  requireSampleField,
  resolveGroups,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';

/** Mean reward of the scored completions in `members`; NaN when none is scored. */
function meanOf(members: readonly number[], rewards: Float64Array): number {
  let sum = 0;
  let count = 0;
  for (const j of members)
    if (!Number.isNaN(rewards[j])) {
      sum += rewards[j];
      count++;
    }
  return count > 0 ? sum / count : NaN;
}

/** Token advantages of one completion `i` whose group holds `groupMembers`. */
function treeTokenAdvantages(
  i: number,
  groupMembers: readonly number[],
  ids: readonly ArrayLike<number>[],
  rewards: Float64Array,
): Float32Array {
  const sequence = ids[i];
  const out = new Float32Array(sequence.length);
  const rootValue = meanOf(groupMembers, rewards);
  let parentMembers = groupMembers;
  let parentValue = rootValue;
  let current = groupMembers;
  for (let t = 0; t < sequence.length; t++) {
    const next = current.filter((j) => ids[j].length > t && ids[j][t] === sequence[t]);
    // A node ends where its set of descendant leaves shrinks; the old node becomes the parent.
    if (next.length !== current.length && t > 0) {
      parentMembers = current;
      parentValue = meanOf(parentMembers, rewards);
    }
    current = next;
    const value = meanOf(current, rewards);
    const leafCount = current.filter((j) => !Number.isNaN(rewards[j])).length;
    const globalAdvantage = value - rootValue;
    const localAdvantage = value - parentValue;
    out[t] = leafCount > 0 ? (globalAdvantage + localAdvantage) / Math.sqrt(leafCount) : 0;
  }
  return out;
}

/**
 * TreeRL global + local advantage: for node s with parent p, V = mean outcome of the leaves under it,
 * GA = V(s) − V(root), LA = V(s) − V(p), R(s) = (GA + LA)/√|leaves(s)|, given to every token of s's
 * segment (normalisation recalled [R]). The per-sequence advantage is the mean over its tokens.
 * TreeRL (arXiv 2506.11902).
 */
export function treeAdvantage(input: AdvantageInput, _options: AdvantageOptions = {}): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const ids = requireSampleField(input.completionIds, 'completionIds', rewards.length, 'tree');
  const tokenAdvantages: Float32Array[] = [];
  const perSequence = new Float64Array(rewards.length);
  const keep = new Uint8Array(rewards.length);
  for (let g = 0; g < layout.groupCount; g++) {
    const members = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k);
    for (const i of members) {
      const tokens = Number.isNaN(rewards[i])
        ? new Float32Array(ids[i].length)
        : treeTokenAdvantages(i, members, ids, rewards);
      tokenAdvantages[i] = tokens;
      keep[i] = Number.isNaN(rewards[i]) ? 0 : 1;
      perSequence[i] = tokens.length > 0 ? tokens.reduce((a, b) => a + b, 0) / tokens.length : 0;
    }
  }
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  return { advantages: finishAdvantages(perSequence), tokenAdvantages, keep, stdIsZero: zeroStdFlags(stats) };
}

/** `algorithm.advantage: tree`: the entry `grpo list` prints and configs name. */
export const treeAdvantagePart = defineAdvantageEstimator({
  name: 'tree',
  fn: treeAdvantage,
  description: 'token-level (V(s) − V(root) + V(s) − V(parent))/√leaves over the prefix tree',
  citation: 'TreeRL, arXiv 2506.11902',
  needs: ['completionIds'],
  options: z.object({}).strict(),
});
