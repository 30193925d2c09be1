/**
 * TRL-shaped reward functions: one call over a whole batch of completions, with the prompts, the
 * completions, their token ids and every dataset column as parallel lists, returning one score per
 * completion (`null` = not applicable), as TRL's `reward_func(prompts, completions, **kwargs)` does.
 * `batchedReward(fn)` marks such a function so the runner (`run.ts`) calls it once per step.
 *
 * Why a wrapper and not a guess: a batched function and a per-sample one are both plain functions
 * of one argument, so nothing about a function tells them apart; the wrapper says it explicitly.
 *
 * Is not: the runner (timeouts, the failure policy: `run.ts`) or a per-sample reward (`types.ts`).
 */
import type { BatchReward, ChatMessage, RewardInput, RewardValue } from './types.js';

/**
 * What a batched reward receives: the lists TRL passes, index i of each list is completion i. Every
 * column of the dataset rows is a list too (`answer[i]` is the answer of completion i's row).
 */
export interface RewardBatch {
  prompts: (string | readonly ChatMessage[])[];
  completions: string[];
  completionIds: (readonly number[])[];
  /** True where generation stopped at the token limit. */
  truncated: boolean[];
  /** The dataset columns, each as a list (a column a row lacks is `undefined` there). */
  [column: string]: unknown[];
}

/** What else a batched reward may use: the training step and the call's abort signal (timeouts). */
export interface RewardBatchContext {
  step: number;
  signal?: AbortSignal;
}

/** A TRL-shaped reward function: the batch in, one score (or null) per completion out. */
export type BatchedRewardFn = (
  batch: RewardBatch,
  context: RewardBatchContext,
) => readonly RewardValue[] | Promise<readonly RewardValue[]>;

/** The reserved list names; a dataset column with one of these names is reachable only through the rows. */
const reserved = new Set(['prompts', 'completions', 'completionIds', 'truncated']);

/** The batch lists of `inputs`: prompts, completions, ids, and one list per dataset column. */
export function rewardBatchOf(inputs: readonly RewardInput[]): RewardBatch {
  const columns = new Set<string>();
  for (const input of inputs) for (const key of Object.keys(input.row)) if (!reserved.has(key)) columns.add(key);
  const batch: RewardBatch = {
    prompts: inputs.map((input) => input.prompt),
    completions: inputs.map((input) => input.completion),
    completionIds: inputs.map((input) => input.completionIds),
    truncated: inputs.map((input) => input.truncated ?? false),
  };
  for (const column of columns) batch[column] = inputs.map((input) => input.row[column]);
  return batch;
}

/**
 * Marks a TRL-shaped function as a batched reward: the runner calls it once with every completion
 * of a step (and of an evaluation), with the same failure handling as a per-sample reward — a throw,
 * a timeout or a list of the wrong length fails every completion of that call, never scores 0.
 * `name` (default: the function's name) names its metrics, `reward/<name>/mean`.
 *
 * @example
 * ```ts
 * const exact = batchedReward(
 *   ({ completions, answer }) => completions.map((completion, i) => (completion.trim() === answer[i] ? 1 : 0)),
 *   'exact',
 * );
 * new GRPOTrainer({ rewardFunctions: [exact], trainDataset: 'train.jsonl' });
 * ```
 */
export function batchedReward(fn: BatchedRewardFn, name = fn.name): BatchReward & { readonly name: string } {
  return {
    scope: 'batch',
    name,
    scoreBatch: (inputs, signal) => fn(rewardBatchOf(inputs), { step: inputs[0]?.step ?? 0, signal }),
  };
}
