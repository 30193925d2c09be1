/**
 * Reward function types: what a reward sees (strings, token ids, dataset columns, its group, the
 * step) and what it returns (a number, or `null` for "not applicable").
 *
 * This file is types only. It knows nothing about tensors, models or how rewards are run; the
 * runner with timeouts and the failure policy is `run.ts`, combination is `combine.ts`.
 */

/** One chat message, as in the OpenAI chat format. */
export interface ChatMessage {
  role: string;
  content: string;
}

/** One tool call of an episode as rewards see it (the agents layer's ToolCallRecord has this shape). */
export interface RewardToolCall {
  name: string;
  arguments: Readonly<Record<string, unknown>>;
  /** Model turn (0-based) that made the call. */
  turn: number;
  /** The observation text the model was shown. */
  result: string;
  /** Set when the call failed (unknown tool, bad arguments, malformed call, throw, timeout). */
  error?: string;
  /** The call's own reward from the environment's `scoreToolCalls` (absent or null = not scored). */
  reward?: number | null;
}

/**
 * A multi-turn episode as rewards see it (agents' `Episode` is one): the whole conversation, every
 * tool call with its result, per-turn rewards and why it ended. Declared here, not imported, because
 * rewards/ sits below agents/.
 */
export interface RewardEpisode {
  messages: readonly ChatMessage[];
  toolCalls: readonly RewardToolCall[];
  turns: number;
  turnRewards: readonly (number | null)[];
  stopReason: string;
  /** The environment the episode ran in (its own state; typed by the recipe that made it). */
  environment?: unknown;
  /** What the environment's `reward()` returned (the reward named 'environment' reads it); null = none. */
  environmentReward?: number | null;
  /** Set when the environment's `reward()` threw: the 'environment' reward fails with it (the failure policy applies). */
  environmentRewardError?: string;
}

/** Everything a reward may look at for one completion. */
export interface RewardInput {
  /** The prompt as plain text, or as chat messages for conversational datasets. */
  prompt: string | readonly ChatMessage[];
  /** The decoded completion text (untrusted model output). */
  completion: string;
  /** The completion's token ids (empty when only text is known, e.g. from the CLI). */
  completionIds: readonly number[];
  /** The dataset row's columns (e.g. `answer`, `tests`, `schema`). */
  row: Readonly<Record<string, unknown>>;
  /** The other completions for the same prompt, this one included, in sampling order. */
  group: readonly string[];
  /** This completion's position inside `group`. */
  indexInGroup: number;
  /** The training step (0-based); lets rewards anneal or schedule themselves. */
  step: number;
  /** True when generation stopped at the max-token limit rather than at a stop token. */
  truncated?: boolean;
  /** Aborted when the runner gives up on this call (timeout); long-running rewards should honour it. */
  signal?: AbortSignal;
  /** The whole episode, for completions of multi-turn rollouts (`completion` is then the last assistant turn). */
  episode?: RewardEpisode;
  /**
   * Per completion token (aligned with `completionIds`): its log-probability under the policy that
   * sampled it, as the sampler saw it (logits / temperature), NaN for tokens the policy did not
   * produce (tool output). Set by `grpo train` (and its evaluation) and by `grpo reward` from a
   * `policy_logprobs` column; absent from `grpo serve-rewards`, where a reward that needs it fails
   * with `policyLogprobsOf`'s error.
   */
  policyLogprobs?: readonly number[];
  /**
   * Per token of `completionIds` (default: this completion's), its log-probability after `prompt`
   * under the policy that sampled this step, at the sampling temperature, without gradient — what
   * `policyLogprobs` are for the row's own prompt. `prompt` takes the row's prompt's place and is
   * rendered as the run renders its prompts (chat template, images). For rewards that compare the
   * completion under another context (SAR: without the question). Set by `grpo train` (and its held-out
   * evaluation, at temperature 1 as the greedy answers' own); absent
   * from `grpo reward`, `grpo serve-rewards` and reward worker threads, where a reward that needs it
   * throws one sentence naming itself (`self-aligned`).
   */
  policyLogprobsAfter?: (
    prompt: string | readonly ChatMessage[],
    completionIds?: readonly number[],
  ) => Promise<number[]>;
  /** Per completion token (aligned with `completionIds`): its text alone. Set by `grpo train`; `scope` finds reasoning steps with it. */
  completionTokenTexts?: readonly string[];
}

/** A reward score: a finite number, or `null` when the reward does not apply to this sample. */
export type RewardValue = number | null;

/** A per-completion reward: a plain, optionally async function. Parameterised rewards are factories returning one. */
export type RewardFn = (input: RewardInput) => RewardValue | Promise<RewardValue>;

/**
 * A reward that needs the whole group at once (pairwise win-rate, length among correct peers).
 * It receives every completion of one prompt and returns one score per completion, in order.
 */
export interface GroupReward {
  /** Marks the group form; per-completion rewards are plain functions. */
  readonly scope: 'group';
  scoreGroup(
    inputs: readonly RewardInput[],
    signal?: AbortSignal,
  ): readonly RewardValue[] | Promise<readonly RewardValue[]>;
}

/**
 * A reward that scores many completions in one call, the shape TRL's reward functions have (one
 * list in, one score per completion out): the runner calls it once with every completion of a step
 * (or of an evaluation), across prompts. Made by `batchedReward` (`batched.ts`).
 */
export interface BatchReward {
  /** Marks the batch form; per-completion rewards are plain functions. */
  readonly scope: 'batch';
  scoreBatch(
    inputs: readonly RewardInput[],
    signal?: AbortSignal,
  ): readonly RewardValue[] | Promise<readonly RewardValue[]>;
}

/** A per-completion or group reward: what the reward factories make. */
export type Reward = RewardFn | GroupReward;

/** Any form of reward a run scores with: the factories' forms, or a batched (TRL-shaped) one. */
export type AnyReward = Reward | BatchReward;

/** Wraps a group-scoring function as a {@link GroupReward}. */
export function groupReward(
  scoreGroup: (
    inputs: readonly RewardInput[],
    signal?: AbortSignal,
  ) => readonly RewardValue[] | Promise<readonly RewardValue[]>,
): GroupReward {
  return { scope: 'group', scoreGroup };
}

/** True when `reward` is the group form. */
export function isGroupReward(reward: AnyReward): reward is GroupReward {
  return typeof reward !== 'function' && reward.scope === 'group';
}

/** True when `reward` is the batch form. */
export function isBatchReward(reward: AnyReward): reward is BatchReward {
  return typeof reward !== 'function' && reward.scope === 'batch';
}

/** A weight that may change with the training step (annealing schedules, see `combine.ts`). */
export type RewardWeight = number | ((step: number) => number);

/** A reward with its name and weight in the combination. Weight 0 = logged metric only. */
export interface NamedReward {
  name: string;
  reward: AnyReward;
  weight: RewardWeight;
  /** The row columns it cannot score without (a built-in declares them); checked against the rows before scoring. */
  columns?: readonly RewardColumn[];
  /** It scores an agent episode's tool calls (a built-in declares it); refused before scoring on a single-turn run. */
  needsToolCalls?: boolean;
}

/** A row column a reward reads; `option`: the option that named it (for the error message), if any. */
export interface RewardColumn {
  column: string;
  option?: string;
}

/** Fills the fields a caller often does not have (ids, group, step) for a single completion. */
export function makeRewardInput(partial: Partial<RewardInput> & { completion: string }): RewardInput {
  return {
    prompt: partial.prompt ?? '',
    completion: partial.completion,
    completionIds: partial.completionIds ?? [],
    row: partial.row ?? {},
    group: partial.group ?? [partial.completion],
    indexInGroup: partial.indexInGroup ?? 0,
    step: partial.step ?? 0,
    truncated: partial.truncated,
    signal: partial.signal,
    episode: partial.episode,
    policyLogprobs: partial.policyLogprobs,
    policyLogprobsAfter: partial.policyLogprobsAfter,
    completionTokenTexts: partial.completionTokenTexts,
  };
}

/** Reads a string column from a row, with an error naming the column when it is missing or not a string. */
export function stringColumn(row: Readonly<Record<string, unknown>>, column: string, rewardName: string): string {
  const value = row[column];
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new Error(
    `${rewardName}: dataset row has no string column "${column}" (got ${value === undefined ? 'nothing' : typeof value})`,
  );
}

/** Text of the last message if the prompt is a chat, else the prompt itself. */
export function promptText(prompt: RewardInput['prompt']): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.map((message) => message.content).join('\n');
}
