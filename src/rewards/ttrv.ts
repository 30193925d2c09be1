/**
 * TTRV's reward (papers.tsv 64; Singh et al. 2025, "TTRV: Test-Time Reinforcement Learning for
 * Vision Language Models", arXiv 2510.06783): label-free, the frequency of a sample's answer in its
 * group minus a weighted entropy of the group's answer distribution,
 *   r_i = n(a_i)/N − w·H/log K,   H = −Σ_a (n(a)/N)·log(n(a)/N),
 * K the number of distinct answers (H/log K is 0 when K = 1 or N = 1), w = 0.75.
 *
 * Checked against the authors' code (Akshit21112002/TTRV,
 * `verl/verl/utils/reward_score/ttrl/ttt_metrics.py`, `test_time_train_metrics`: `rewards_en`):
 * w = 0.75 there; a completion without an answer is one more answer (their extractor returns "" for
 * it, and "" is counted, scored and in the entropy like any other answer). Where this differs:
 * answers are extracted and grouped as `majority-vote` does (`vote.ts`: `math-answer`'s extraction,
 * 0.5 = 1/2), theirs by the string their math parser extracts; and the vote is over the training
 * group itself, where theirs votes over `n_votes_per_prompt` samples and trains on the first
 * `n_samples_per_prompt` (TTRL's split).
 *
 * The entropy term is the same for every sample of a group, so an estimator with a per-group baseline
 * (GRPO's z-score, which the authors train with; Dr. GRPO, RLOO) cancels it exactly: it moves the
 * advantage only where the baseline is not the group's (`single-stream`, `trpa`'s raw reward), and it
 * shows in the logged reward.
 *
 * Is not: `vote-frequency` (the frequency term alone, with a no-answer sample scored 0).
 */
import { answerClasses, type VoteOptions } from './vote.js';
import { groupReward, type GroupReward } from './types.js';

/** Options of {@link ttrvReward}: the entropy weight and `majority-vote`'s extraction knobs. */
export interface TtrvOptions extends VoteOptions {
  /** w, the weight of the normalised answer entropy (the authors' 0.75). */
  entropyWeight?: number;
}

/**
 * r_i = n(a_i)/N − w·H/log K over the group's answers, no answer being one more answer.
 * @example
 * ttrvReward().scoreGroup(['4', '4', '5', 'none'].map((completion) => makeRewardInput({ completion })));
 * // [−0.2098, −0.2098, −0.4598, −0.4598]: frequencies 0.5, 0.5, 0.25, 0.25 minus 0.75·0.9464
 */
export function ttrvReward({ entropyWeight = 0.75, ...voteOptions }: TtrvOptions = {}): GroupReward {
  return groupReward((inputs) => {
    const total = inputs.length;
    // No answer (−1) is a class of its own, as the authors' "" is.
    const classes = answerClasses(
      inputs.map((input) => input.completion),
      voteOptions,
    );
    const counts = new Map<number, number>();
    for (const answer of classes) counts.set(answer, (counts.get(answer) ?? 0) + 1);
    let entropy = 0;
    for (const count of counts.values()) entropy -= (count / total) * Math.log(count / total);
    const normalised = total > 1 && counts.size > 1 ? entropy / Math.log(counts.size) : 0;
    return classes.map((answer) => counts.get(answer)! / total - entropyWeight * normalised);
  });
}
