/**
 * `step-count`: how many reasoning steps a completion has, split the way PROF's process reward model
 * reads it (#126; amazon-science/PROF-GRPO `verl/workers/reward_model/prof_dp_rm.py`,
 * `compute_prm_step_rewards`): the trimmed text is split on blank lines ("\n\n"), each piece trimmed,
 * empty pieces dropped; a completion with no piece is one step; at most `maxSteps` count (their
 * `max_steps`, 100: the PRM scores no later step).
 *
 * Is: the count, logged beside the process reward (weight 0) so the `prof` advantage can apply the
 * authors' step-length penalty. Is not: a process reward — the step scores come from another reward.
 */
import { z } from 'zod';
import { define } from './factory-registry.js';
import type { RewardFn } from './types.js';

/**
 * The number of non-empty "\n\n"-separated steps of the completion (at least 1, at most `maxSteps`).
 * @example stepCount()(makeRewardInput({ completion: 'a\n\nb\n\n\n\nc' })) // 3
 */
export function stepCount({ maxSteps = 100 }: { maxSteps?: number } = {}): RewardFn {
  return ({ completion }) => {
    const steps = completion
      .trim()
      .split('\n\n')
      .filter((step) => step.trim() !== '').length;
    return Math.min(Math.max(steps, 1), maxSteps);
  };
}

export const stepCountFactory = define(
  'step-count',
  'number of non-empty "\\n\\n"-separated steps (at least 1, at most maxSteps = 100), as PROF\'s PRM splits a response',
  'PROF (#126, arXiv 2509.03403), amazon-science/PROF-GRPO prof_dp_rm.py',
  z.object({ maxSteps: z.number().int().positive().optional() }).strict(),
  stepCount,
);
