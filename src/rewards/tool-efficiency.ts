/**
 * OTC-PO's tool-integrated reward (Wang et al. 2025, "Acting Less is Reasoning More" / "OTC: Optimal
 * Tool Calls via Reinforcement Learning", arXiv 2504.14870): correctness multiplied by a reward that
 * peaks at the optimal number of tool calls, so a correct answer reached with fewer calls scores more.
 *
 * Is: a group reward over each episode's tool-call count (`input.episode.toolCalls`, filled by the
 * multi-turn rollout) and a correctness reward. Is not: a tool-call counter over raw text — an input
 * without an episode is an error, because the count would be a guess.
 */
import { groupReward, type GroupReward, type RewardFn, type RewardInput } from './types.js';

/** Options of {@link toolEfficiency}. */
export interface ToolEfficiencyOptions {
  /** r_φ: the answer's correctness (null counts as 0); an episode is correct when r_φ ≥ 0.5. */
  correctness: RewardFn;
  /**
   * 'grpo' (OTC-GRPO): the optimal count n is the fewest calls among the group's correct episodes;
   * 'ppo' (OTC-PPO): n = 0, so every call costs (default 'grpo').
   */
  mode?: 'grpo' | 'ppo';
  /** The smoothing constant c of cos(mπ/(2m + c)): larger c decays slower (default 1). */
  smoothing?: number;
  /** The scale α of the product (default 1). */
  alpha?: number;
}

/**
 * r_tool(m, n), the paper's tool reward for m calls against an optimal n:
 * 1 when m = n = 0; cos(mπ/(2m + c)) when n = 0; sin(f(m, n)·π/(2n)) otherwise, with
 * f(m, n) = 2nm/(m + n) — 1 at m = n, falling to 0 at m = 0 and as m → ∞.
 */
export function toolCallReward(calls: number, optimal: number, smoothing = 1): number {
  if (optimal === 0) return calls === 0 ? 1 : Math.cos((calls * Math.PI) / (2 * calls + smoothing));
  const mapped = (2 * optimal * calls) / (calls + optimal);
  return Math.sin((mapped * Math.PI) / (2 * optimal));
}

function callCount(input: RewardInput): number {
  if (input.episode === undefined) {
    throw new Error(
      'tool-efficiency: the input has no episode (input.episode.toolCalls); it needs a multi-turn agent rollout.',
    );
  }
  return input.episode.toolCalls.length;
}

/**
 * OTC-PO: R = α · r_tool(m, n) · r_φ, m = the episode's tool calls. With mode 'grpo' n is the fewest
 * calls among the group's correct episodes (a group with none correct falls back to n = 0, the
 * OTC-PPO form — its product is 0 for binary correctness anyway).
 * By name (`tool-efficiency` in a config) the correctness is a reward by name; unnamed, the run's
 * task check in a run (`grpo train`), else `exact-match` on the `<answer>` content (docs/turn-credit.md §5).
 * Formula checked against the paper and a public re-implementation (`compute_tool_reward` of an
 * `otc_reward.py`); the authors' own code was not found.
 * @example toolEfficiency({ correctness: mathAnswer(), mode: 'grpo', smoothing: 1 })
 */
export function toolEfficiency({
  correctness,
  mode = 'grpo',
  smoothing = 1,
  alpha = 1,
}: ToolEfficiencyOptions): GroupReward {
  if (!(smoothing > 0)) throw new RangeError(`tool-efficiency: smoothing must be > 0, got ${smoothing}.`);
  return groupReward(async (inputs) => {
    const calls = inputs.map(callCount);
    const scores = await Promise.all(inputs.map(async (input) => (await correctness(input)) ?? 0));
    const correctCalls = calls.filter((_, index) => scores[index] >= 0.5);
    const optimal = mode === 'grpo' && correctCalls.length > 0 ? Math.min(...correctCalls) : 0;
    return calls.map((count, index) => alpha * toolCallReward(count, optimal, smoothing) * scores[index]);
  });
}
