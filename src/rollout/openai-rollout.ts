/**
 * Rollouts on an OpenAI-compatible inference engine (vLLM >= 0.10.2, `grpo serve`): each round's
 * prompts go to POST {baseUrl}/completions as token ids with n = group size, the sampling settings,
 * the stop ids, logprobs = 0 and vLLM's return_token_ids, and the samples are built from the
 * engine's own token ids and logprobs (never from re-tokenised text). The engine serves the policy
 * as a LoRA adapter: `publishAdapter` writes the current adapter in PEFT format into the run folder
 * and calls POST {baseUrl}/load_lora_adapter with load_inplace, before every step's rollout.
 *
 * Is not: the π_old recomputation and mismatch correction (grpo-step.ts, required by the config for
 * this engine) or the HTTP retries (engine-client.ts).
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeAdapterFiles } from '../model/adapter-files.js';
import type { Transformer } from '../model/transformer.js';
import { EngineClient } from './engine-client.js';
import type { RolloutEngineConfig } from './rollout-engine-config.js';
import type { RolloutFn, RolloutSample } from './rollout.js';

/** The folder of a run where the adapter the engine serves is written (replaced every step). */
export const ENGINE_ADAPTER_FOLDER = 'engine-adapter';

export function engineClientFor(config: RolloutEngineConfig): EngineClient {
  if (!config.baseUrl) throw new Error("rollout.baseUrl: rollout.engine 'openai' needs the engine's base URL");
  return new EngineClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKeyEnv ? process.env[config.apiKeyEnv] : undefined,
    timeoutMs: config.timeoutMs,
    retries: config.retries,
    retryDelayMs: config.retryDelayMs,
  });
}

interface EngineChoice {
  ids: number[];
  logprobs: number[];
  truncated: boolean;
}

const isIdList = (value: unknown): value is number[] =>
  Array.isArray(value) && value.every((id) => Number.isInteger(id) && id >= 0);

/** The choices of a completions answer in index order, checked against what was asked. */
function parseChoices(text: string, prompts: number[][], n: number): EngineChoice[] {
  const answer = JSON.parse(text) as { choices?: unknown };
  if (!Array.isArray(answer?.choices)) throw new Error('no "choices" list');
  const expected = prompts.length * n;
  if (answer.choices.length !== expected)
    throw new Error(`${answer.choices.length} choices for ${prompts.length} prompt(s) × n = ${n}`);
  const byIndex: EngineChoice[] = new Array(expected);
  answer.choices.forEach((raw: Record<string, unknown>, position: number) => {
    const index = Number.isInteger(raw?.index) ? (raw.index as number) : position;
    const where = `choices[${position}]`;
    if (index < 0 || index >= expected || byIndex[index]) throw new Error(`${where}.index ${index} is out of place`);
    if (!isIdList(raw.token_ids))
      throw new Error(`${where}.token_ids is missing (the engine must support return_token_ids, e.g. vLLM >= 0.10.2)`);
    if (raw.prompt_token_ids !== undefined && raw.prompt_token_ids !== null) {
      const prompt = prompts[Math.floor(index / n)];
      if (!isIdList(raw.prompt_token_ids) || raw.prompt_token_ids.join(',') !== prompt.join(','))
        throw new Error(`${where}.prompt_token_ids differ from the prompt sent`);
    }
    const logprobs = (raw.logprobs as { token_logprobs?: unknown } | null)?.token_logprobs;
    if (
      !Array.isArray(logprobs) ||
      logprobs.length !== raw.token_ids.length ||
      !logprobs.every((value) => typeof value === 'number' && Number.isFinite(value))
    )
      throw new Error(`${where}.logprobs.token_logprobs is missing or not one finite number per token`);
    if (raw.finish_reason !== 'stop' && raw.finish_reason !== 'length')
      throw new Error(`${where}.finish_reason is ${JSON.stringify(raw.finish_reason)}, not "stop" or "length"`);
    byIndex[index] = { ids: raw.token_ids, logprobs: logprobs as number[], truncated: raw.finish_reason === 'length' };
  });
  return byIndex;
}

/**
 * The 'openai' RolloutFn. The round's prompts are split into `concurrency` contiguous requests;
 * request k carries seed + k (with concurrency 1, one request with the round's seed: exactly the
 * local engine's draws on `grpo serve`).
 */
export function openaiRollout(config: RolloutEngineConfig): RolloutFn {
  const client = engineClientFor(config);
  return async ({ tokenizer }, prompts, settings) => {
    const n = settings.groupSize;
    const perRequest = Math.ceil(prompts.length / Math.min(config.concurrency, Math.max(1, prompts.length)));
    const chunks: number[][][] = [];
    for (let first = 0; first < prompts.length; first += perRequest)
      chunks.push(prompts.slice(first, first + perRequest).map((prompt) => prompt.promptIds));
    const answers = await Promise.all(
      chunks.map((chunk, k) =>
        client.post(
          'completions',
          {
            model: config.model,
            prompt: chunk,
            n,
            max_tokens: settings.maxNewTokens,
            temperature: settings.temperature,
            top_p: settings.topP,
            top_k: settings.topK > 0 ? settings.topK : -1,
            min_p: settings.minP,
            stop_token_ids: settings.stopTokenIds,
            seed: settings.seed + k,
            logprobs: 0,
            return_token_ids: true,
            skip_special_tokens: true,
          },
          (text) => parseChoices(text, chunk, n),
        ),
      ),
    );
    return answers.flat().map((choice, index): RolloutSample => ({
      promptIndex: Math.floor(index / n),
      completionIds: choice.ids,
      oldLogprobs: choice.logprobs,
      lossMask: choice.ids.map(() => 1),
      text: tokenizer.decode(choice.ids, { skipSpecialTokens: true }),
      truncated: choice.truncated,
    }));
  };
}

/**
 * Writes the model's adapter (PEFT files) to `{runDirectory}/engine-adapter` and has the engine
 * load it in place under `config.model`, so the next rollout samples from the current policy.
 */
export async function publishAdapter(
  config: RolloutEngineConfig,
  model: Transformer,
  runDirectory: string,
  baseModel: string | null,
): Promise<void> {
  if (!model.adapters) throw new Error("rollout.engine 'openai' needs LoRA adapters on the model (set lora)");
  const folder = resolve(join(runDirectory, ENGINE_ADAPTER_FOLDER));
  mkdirSync(folder, { recursive: true });
  writeAdapterFiles(folder, model.adapters, baseModel);
  await engineClientFor(config).post(
    'load_lora_adapter',
    { lora_name: config.model, lora_path: folder, load_inplace: true },
    () => undefined,
  );
}
