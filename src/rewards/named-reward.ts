/**
 * A reward named inside another reward's options (`{ name, options }`: the correctness check of
 * refine-trust, masa and smartsearch, Posterior-GRPO's outcome, process and format parts), built by
 * name and, for the run's refusal of missing columns, the row columns it reads.
 *
 * Is not: the registry (factories.ts passes its `createReward` and `columnsOfReward` in, so these
 * files do not import it back).
 */
import { z } from 'zod';
import type { RewardContext } from './factory-registry.js';
import { isGroupReward, type Reward, type RewardColumn, type RewardFn } from './types.js';

/** Builds a reward by name from its JSON options (the registry's `createReward`, passed in to avoid an import cycle). */
export type CreateReward = (name: string, options?: unknown) => Reward;

/** The row columns a built-in reads with these options (the registry's `columnsOfReward`, passed in likewise). */
export type ColumnsOfReward = (name: string, options?: unknown) => RewardColumn[];

/** A reward named in another reward's options: `{ name, options }`. */
export const namedReward = z
  .object({ name: z.string().min(1), options: z.record(z.string(), z.unknown()).optional() })
  .strict();

/** A reward named in options, as parsed. */
export type NamedRewardChoice = z.infer<typeof namedReward>;

const mathAnswer: NamedRewardChoice = { name: 'math-answer', options: {} };

/**
 * The per-completion reward `choice` names; unnamed, the run's task check when training, else
 * `fallback` (`math-answer`). A group reward is refused, naming the reward and the option.
 */
export function perCompletionReward(
  createReward: CreateReward,
  rewardName: string,
  field: string,
  choice: NamedRewardChoice | undefined,
  context: RewardContext,
  fallback: NamedRewardChoice = mathAnswer,
): RewardFn {
  if (choice === undefined && context.taskCorrectness) return context.taskCorrectness;
  const { name, options } = choice ?? fallback;
  const reward = createReward(name, options);
  if (isGroupReward(reward))
    throw new Error(`reward "${rewardName}": ${field} "${name}" is a group reward; it must score one completion`);
  return reward;
}

/**
 * The row columns of the reward `perCompletionReward` picks: none for the run's task check, else the
 * named (or `fallback`) reward's, each named as this reward's `field` option.
 */
export function perCompletionColumns(
  columnsOfReward: ColumnsOfReward,
  field: string,
  choice: NamedRewardChoice | undefined,
  context: RewardContext,
  fallback: NamedRewardChoice = mathAnswer,
): RewardColumn[] {
  if (choice === undefined && context.taskCorrectness) return [];
  const { name, options } = choice ?? fallback;
  return columnsOfReward(name, options).map(({ column, option }) => ({
    column,
    option: `${field} "${name}"'s ${option ?? 'column'}`,
  }));
}
