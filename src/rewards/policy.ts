/**
 * Rewards that read the policy: they score a completion by its log-probabilities under the policy
 * that sampled it (`RewardInput.policyLogprobs`, which `grpo train` fills from the rollout).
 *
 * - `unlikeliness` (He, Fried & Welleck 2025, "Rewarding the Unlikely: Lifting GRPO Beyond
 *   Distribution Sharpening", arXiv 2506.02355; papers.tsv 251): a correctness score scaled down
 *   for the completions the policy finds likely, so GRPO stops reinforcing only the already
 *   probable correct solutions (its "rank bias"). Follows the authors' code
 *   (AndreHe02/rewarding-unlikely-release, `verl/trainer/ppo/ray_lean_trainer.py`
 *   `_compute_advantages`, option `lean.rank_penalty`, 0.25 in `examples/lean/grpo.sh`).
 * - `negativeSurprisal`: the mean log-probability of the completion's own tokens, a label-free
 *   "low output entropy" reward (its expectation over samples is minus the mean token entropy).
 * - `selfAlignedReward` (SAR, Han et al. 2025, arXiv 2509.05489; papers.tsv 153): how much more
 *   likely the completion is with its question than without, (ppl(a) − ppl(a|q))/ppl(a), at least −1.
 *   Follows the authors' code (amazon-science/Self-Aligned-Reward-Towards_Effective_and_Efficient_Reasoners,
 *   `verl/utils/reward_score/efficiency_reward.py` `compute_ppl_qa_log` with the defaults of
 *   `verl/trainer/config/ppo_trainer.yaml` `ppl_qa`, and `create_ans_only_batch` in
 *   `verl/trainer/ppo/ray_trainer.py`: the question replaced by an empty user turn after the system prompt).
 *
 * Is not: the forward pass that scores the completion under another prompt (`RewardInput.policyLogprobsAfter`,
 * which the trainer supplies), nor logprobs under the reference model (computed after rewards, in the trainer).
 */
import {
  groupReward,
  type ChatMessage,
  type GroupReward,
  type RewardFn,
  type RewardInput,
  type RewardValue,
} from './types.js';

/**
 * The completion's per-token policy logprobs; throws one sentence naming the reward when the caller
 * did not provide them (`grpo serve-rewards`, `grpo reward` without the column, inputs built by hand).
 */
export function policyLogprobsOf(input: RewardInput, rewardName: string): readonly number[] {
  if (input.policyLogprobs === undefined)
    throw new Error(
      `reward "${rewardName}" needs the completion's logprobs under the policy (RewardInput.policyLogprobs: set by grpo train, read by grpo reward from a policy_logprobs column), and this input has none`,
    );
  if (input.policyLogprobs.length !== input.completionIds.length && input.completionIds.length > 0)
    throw new Error(
      `reward "${rewardName}": ${input.policyLogprobs.length} policy logprobs for ${input.completionIds.length} completion tokens`,
    );
  return input.policyLogprobs;
}

/**
 * Mean policy logprob of the tokens the policy produced (NaN entries, e.g. tool output, left out);
 * 0 for a completion without such tokens, as the authors' `masked_mean` gives.
 */
export function meanPolicyLogprob(input: RewardInput, rewardName: string): number {
  return meanProduced(policyLogprobsOf(input, rewardName));
}

/** Mean of the logprobs the policy produced (NaN entries left out); 0 when there are none. */
function meanProduced(logprobs: readonly number[]): number {
  let sum = 0;
  let count = 0;
  for (const logprob of logprobs) {
    if (Number.isNaN(logprob)) continue;
    sum += logprob;
    count++;
  }
  return count === 0 ? 0 : sum / count;
}

/**
 * Each value's rank in ascending order (0 = smallest), ties in input order. The authors use
 * `torch.argsort(torch.argsort(x))`, whose order among exact ties is unspecified.
 */
export function ascendingRanks(values: readonly number[]): number[] {
  const order = values.map((_, index) => index).sort((a, b) => values[a]! - values[b]! || a - b);
  const ranks = new Array<number>(values.length);
  order.forEach((index, rank) => (ranks[index] = rank));
  return ranks;
}

/** Options of {@link unlikeliness}. */
export interface UnlikelinessOptions {
  /** The correctness reward R(x, y) that is scaled (binary in the paper). */
  correctness: RewardFn;
  /** β_rank: how much the most likely completion loses (default 0.25, the authors' script). */
  rankPenalty?: number;
}

/**
 * Unlikeliness reward: r_i = R_i·(1 − β·rank_i/G), where rank_i ∈ {0..G−1} orders the whole group by
 * sequence likelihood, the mean token logprob under the sampling policy, ascending (0 = the least
 * likely completion, which keeps R_i; the most likely keeps 1 − β·(G−1)/G). A wrong completion
 * (R = 0) stays 0; a `null` correctness stays `null`. The paper writes the factor as
 * 1 − β·(G − rank)/G with rank 0 the most likely, which is this minus β/G on correct samples; this
 * follows the authors' code.
 * @example unlikeliness({ correctness: mathAnswer(), rankPenalty: 0.25 })
 */
export function unlikeliness({ correctness, rankPenalty = 0.25 }: UnlikelinessOptions): GroupReward {
  if (!Number.isFinite(rankPenalty) || rankPenalty < 0)
    throw new Error(`reward "unlikeliness": rankPenalty must be a finite number ≥ 0 (got ${rankPenalty})`);
  return groupReward(async (inputs, signal) => {
    const likelihoods = inputs.map((input) => meanPolicyLogprob(input, 'unlikeliness'));
    const scores: RewardValue[] = await Promise.all(inputs.map((input) => correctness({ ...input, signal })));
    const ranks = ascendingRanks(likelihoods);
    const size = inputs.length;
    return scores.map((score, index) =>
      score === null || Number.isNaN(score) ? null : score * (1 - (rankPenalty * ranks[index]!) / size),
    );
  });
}

/**
 * Negative mean surprisal: (1/T)·Σ_t log π(y_t | x, y_<t) over the tokens the policy produced, ≤ 0,
 * higher for completions the policy is surer of. A label-free reward: its mean over samples estimates
 * minus the policy's mean token entropy, so maximising it lowers output entropy (RENT's reward is the
 * exact entropy over the vocabulary, which needs the full distributions this input does not carry).
 * @example negativeSurprisal()(makeRewardInput({ completion: 'ab', completionIds: [1, 2], policyLogprobs: [-0.5, -1.5] })); // -1
 */
export function negativeSurprisal(): RewardFn {
  return (input) => meanPolicyLogprob(input, 'negative-surprisal');
}

/** Perplexity of a completion from its per-token log-probs, exp(−mean), NaN entries (tool output) left out. */
function perplexity(logprobs: readonly number[]): number {
  return Math.exp(-meanProduced(logprobs));
}

/**
 * The prompt without its question, as SAR's `create_ans_only_batch` builds it: a chat prompt keeps its
 * system messages and gets an empty user turn; a plain-text prompt becomes empty.
 */
export function promptWithoutQuestion(prompt: RewardInput['prompt']): string | ChatMessage[] {
  if (typeof prompt === 'string') return '';
  return [...prompt.filter((message) => message.role === 'system'), { role: 'user', content: '' }];
}

/**
 * SAR's self-aligned reward: max((ppl(a) − ppl(a|q)) / (ppl(a) + 1e-9), −1), with ppl(a|q) from the
 * sampled completion's own policy log-probs and ppl(a) from the policy's log-probs of the same tokens
 * after the prompt without its question. Weighted beside the verifiable reward (the authors: 0.2).
 * Null for an empty completion (no tokens to average).
 */
export function selfAlignedReward(): RewardFn {
  return async (input) => {
    const withQuestion = policyLogprobsOf(input, 'self-aligned');
    if (!input.policyLogprobsAfter)
      throw new Error(
        'reward "self-aligned" needs the policy\'s log-probs of the completion after another prompt (RewardInput.policyLogprobsAfter: set by grpo train on this thread; grpo reward, grpo serve-rewards and reward worker threads have none)',
      );
    if (withQuestion.every((logprob) => Number.isNaN(logprob))) return null;
    const withoutQuestion = await input.policyLogprobsAfter(promptWithoutQuestion(input.prompt));
    // Tokens the policy did not produce (tool output) stay out of both means.
    const aligned = withoutQuestion.map((logprob, t) => (Number.isNaN(withQuestion[t]!) ? Number.NaN : logprob));
    const answerOnly = perplexity(aligned);
    return Math.max((answerOnly - perplexity(withQuestion)) / (answerOnly + 1e-9), -1);
  };
}
