/**
 * The `rollout` section of the trainer config (zod, a doc line per field): where rollouts are
 * generated. 'local' is the in-process KV-cached sampler; 'openai' is an OpenAI-compatible
 * inference engine (vLLM, `grpo serve`) reached over HTTP, fed the LoRA adapter after every
 * optimiser step. Also the cross-field checks that refuse an 'openai' run before any compute.
 *
 * Is not: the HTTP client (engine-client.ts) or the rollout itself (openai-rollout.ts).
 */
import { z } from 'zod';

export const rolloutEngineSchema = z
  .object({
    engine: z
      .enum(['local', 'openai'])
      .default('local')
      .describe(
        "'local': the in-process sampler. 'openai': POST {baseUrl}/completions on an OpenAI-compatible engine (vLLM >= 0.10.2, `grpo serve`) with token-id prompts and return_token_ids; needs `lora` (the adapter is loaded into the engine after every optimiser step) and `algorithm.mismatchCorrection` (the trainer recomputes π_old).",
      ),
    baseUrl: z
      .string()
      .url()
      .optional()
      .describe("The engine's OpenAI base URL, with its /v1 (e.g. http://127.0.0.1:8000/v1)."),
    model: z
      .string()
      .min(1)
      .default('grpo-policy')
      .describe(
        'The name the trained LoRA adapter is loaded under (lora_name) and that rollout requests send as `model`.',
      ),
    apiKeyEnv: z
      .string()
      .optional()
      .describe('Name of the environment variable holding the API key sent as a Bearer token; absent = none.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(1)
      .describe(
        "Requests in flight per rollout round; the round's prompts are split into this many requests. With 1, `grpo serve` draws exactly the samples the local engine draws for the same seed.",
      ),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .default(600_000)
      .describe('Milliseconds one request may take (connect to last byte) before it counts as failed.'),
    retries: z
      .number()
      .int()
      .min(0)
      .max(100)
      .default(3)
      .describe(
        'Retries of a failed request (down, timeout, dropped connection, 5xx, malformed JSON) before the run stops.',
      ),
    retryDelayMs: z
      .number()
      .int()
      .min(0)
      .default(1000)
      .describe('Back-off before the first retry; doubled for each further one.'),
  })
  .strict();

export type RolloutEngineConfig = z.infer<typeof rolloutEngineSchema>;

/** Cross-field problems of an 'openai' rollout, one sentence each naming the field. */
export function rolloutEngineProblems(config: {
  rollout: RolloutEngineConfig;
  lora: unknown;
  algorithm: { mismatchCorrection: unknown };
}): string[] {
  if (config.rollout.engine !== 'openai') return [];
  const problems: string[] = [];
  if (!config.rollout.baseUrl)
    problems.push(
      "- rollout.baseUrl: rollout.engine 'openai' needs the engine's base URL (e.g. http://127.0.0.1:8000/v1)",
    );
  if (!config.lora)
    problems.push(
      "- lora: rollout.engine 'openai' needs LoRA: the trained weights reach the engine as an adapter after each step, and full weights cannot (set lora, e.g. --lora-rank 8)",
    );
  if (!config.algorithm.mismatchCorrection)
    problems.push(
      '- algorithm.mismatchCorrection: rollout.engine \'openai\' needs it (e.g. {"mode": "truncate"}): the engine\'s logprobs come from other kernels, so the trainer recomputes π_old and corrects by π_old/π_engine',
    );
  if (config.rollout.apiKeyEnv && process.env[config.rollout.apiKeyEnv] === undefined)
    problems.push(`- rollout.apiKeyEnv: the environment variable ${config.rollout.apiKeyEnv} is not set`);
  return problems;
}
