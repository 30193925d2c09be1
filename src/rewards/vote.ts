/**
 * Label-free group rewards from the group's own answers (test-time RL): no dataset answer is read.
 *
 * - `majorityVote` (TTRL, Zuo et al. 2025, arXiv 2504.16084; papers.tsv 136 builds on it): the most
 *   common extracted final answer of the group is the pseudo-label; a sample scores 1 when its answer
 *   matches it, else 0. Checked against the authors' code (PRIME-RL/TTRL
 *   `verl/verl/trainer/ppo/ttrl_utils.py`, `_majority_vote`): completions with no extractable answer
 *   do not vote (and score 0); when none has an answer, every sample scores 0 (their label "None");
 *   a tie goes to the answer seen first in sampling order (Python's `Counter.most_common`).
 * - `voteFrequency` (TTRV, papers.tsv 64: the "frequency reward"): the share of the group whose answer
 *   matches this sample's, the group size (no-answer samples included, as TTRL's majority ratio
 *   counts them) in the denominator; a sample with no answer scores 0.
 *
 * Answers are grouped by equivalence (`answersMatch`: 0.5 and 1/2 are one answer), where the
 * authors compare simplified strings; each answer joins the first earlier class it matches.
 *
 * Is not: answer extraction or comparison (`math/`), or TTRL's vote-over-64, train-on-32 split (the
 * vote here is over the training group itself).
 */
import { extractFinalAnswer, type ExtractOptions } from './math/extract.js';
import { answersMatch, type VerifyOptions } from './math/verify.js';
import { groupReward, type GroupReward, type RewardInput } from './types.js';

/** Where to find answers and how to compare them (the `math-answer` reward's knobs). */
export type VoteOptions = ExtractOptions & VerifyOptions;

/** Each completion's answer class (index into the classes, by first appearance), or −1 without an answer. */
export function answerClasses(completions: readonly string[], options: VoteOptions = {}): number[] {
  const representatives: string[] = [];
  return completions.map((completion) => {
    const extracted = extractFinalAnswer(completion, options);
    if (extracted === null || extracted.statement.trim() === '') return -1;
    const found = representatives.findIndex((answer) => answersMatch(extracted.statement, answer, options));
    if (found >= 0) return found;
    representatives.push(extracted.statement);
    return representatives.length - 1;
  });
}

/** Votes per class; the majority is the largest count, the earliest class on a tie; −1 when nothing voted. */
function tally(classes: readonly number[]): { counts: number[]; majority: number } {
  const counts: number[] = [];
  for (const answer of classes) if (answer >= 0) counts[answer] = (counts[answer] ?? 0) + 1;
  let majority = -1;
  counts.forEach((count, answer) => {
    if (majority < 0 || count > counts[majority]) majority = answer;
  });
  return { counts, majority };
}

const completionsOf = (inputs: readonly RewardInput[]) => inputs.map((input) => input.completion);

/**
 * TTRL's majority-vote reward: 1 when the sample's final answer matches the group's most common one.
 * @example
 * majorityVote().scoreGroup(['so 4', 'it is 4', '5'].map((completion) => makeRewardInput({ completion }))); // [1, 1, 0]
 */
export function majorityVote(options: VoteOptions = {}): GroupReward {
  return groupReward((inputs) => {
    const classes = answerClasses(completionsOf(inputs), options);
    const { majority } = tally(classes);
    return classes.map((answer) => (majority >= 0 && answer === majority ? 1 : 0));
  });
}

/**
 * TTRV's frequency reward: the share of the group whose final answer matches this sample's.
 * @example
 * voteFrequency().scoreGroup(['4', '4', '5', 'none'].map((completion) => makeRewardInput({ completion }))); // [0.5, 0.5, 0.25, 0]
 */
export function voteFrequency(options: VoteOptions = {}): GroupReward {
  return groupReward((inputs) => {
    const classes = answerClasses(completionsOf(inputs), options);
    const { counts } = tally(classes);
    return classes.map((answer) => (answer >= 0 ? counts[answer] / inputs.length : 0));
  });
}
