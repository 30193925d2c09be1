/**
 * PROF, the process consistency filter (#126; Ye et al. 2025, "Beyond Correctness: Harmonizing Process
 * and Outcome Rewards through RL Training", arXiv 2509.03403): a process reward model (PRM) does not
 * enter the reward; it picks which responses train. Per group, the correct and the incorrect responses
 * are ranked separately by how well the PRM agrees with the outcome, `removePerGroup` of them leave the
 * loss (correct ones the PRM scores lowest, incorrect ones it scores highest, split so the kept correct
 * and incorrect counts come out as even as possible), and GRPO's z-score is taken over the rest.
 *
 * Is: the filter and the advantage, exact to the authors' code (amazon-science/PROF-GRPO,
 * `prof_grpo_both/prof_ray_trainer.py`: `compute_verify_step_level_score`, `filter_trajectories`, then
 * verl's GRPO on the kept trajectories), with `grpo`'s z-score (sample std, ε 1e-6, as verl).
 * Is not: the PRM (Qwen2.5-Math-PRM-7B in the paper). Its mean step score per response is any reward of
 * the run, named by `processReward`; the step count is the `step-count` reward, named by `stepReward`.
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  resolveGroups,
  toRewardArray,
} from './advantages-groups.js';
import { grpoAdvantage } from './advantages.js';
import { epsilonOption, singletonGroupOption, stdOption } from './option-schemas.js';
import { Random, stepSeed } from '../tensor/index.js';

/** PROF's options (and `grpo`'s, for the z-score). */
export interface ProfAdvantageOptions {
  /** The run reward whose column is the PRM's mean step score v̄ of each response (required). */
  processReward?: string;
  /** The run reward whose column is each response's step count L (`step-count`); needed for `lengthPenalty`. */
  stepReward?: string;
  /** How many responses of each group leave the loss (their `prof_filter`; the paper's runs: 4 of 8). */
  removePerGroup?: number;
  /** c: subtracted from the consistency score when L < 2 or L > 30 (default 0 as their config; their scripts 10). */
  lengthPenalty?: number;
  /** Which incorrect responses leave: 'consistency' (PROF-GRPO "Both", default) or 'random' ("Correct"). */
  incorrect?: 'consistency' | 'random';
  /** 'random': the draw is seeded by this and the step (default 0). */
  seed?: number;
}

/** The column of the run reward `name`, and its weight in the combined reward. */
function column(input: AdvantageInput, name: string, option: string): { values: Float64Array; weight: number } {
  const k = input.rewardNames?.indexOf(name) ?? -1;
  if (k < 0 || !input.rewardComponents)
    throw new Error(`prof: ${option} "${name}" is not among the rewards (${(input.rewardNames ?? []).join(', ')})`);
  return {
    values: toRewardArray(input.rewardComponents[k], `rewardComponents[${k}]`),
    weight: input.rewardWeights?.[k] ?? 1,
  };
}

/** Python's round(): halves go to the even neighbour, as the authors' `round((delta + n_remove) / 2)`. */
const roundHalfEven = (x: number) => (Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x));

/**
 * Which responses PROF keeps (1) and the outcome r_o they train on: r_o is the combined reward without
 * the process and step rewards' weighted shares. The consistency score of response i is the authors'
 * mean over its steps of 2(v − m)(2r_o − 1) = 2(v̄ − m)(2r_o − 1), m the mean step score over the
 * batch's steps, minus c when L < 2 or L > 30. In a group of n scored responses, min(removePerGroup, n)
 * leave: P correct (r_o = 1), N incorrect (r_o = 0), k = min(remove, round((P − N + remove)/2)) lowest
 * scored correct ones, then the rest from the lowest scored incorrect ones (uniformly at random with
 * `incorrect: 'random'`); responses with any other r_o leave too, as theirs. A response without a
 * process score (or step count) is unscored.
 */
export function profSelection(
  input: AdvantageInput,
  options: ProfAdvantageOptions = {},
): { keep: Uint8Array; outcomes: Float64Array } {
  const { processReward, stepReward, removePerGroup, lengthPenalty = 0 } = options;
  if (processReward === undefined) throw new Error('prof needs options.processReward, the name of the PRM reward');
  if (removePerGroup === undefined || !(Number.isInteger(removePerGroup) && removePerGroup >= 0))
    throw new Error('prof needs options.removePerGroup, a whole number ≥ 0');
  if (lengthPenalty > 0 && stepReward === undefined)
    throw new Error('prof: lengthPenalty needs options.stepReward (the step-count reward)');
  const rewards = toRewardArray(input.rewards);
  const process = column(input, processReward, 'processReward');
  const steps = stepReward === undefined ? undefined : column(input, stepReward, 'stepReward');
  const outcomes = rewards.map(
    (r, i) =>
      r -
      (process.weight ? process.weight * process.values[i] : 0) -
      (steps?.weight ? steps.weight * steps.values[i] : 0),
  );
  const scored = (i: number) =>
    Number.isFinite(outcomes[i]) && Number.isFinite(process.values[i]) && (!steps || Number.isFinite(steps.values[i]));
  let stepTotal = 0;
  let scoreTotal = 0;
  rewards.forEach((_, i) => {
    if (!Number.isFinite(process.values[i])) return;
    const count = steps ? steps.values[i] : 1;
    stepTotal += count;
    scoreTotal += count * process.values[i];
  });
  const batchMean = scoreTotal / Math.max(stepTotal, 1);
  const consistency = (i: number) => {
    const count = steps ? steps.values[i] : 1;
    const penalty = count < 2 || count > 30 ? lengthPenalty : 0;
    return 2 * (process.values[i] - batchMean) * (2 * outcomes[i] - 1) - penalty;
  };
  const keep = new Uint8Array(rewards.length);
  const random = options.incorrect === 'random' ? new Random(stepSeed(options.seed ?? 0, input.step ?? 0)) : null;
  const layout = resolveGroups(rewards.length, input.groupSizes);
  for (let g = 0; g < layout.groupCount; g++) {
    const members = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k).filter(scored);
    const remove = Math.min(removePerGroup, members.length);
    if (remove <= 0) {
      members.forEach((i) => (keep[i] = 1));
      continue;
    }
    // Stable ascending sorts, as Python's list.sort: ties keep the group's order.
    const ranked = (label: number) =>
      members.filter((i) => Math.abs(outcomes[i] - label) < 1e-9).sort((a, b) => consistency(a) - consistency(b));
    const correct = ranked(1);
    const incorrect = ranked(0);
    const correctToRemove = Math.min(remove, roundHalfEven((correct.length - incorrect.length + remove) / 2));
    const removedCorrect = correctToRemove > 0 ? Math.min(correctToRemove, correct.length) : 0;
    const removedIncorrect = Math.min(remove - removedCorrect, incorrect.length);
    // "Correct" variant (prof_grpo_correct): the incorrect ones leave uniformly at random (partial Fisher–Yates).
    for (let j = 0; random && j < removedIncorrect; j++) {
      const pick = j + random.integer(incorrect.length - j);
      [incorrect[j], incorrect[pick]] = [incorrect[pick], incorrect[j]];
    }
    correct.slice(removedCorrect).forEach((i) => (keep[i] = 1));
    incorrect.slice(removedIncorrect).forEach((i) => (keep[i] = 1));
  }
  return { keep, outcomes };
}

/**
 * PROF advantage: `grpo`'s z-score of r_o over the responses `profSelection` keeps; the others get 0
 * and leave the loss. PROF (#126, arXiv 2509.03403); amazon-science/PROF-GRPO prof_ray_trainer.py.
 */
export function profAdvantage(
  input: AdvantageInput,
  options: AdvantageOptions & ProfAdvantageOptions = {},
): AdvantageResult {
  const { keep, outcomes } = profSelection(input, options);
  return grpoAdvantage({ ...input, rewards: Array.from(outcomes, (r, i) => (keep[i] ? r : null)) }, options);
}

const rewardName = (option: string, value: unknown, names: readonly string[]): string[] =>
  typeof value !== 'string' || names.includes(value)
    ? []
    : [`algorithm.advantageOptions.${option}: "${value}" is not a reward of this run (rewards: ${names.join(', ')})`];

/** `algorithm.advantage: prof`: the entry `grpo list` prints and configs name. */
export const profAdvantagePart = defineAdvantageEstimator({
  name: 'prof',
  fn: profAdvantage,
  description:
    'per group, drop removePerGroup responses: correct ones with the lowest PRM-outcome consistency, incorrect ones likewise, balancing the two; then grpo on the rest',
  citation: 'PROF (#126, arXiv 2509.03403), amazon-science/PROF-GRPO prof_ray_trainer.py filter_trajectories',
  needs: ['rewardComponents'],
  options: z
    .object({
      processReward: z.string().min(1).describe("the run reward giving the PRM's mean step score"),
      removePerGroup: z.number().int().nonnegative().describe('responses of each group that leave the loss'),
      stepReward: z.string().min(1).describe('the run reward counting steps (step-count)').optional(),
      lengthPenalty: z
        .number()
        .nonnegative()
        .describe('c, when a response has < 2 or > 30 steps (default 0)')
        .optional(),
      incorrect: z.enum(['consistency', 'random']).describe("'random': the paper's Correct variant").optional(),
      seed: z.number().int().describe("'random': the draw's seed, with the step (default 0)").optional(),
      epsilon: epsilonOption.optional(),
      std: stdOption.optional(),
      singletonGroup: singletonGroupOption.optional(),
    })
    .strict(),
  refuses: (options, settings) => [
    ...rewardName('processReward', options.processReward, settings.rewardNames),
    ...rewardName('stepReward', options.stepReward, settings.rewardNames),
    ...((options.lengthPenalty as number | undefined) && options.stepReward === undefined
      ? ['algorithm.advantageOptions.lengthPenalty: prof needs stepReward (the step-count reward) to count steps']
      : []),
  ],
});
