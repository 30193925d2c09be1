/**
 * TEMPO (Tree-Estimated Mean Prefix Value for Policy Optimization, #247, arXiv 2509.18314): the GRPO
 * advantage plus a branch-gated TD correction read off the prefix tree (P2T) that a group's
 * completions form. A token's correction is V(child) − V(parent): the mean reward of the completions
 * that share the prefix through this token minus that of the completions sharing the prefix before
 * it. Where no completion leaves the path the two sets are equal and the term is 0, so TEMPO is GRPO
 * there; at a branching token it credits the choice made.
 *
 * Is: a token-level `AdvantageFn` from `input.completionIds`, exact to the authors' code
 * (fatebreaker/tempo `verl/trainer/ppo/core_algos.py`, `compute_tempo_outcome_advantage`, at 0a1c273):
 * A_t = (r_i − mean_g + V(child_t) − V(parent_t))/(std_g + ε), sample std, ε = 1e-6.
 * Is not: a tree sampler (the branches are the ones plain group sampling happens to share) nor TreeRL's
 * `tree` estimator, whose node values replace the outcome instead of correcting it.
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  finishAdvantages,
  requireSampleField,
  resolveGroups,
  scoredMask,
  segmentStats,
  toRewardArray,
  zeroStdFlags,
} from './advantages-groups.js';
import { epsilonOption } from './option-schemas.js';

/** Mean reward of the scored completions in `members` (the authors' branch_mean / ancestor_mean). */
function valueOf(members: readonly number[], rewards: Float64Array): number {
  let sum = 0;
  let count = 0;
  for (const j of members)
    if (!Number.isNaN(rewards[j])) {
      sum += rewards[j];
      count++;
    }
  return count > 0 ? sum / count : 0;
}

/**
 * Token advantages of completion `i`: the walk down the prefix tree of the authors' inner loop. At
 * token t the parent is the set of completions that matched i up to t − 1 (the whole group at t = 0),
 * the child those of them whose token t is i's too (a completion that has ended matches nothing).
 * Once i is alone its remaining tokens all get the outcome term, as the authors' early `break` does.
 */
function tempoTokenAdvantages(
  i: number,
  members: readonly number[],
  ids: readonly ArrayLike<number>[],
  rewards: Float64Array,
  outcome: number,
  divisor: number,
): Float32Array {
  const sequence = ids[i];
  const out = new Float32Array(sequence.length);
  let parent = members;
  for (let t = 0; t < sequence.length; t++) {
    const child = parent.filter((j) => ids[j].length > t && ids[j][t] === sequence[t]);
    out[t] = (outcome + valueOf(child, rewards) - valueOf(parent, rewards)) / divisor;
    if (parent.length === 1) {
      out.fill(out[t], t);
      break;
    }
    parent = child;
  }
  return out;
}

/**
 * TEMPO advantage: A_{i,t} = (r_i − mean_g + V(child_t) − V(parent_t))/(std_g + ε), V = mean reward
 * of the scored completions under a prefix-tree node, std_g the sample std (N − 1) of the group's
 * scored rewards, ε = 1e-6 (`epsilon`). Unscored completions get 0, keep = 0 and count in no mean,
 * though their tokens still shape the tree. A group with one scored completion gets A = r at every
 * token (verl's GRPO: mean 0, std 1; the TD term of a one-leaf tree is 0). The per-sequence advantage
 * is the GRPO one, the value away from branches.
 * #247 (arXiv 2509.18314); fatebreaker/tempo core_algos.py compute_tempo_outcome_advantage.
 */
export function tempoAdvantage(input: AdvantageInput, options: AdvantageOptions = {}): AdvantageResult {
  const epsilon = options.epsilon ?? 1e-6;
  const rewards = toRewardArray(input.rewards);
  const layout = resolveGroups(rewards.length, input.groupSizes);
  const ids = requireSampleField(input.completionIds, 'completionIds', rewards.length, 'tempo');
  const stats = segmentStats(rewards, layout.groupOf, layout.groupCount);
  const perSequence = new Float64Array(rewards.length);
  const tokenAdvantages: Float32Array[] = [];
  for (let g = 0; g < layout.groupCount; g++) {
    const members = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k);
    const single = stats.count[g] < 2;
    const divisor = single ? 1 : stats.std[g] + epsilon;
    for (const i of members) {
      if (Number.isNaN(rewards[i])) {
        tokenAdvantages[i] = new Float32Array(ids[i].length);
        continue;
      }
      const outcome = rewards[i] - (single ? 0 : stats.mean[g]);
      perSequence[i] = outcome / divisor;
      tokenAdvantages[i] = tempoTokenAdvantages(i, members, ids, rewards, outcome, divisor);
    }
  }
  return {
    advantages: finishAdvantages(perSequence),
    tokenAdvantages,
    keep: scoredMask(rewards),
    stdIsZero: zeroStdFlags(stats),
  };
}

/** `algorithm.advantage: tempo`: the entry `grpo list` prints and configs name. */
export const tempoAdvantagePart = defineAdvantageEstimator({
  name: 'tempo',
  fn: tempoAdvantage,
  description:
    'token-level (r − mean_g + V(child) − V(parent))/(std_g + ε) over the prefix tree of the group: GRPO plus a TD term at branching tokens',
  citation: 'TEMPO (#247, arXiv 2509.18314); fatebreaker/tempo core_algos.py compute_tempo_outcome_advantage',
  needs: ['completionIds'],
  options: z.object({ epsilon: epsilonOption }).partial().strict(),
});
