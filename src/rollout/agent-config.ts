/**
 * The `agent` section of the trainer config (zod, a doc line per field): multi-turn tool-use
 * episodes. It is only valid together with a recipe's `environment` factory (and that only with
 * it): setup refuses either alone before any compute.
 *
 * Is not: the rollout (multi-turn-rollout.ts) or the environment types (agents/types.ts).
 */
import { z } from 'zod';

export const agentSchema = z
  .object({
    maxTurns: z
      .number()
      .int()
      .min(1)
      .max(1000, 'must be at most 1000')
      .default(4)
      .describe("Model turns per episode; an episode still calling tools after this many ends with 'max_turns'."),
    toolTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe(
        'Per-call limit of a tool (a tool may set its own); a call past it becomes an error observation and the episode goes on.',
      ),
    toolCallFormat: z
      .enum(['auto', 'hermes', 'llama3', 'mistral'])
      .default('auto')
      .describe(
        "Tool-call syntax the model writes: 'hermes' (<tool_call>{json}</tool_call>, Qwen), 'llama3' (a JSON object, optionally after <|python_tag|>), 'mistral' ([TOOL_CALLS][…]); 'auto' reads it from the chat template.",
      ),
    maxEpisodeTokens: z
      .number()
      .int()
      .min(1)
      .max(1_000_000, 'must be at most 1000000')
      .default(1024)
      .describe(
        "Completion tokens per episode, sampled and observation tokens together (sampling.maxNewTokens caps each turn); reaching it ends the episode with 'length'.",
      ),
    maxToolErrors: z
      .number()
      .int()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        "End an episode with 'tool_error' once this many of its calls failed (null = errors are only observations).",
      ),
    episodeTimeoutMs: z
      .number()
      .int()
      .positive()
      .nullable()
      .default(null)
      .describe("Wall-clock limit of an episode, checked after each turn ('timeout'); null = none."),
  })
  .strict();
