/**
 * Co-Reward (papers.tsv 94; Zhang et al. 2025, "Co-Reward: Self-supervised Reinforcement Learning
 * for Large Language Model Reasoning via Contrastive Agreement", arXiv 2508.00410): a label-free
 * reward where a question and its rephrasing label each other. The pseudo-label of the original
 * question's group is the majority answer of the rephrased question's group, and the other way
 * round; a completion scores 1 when its final answer equals its group's pseudo-label, else 0.
 *
 * Checked against the authors' code (resistzzz/Co-Reward, `coreward/verl/workers/reward_manager/
 * co_reward.py`, `CoRewardManager.__call__` and `majority_vote`): completions without an answer do
 * not vote and score 0; when the partner group has no answer at all the label is empty and every
 * sample scores 0; a tie goes to the answer seen first (Python's `Counter.most_common`). Their
 * advantage (`compute_advantage_contrastive`, `co_reward`) is GRPO's, over each group separately:
 * here the rephrasing is a group of its own, so any estimator applies unchanged.
 *
 * Where this differs from their code, and why: answers are extracted and compared as `majority-vote`
 * does (`vote.ts`: `math-answer`'s extraction, equivalence such as 0.5 = 1/2), where they take the
 * last `\boxed{}` and compare strings; `requireBoxed: true` restricts extraction to boxed answers as
 * theirs. With more than two rows sharing a key (several rephrasings), a group's label is the
 * majority over all the other groups of its key; with two, as in the paper, it is the partner's.
 *
 * The pairing: rows sharing the value of `pairColumn` are one question and its rephrasing. Both
 * must be in the same step, which `grpo.drawTogether` (set to the same column) guarantees; a group
 * whose partner is not in the step is left unscored (`null`).
 *
 * Is not: the rephrasing itself (the paper rewrites MATH questions with Qwen3-32B offline; here the
 * data carries the rephrasings), or the vote's answer extraction (`math/`).
 */
import { extractFinalAnswer } from './math/extract.js';
import { answersMatch } from './math/verify.js';
import type { VoteOptions } from './vote.js';
import type { BatchReward, RewardInput, RewardValue } from './types.js';

/** Options of {@link coReward}: the pairing column, and `majority-vote`'s extraction and comparison knobs. */
export interface CoRewardOptions extends VoteOptions {
  /** The dataset column whose value a question shares with its rephrasing (default `pair_id`). */
  pairColumn?: string;
}

/** One prompt's completions inside the flat batch: where they start, how many, and the pairing key. */
interface BatchGroup {
  start: number;
  size: number;
  key: string;
}

/** The batch's groups, contiguous, each starting at `indexInGroup` 0 (the runner's order). */
function groupsOf(inputs: readonly RewardInput[], pairColumn: string): BatchGroup[] {
  const groups: BatchGroup[] = [];
  let start = 0;
  while (start < inputs.length) {
    const first = inputs[start]!;
    const size = Math.max(1, first.group.length);
    if (first.indexInGroup !== 0 || start + size > inputs.length)
      throw new Error(`reward "co-reward": the batch is not whole groups (sample ${start} opens no group)`);
    const value = first.row[pairColumn];
    if (value === undefined || value === null || value === '')
      throw new Error(`reward "co-reward": a row has no "${pairColumn}" column (options.pairColumn names the pairing)`);
    groups.push({ start, size, key: String(value) });
    start += size;
  }
  return groups;
}

/** The answer of a completion, or null without one (empty answers do not vote, as the authors' filter). */
function answerOf(completion: string, options: VoteOptions): string | null {
  const extracted = extractFinalAnswer(completion, options);
  return extracted === null || extracted.statement.trim() === '' ? null : extracted.statement;
}

/**
 * The majority answer among `answers` (nulls do not vote), the earliest on a tie, answers joined by
 * `answersMatch`; null when nothing voted.
 */
function majorityAnswer(answers: readonly (string | null)[], options: VoteOptions): string | null {
  const representatives: string[] = [];
  const counts: number[] = [];
  for (const answer of answers) {
    if (answer === null) continue;
    const found = representatives.findIndex((other) => answersMatch(answer, other, options));
    if (found >= 0) counts[found]!++;
    else {
      representatives.push(answer);
      counts.push(1);
    }
  }
  let best = -1;
  counts.forEach((count, index) => {
    if (best < 0 || count > counts[best]!) best = index;
  });
  return best < 0 ? null : representatives[best]!;
}

/**
 * Co-Reward: r = 1[answer = majority answer of the partner groups (same `pairColumn` value)], 0 for
 * no answer or an empty label, `null` for a group without a partner in the step.
 * @example
 * // an original question and its rephrasing (both rows { pair_id: 'q1' }), two completions each:
 * // original ['4', '5'] is labelled by the rephrasing's vote (4): [1, 0];
 * // rephrased ['4', '4'] by the original's (a tie, won by the first seen, 4): [1, 1].
 */
export function coReward({ pairColumn = 'pair_id', ...voteOptions }: CoRewardOptions = {}): BatchReward {
  return {
    scope: 'batch',
    scoreBatch(inputs) {
      const groups = groupsOf(inputs, pairColumn);
      const answers = inputs.map((input) => answerOf(input.completion, voteOptions));
      const scores: RewardValue[] = new Array<RewardValue>(inputs.length).fill(null);
      for (const group of groups) {
        const partners = groups.filter((other) => other !== group && other.key === group.key);
        if (partners.length === 0) continue;
        const label = majorityAnswer(
          partners.flatMap((partner) => answers.slice(partner.start, partner.start + partner.size)),
          voteOptions,
        );
        for (let index = group.start; index < group.start + group.size; index++) {
          const answer = answers[index];
          scores[index] = label !== null && answer !== null && answersMatch(answer, label, voteOptions) ? 1 : 0;
        }
      }
      return scores;
    },
  };
}
