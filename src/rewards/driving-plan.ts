/**
 * AlphaDrive's planning rewards (#69, Jiang et al. 2025, arXiv 2503.07608): a driving plan is one
 * SPEED meta-action (KEEP, ACCELERATE, DECELERATE, STOP) and one PATH meta-action (STRAIGHT,
 * RIGHT_CHANGE, LEFT_CHANGE, RIGHT_TURN, LEFT_TURN) written as `<answer> KEEP, LEFT_TURN </answer>`.
 * Three rewards, as the authors' `plan_speed_reward`, `plan_path_reward` and `plan_format_reward`
 * (hustvl/AlphaDrive src/r1-v/src/open_r1/grpo.py, read in its fork mr-d-self-driving/AlphaDrive at
 * bb4104c):
 *
 *   speed / path = F1 · complexity + diversity
 *     F1          precision/recall of the completion's action set against the gold set, each with
 *                 +1e-6 in its denominator; 0 when both sets are empty.
 *     complexity  the mean "action weight" of the completion's actions (÷ (n + 1e-6)); speed weights
 *                 ACCELERATE 0.9, DECELERATE 1, STOP 1, KEEP 0.8; path weights 1 for turns and lane
 *                 changes, STRAIGHT 0.8 (the paper's action-weighted reward: rarer, riskier actions weigh more).
 *     diversity   +0.4 when none of the completion's actions was already in an earlier completion of
 *                 its group (sampling order), else −0.4 (the paper's planning-diversity reward). The
 *                 authors count over one reward call, which in their launch script (one prompt per
 *                 device, `num_generations` samples) is exactly one group.
 *   format = 1 when the whole completion is `<think>…</think>` then `<answer>…</answer>` (whitespace
 *            between allowed), else 0.
 *
 * Parsing follows the authors' code exactly: the text between the first `<answer>` and `</answer>`
 * (or the whole completion with the tags removed when there is none), trimmed, split on ", " (comma
 * and one space); only pieces that are exactly an action name of that reward's kind count. So
 * "KEEP,STRAIGHT" has no action, and a plan with no speed action still earns the +0.4 diversity
 * (Python's `all([])` is true), as theirs does. A gold answer without `<answer>` tags scores 0.
 *
 * Where the paper and code differ: the paper writes the planning quality reward as a product
 * (accuracy × action weight × diversity); the code adds the diversity term. This follows the code.
 *
 * Is not: the driving data (MetaAD, camera images); see the `driving-planning` task for the generated text scenes.
 */
import type { RewardFn, RewardInput } from './types.js';

/** The action weights of the SPEED plan (the authors' defaults). */
export const SPEED_ACTION_WEIGHTS: Readonly<Record<string, number>> = {
  ACCELERATE: 0.9,
  DECELERATE: 1.0,
  STOP: 1.0,
  KEEP: 0.8,
};

/** The action weights of the PATH plan (the authors' defaults). */
export const PATH_ACTION_WEIGHTS: Readonly<Record<string, number>> = {
  LEFT_TURN: 1.0,
  RIGHT_TURN: 1.0,
  LEFT_CHANGE: 1.0,
  RIGHT_CHANGE: 1.0,
  STRAIGHT: 0.8,
};

export interface PlanRewardOptions {
  /** Column with the gold plan, `<answer> DECELERATE, LEFT_TURN </answer>` (default `solution`, as the authors' data). */
  solutionColumn?: string;
  /** Size of the diversity bonus and penalty (default 0.4). */
  diversityWeight?: number;
  /** Weight of each action that counts; names not here are ignored (default: the authors' table of this kind). */
  actionWeights?: Record<string, number>;
}

const ANSWER = /<answer>(.*?)<\/answer>/;

/** The answer text as the authors read it: the first tagged span, else the completion with the tags removed. */
function answerText(completion: string): string {
  const match = ANSWER.exec(completion);
  return match ? match[1]!.trim() : completion.replaceAll('<answer>', '').replaceAll('</answer>', '');
}

/** The completion's actions of one kind: pieces between ", " that are exactly a known name. */
export function planActions(completion: string, weights: Readonly<Record<string, number>>): Set<string> {
  return new Set(
    answerText(completion)
      .split(', ')
      .filter((word) => Object.hasOwn(weights, word)),
  );
}

/** F1 of a predicted action set against the gold one, with the authors' 1e-6 guards; 0 when both are empty. */
export function planF1(predicted: ReadonlySet<string>, gold: ReadonlySet<string>): number {
  const truePositives = [...predicted].filter((action) => gold.has(action)).length;
  const falsePositives = predicted.size - truePositives;
  const falseNegatives = [...gold].filter((action) => !predicted.has(action)).length;
  if (truePositives === 0 && falsePositives === 0 && falseNegatives === 0) return 0;
  const precision = truePositives / (truePositives + falsePositives + 1e-6);
  const recall = truePositives / (truePositives + falseNegatives + 1e-6);
  return (2 * (precision * recall)) / (precision + recall + 1e-6);
}

function planReward(kind: 'speed' | 'path', options: PlanRewardOptions): RewardFn {
  const weights = options.actionWeights ?? (kind === 'speed' ? SPEED_ACTION_WEIGHTS : PATH_ACTION_WEIGHTS);
  const column = options.solutionColumn ?? 'solution';
  const diversityWeight = options.diversityWeight ?? 0.4;
  return ({ completion, row, group, indexInGroup }: RewardInput) => {
    const solution = row[column];
    if (typeof solution !== 'string')
      throw new Error(`reward "plan-${kind}": the row has no string column "${column}" (the gold plan)`);
    const goldMatch = ANSWER.exec(solution);
    if (!goldMatch) return 0;
    const gold = new Set(
      goldMatch[1]!
        .trim()
        .split(', ')
        .filter((word) => Object.hasOwn(weights, word)),
    );
    const actions = planActions(completion, weights);
    const complexity = [...actions].reduce((sum, action) => sum + weights[action]!, 0) / (actions.size + 1e-6);
    // Diversity: an action is new when no earlier completion of the group planned it (the authors' running Counter).
    const earlier = group.slice(0, indexInGroup).map((other) => planActions(other, weights));
    const novel = [...actions].every((action) => earlier.every((seen) => !seen.has(action)));
    return planF1(actions, gold) * complexity + (novel ? diversityWeight : -diversityWeight);
  };
}

/**
 * AlphaDrive's speed-planning reward: F1 · action weight ± 0.4 diversity (see the file header).
 * @example planSpeed()(makeRewardInput({ completion: '<answer> STOP, STRAIGHT </answer>', row: { solution: '<answer> STOP, STRAIGHT </answer>' } })) // ≈ 1.4
 */
export function planSpeed(options: PlanRewardOptions = {}): RewardFn {
  return planReward('speed', options);
}

/**
 * AlphaDrive's path-planning reward: F1 · action weight ± 0.4 diversity (see the file header).
 * @example planPath()(makeRewardInput({ completion: '<answer> KEEP, LEFT_TURN </answer>', row: { solution: '<answer> KEEP, LEFT_TURN </answer>' } })) // ≈ 1.4
 */
export function planPath(options: PlanRewardOptions = {}): RewardFn {
  return planReward('path', options);
}

const FORMAT = /^<think>[\s\S]*?<\/think>\s*<answer>[\s\S]*?<\/answer>$/;

/**
 * AlphaDrive's planning format reward: 1 when the whole completion is `<think>…</think>` then
 * `<answer>…</answer>` (Python `re.fullmatch` with DOTALL), else 0.
 * @example planFormat()(makeRewardInput({ completion: '<think>red light</think> <answer> STOP, STRAIGHT </answer>' })) // 1
 */
export function planFormat(): RewardFn {
  return ({ completion }) => (FORMAT.test(completion) ? 1 : 0);
}
