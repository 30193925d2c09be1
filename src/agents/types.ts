/**
 * Agent types: what a user writes to train on multi-turn, tool-using episodes. An environment is
 * created per episode from its dataset row (TRL's `environment_factory`), offers tools (plain async
 * functions with a described argument schema), may add context on `reset()`, may answer a turn that
 * called no tool (`respond`, for games and dialogue), and may score the episode over its own state.
 *
 * This file is types only: no parsing, no sandboxing, no model. Tool-call parsing lives in
 * `tool-calls.ts`, the built-in tools and environments beside it, the multi-turn rollout in
 * `trainer/`. The agents layer imports only `rewards/` (strings and JSON, never tensors).
 */
import type { z } from 'zod';
import type { ChatMessage } from '../rewards/types.js';

/** A JSON-schema object describing a tool's arguments (what chat templates render under `tools`). */
export type JsonSchema = Record<string, unknown>;

/** What a tool's `run` receives besides its arguments. */
export interface ToolContext {
  /** Aborted when the call's timeout passes; long-running tools should honour it. */
  signal: AbortSignal;
}

/**
 * A tool the model may call. `parameters` is a zod object (checked before `run`) or a JSON schema
 * (rendered as is; arguments passed unchecked). `run` returns the observation: a string, or any
 * JSON value (rendered with JSON.stringify). A throw or a timeout becomes an error observation.
 */
export interface Tool {
  name: string;
  description: string;
  parameters: z.ZodType | JsonSchema;
  run(args: Record<string, unknown>, context: ToolContext): unknown;
  /** Per-call limit in milliseconds (the rollout's `toolTimeoutMs` when omitted). */
  timeoutMs?: number;
}

/** The OpenAI / Hugging Face shape of a tool definition, as chat templates receive it in `tools`. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

/** One parsed tool call. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
}

/** One executed tool call and what came back. */
export interface ToolCallRecord extends ToolCall {
  /** Model turn (0-based) that made the call. */
  turn: number;
  /** The observation text the model was shown. */
  result: string;
  /** Set when the call failed (unknown tool, bad arguments, malformed call, throw, timeout). */
  error?: string;
  milliseconds: number;
  /**
   * The call's own reward (call correctness, query quality), from the environment's
   * `scoreToolCalls`; absent or null = not scored. The turn's reward is the mean of its scored calls.
   */
  reward?: number | null;
}

/** Why an episode ended. */
export type EpisodeStopReason = 'stop' | 'length' | 'max_turns' | 'tool_error' | 'env_done' | 'timeout';

/** The environment's answer to a model turn that called no tool (`respond`), or to a step. */
export interface EnvironmentFeedback {
  /** Shown to the model as the next user message; omitted when the episode ends here. */
  observation?: string;
  /** Reward of the turn just taken (placed on that turn's last token). */
  reward?: number;
  done: boolean;
}

/** A finished episode as rewards and credit estimators see it. */
export interface Episode {
  /** The whole conversation: the prompt's messages, then assistant, tool and user turns in order. */
  messages: readonly ChatMessage[];
  toolCalls: readonly ToolCallRecord[];
  /** Model turns taken. */
  turns: number;
  /**
   * Per model turn: the reward the environment gave for it (null = none) — `respond`'s reward for a
   * turn without calls, the mean of its scored calls (`scoreToolCalls`) for a turn with calls.
   */
  turnRewards: readonly (number | null)[];
  stopReason: EpisodeStopReason;
  /** The environment the episode ran in (its state, for `reward()` and custom rewards). */
  environment?: Environment;
}

/**
 * One episode's world. Every member is optional: an environment with only `tools` is a tool-use
 * task; one with only `respond` is a multi-turn game or dialogue.
 */
export interface Environment {
  tools?: readonly Tool[];
  /** Called once before the first turn; may return extra messages appended after the prompt. */
  reset?(): Promise<{ messages?: ChatMessage[] } | void> | { messages?: ChatMessage[] } | void;
  /** Answers a model turn that made no tool call. Without it such a turn ends the episode ('stop'). */
  respond?(assistantText: string): Promise<EnvironmentFeedback> | EnvironmentFeedback;
  /** True once the environment's task is over (checked after each turn; ends with 'env_done'). */
  done?(): boolean;
  /**
   * A key of the environment's current state, read after reset and after every turn: equal keys in
   * different episodes of a group are the same anchor state (GiGPO's step-level groups).
   */
  stateKey?(): string;
  /**
   * Scores the episode's tool calls, once after its last turn (before `reward()`), all together so a
   * scorer may match them against reference calls (MatchTIR): one reward per call, in order, null =
   * not scored. A turn that made calls gets the mean of its scored calls as its turn reward
   * (`Episode.turnRewards`), which the turn-credit estimators read.
   */
  scoreToolCalls?(calls: readonly ToolCallRecord[]): readonly (number | null)[] | Promise<readonly (number | null)[]>;
  /** The episode's reward over the environment's own state (a reward named 'environment'). */
  reward?(episode: Episode): number | null | Promise<number | null>;
  /** Releases what the environment holds (processes, connections); called once per episode. */
  close?(): Promise<void> | void;
}

/** Creates the environment of one episode from its dataset row. */
export type EnvironmentFactory = (
  row: Readonly<Record<string, unknown>>,
  context: {
    seed: number;
    episodeIndex: number;
    /**
     * The same for the G episodes of one prompt in one rollout and different between groups, so an
     * environment can start a whole group from one shared state (RLVER's simulated user opens once
     * per group). Absent where a caller builds environments one by one.
     */
    groupSeed?: number;
  },
) => Environment | Promise<Environment>;
