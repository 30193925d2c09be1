/**
 * The multi-turn rollout: G episodes per prompt, each in its own environment made by the recipe's
 * factory from the dataset row. Per turn: every live episode decodes from its own KV cache (all of
 * them in one batch), its tool calls are parsed and run — concurrently across episodes, each with a
 * timeout; an error or a timeout is an observation, never a crash — or, without calls, the
 * environment's `respond` answers; the template renders the results and only the new tokens are
 * appended (agent-episode.ts). An episode ends when the model answers ('stop'), the environment is
 * done ('env_done'), at `maxTurns` ('max_turns'), at the token budget ('length'), after
 * `maxToolErrors` failed calls ('tool_error') or past `episodeTimeoutMs` ('timeout').
 *
 * Is not: scoring (rewards see the episode through `RewardInput.episode`; the environment's own
 * `reward()` is computed here, before `close()`, and read by the reward named 'environment').
 */
import { detectToolCallFormat, parseToolCalls, toolDefinitions, type ToolCallFormat } from '../agents/tool-calls.js';
import { runToolCall } from '../agents/run-tools.js';
import type {
  Environment,
  EnvironmentFactory,
  Episode,
  EpisodeStopReason,
  ToolCall,
  ToolCallRecord,
} from '../agents/types.js';
import { exampleMessages } from '../data/examples.js';
import type { NamedReward } from '../rewards/types.js';
import { EpisodeDecoder } from '../sampling/index.js';
import { Random } from '../tensor/index.js';
import {
  assistantMessage,
  EpisodeRows,
  renderConversation,
  toolCallId,
  type AgentMessage,
  type EpisodeRendering,
} from './agent-episode.js';
import type { RolloutContext, RolloutFn, RolloutPrompt, RolloutSample, RolloutSettings } from './rollout.js';

/** The `agent` config section as the rollout uses it. */
export interface AgentSettings {
  maxTurns: number;
  toolTimeoutMs: number;
  toolCallFormat: 'auto' | ToolCallFormat;
  maxEpisodeTokens: number;
  maxToolErrors: number | null;
  episodeTimeoutMs: number | null;
}

/** What the rollout needs from a decoder: the KV-cached EpisodeDecoder, or a scripted policy in tests. */
export type TurnDecoder = Pick<EpisodeDecoder, 'add' | 'append' | 'decodeTurns'>;

/** Creates the decoder of one rollout call (default: an EpisodeDecoder over the context's model). */
export type TurnDecoderFactory = (context: RolloutContext, settings: RolloutSettings) => TurnDecoder;

const episodeDecoder: TurnDecoderFactory = (context, settings) =>
  new EpisodeDecoder(context.model, settings, settings.stopTokenIds);

interface LiveEpisode {
  environment: Environment;
  /** The episode's prompt within this rollout call (error messages name it). */
  promptIndex: number;
  rendering: EpisodeRendering;
  messages: AgentMessage[];
  rows: EpisodeRows;
  decoderIndex: number;
  random: Random;
  /** Completion tokens still allowed (the budget, also capped by the model's positions). */
  turns: number;
  turnRewards: (number | null)[];
  stateKeys: string[];
  toolCalls: ToolCallRecord[];
  lastTurnIds: number[];
  stopReason: EpisodeStopReason | null;
  started: number;
}

/** The tool-call format of a run: the configured one, or the one the template teaches. */
export function resolveToolCallFormat(setting: AgentSettings['toolCallFormat'], chatTemplate: string): ToolCallFormat {
  return setting === 'auto' ? detectToolCallFormat(chatTemplate) : setting;
}

/** The name the environments' own reward is configured by (`rewards: [{ name: 'environment' }]`). */
export const ENVIRONMENT_REWARD = 'environment';

/** The reward named 'environment': what the episode's environment `reward()` returned (null = none). */
export function environmentReward(weight = 1): NamedReward {
  return {
    name: ENVIRONMENT_REWARD,
    weight,
    reward: (input) => {
      const episode = input.episode;
      if (!episode) return null;
      if (episode.environmentRewardError) throw new Error(`environment reward(): ${episode.environmentRewardError}`);
      return episode.environmentReward ?? null;
    },
  };
}

/** A rollout that runs agent episodes in the environments `factory` makes. */
export function multiTurnRollout(
  factory: EnvironmentFactory,
  agent: AgentSettings,
  createDecoder: TurnDecoderFactory = episodeDecoder,
): RolloutFn {
  const rollout: RolloutFn = async (context, prompts, settings) => {
    const chatTemplate = context.chatTemplate === undefined ? context.tokenizer.chatTemplate : context.chatTemplate;
    if (!chatTemplate)
      throw new Error('agent: multi-turn rollouts render tool results through a chat template; set model.chatTemplate');
    const format = resolveToolCallFormat(agent.toolCallFormat, chatTemplate);
    const decoder = createDecoder(context, settings);
    const episodes = await Promise.all(
      prompts.flatMap((prompt, p) =>
        Array.from({ length: settings.groupSize }, (_, g) =>
          startEpisode(context, decoder, factory, prompt, { chatTemplate, format, agent, settings, p, g }),
        ),
      ),
    );
    while (episodes.some((episode) => episode.stopReason === null))
      await runTurn(context, decoder, episodes, agent, settings);
    return Promise.all(
      episodes.map((episode, i) => finishEpisode(context, episode, Math.floor(i / settings.groupSize))),
    );
  };
  rollout.provides = ['toolCalls', 'turns'];
  return rollout;
}

async function startEpisode(
  context: RolloutContext,
  decoder: TurnDecoder,
  factory: EnvironmentFactory,
  prompt: RolloutPrompt,
  options: {
    chatTemplate: string;
    format: ToolCallFormat;
    agent: AgentSettings;
    settings: RolloutSettings;
    p: number;
    g: number;
  },
): Promise<LiveEpisode> {
  const { settings, p, g } = options;
  const seed = settings.seed * 1_000_003 + p * 7919 + g;
  const environment = await inEnvironment('the environment factory', p, () =>
    factory(prompt.example, {
      seed,
      episodeIndex: p * settings.groupSize + g,
      groupSeed: settings.seed * 1_000_003 + p * 7919,
    }),
  );
  const extra = (await inEnvironment('environment reset()', p, async () => environment.reset?.())) ?? undefined;
  const messages: AgentMessage[] = [...exampleMessages(prompt.example), ...(extra?.messages ?? [])];
  const tools = environment.tools ?? [];
  const rendering: EpisodeRendering = {
    tokenizer: context.tokenizer,
    chatTemplate: options.chatTemplate,
    variables: tools.length > 0 ? { tools: toolDefinitions(tools) } : {},
    format: options.format,
  };
  const text = renderConversation(rendering, messages);
  const promptIds = context.tokenizer.encode(text, { addSpecialTokens: false });
  const random = new Random(seed);
  const rows = new EpisodeRows(promptIds, text);
  const episode: LiveEpisode = {
    environment,
    promptIndex: p,
    rendering,
    messages,
    rows,
    decoderIndex: decoder.add(promptIds, random, promptIds.length + options.agent.maxEpisodeTokens + 1),
    random,
    turns: 0,
    turnRewards: [],
    stateKeys: [],
    toolCalls: [],
    lastTurnIds: [],
    stopReason: null,
    started: Date.now(),
  };
  if (tokensLeft(context, episode, options.agent) <= 0) episode.stopReason = 'length';
  return episode;
}

/**
 * Runs the recipe's environment code; a throw stops the step with the member and the prompt named
 * (environment code is the recipe's own, unlike tool calls, whose errors are observations).
 */
async function inEnvironment<T>(member: string, promptIndex: number, work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new Error(
      `environment ${member} failed for prompt ${promptIndex} of the step: ${(error as Error)?.message ?? String(error)}`,
    );
  }
}

/** Completion tokens the episode may still add: its budget, and the model's positions for the current row. */
function tokensLeft(context: RolloutContext, episode: LiveEpisode, agent: AgentSettings): number {
  const budget = agent.maxEpisodeTokens - episode.rows.completionTokens;
  return Math.min(budget, context.model.config.maxPositionEmbeddings - episode.rows.positions);
}

/** One turn of every live episode: decode (batched), then tools / feedback (concurrent), then the next context. */
async function runTurn(
  context: RolloutContext,
  decoder: TurnDecoder,
  episodes: LiveEpisode[],
  agent: AgentSettings,
  settings: RolloutSettings,
): Promise<void> {
  const live = episodes.filter((episode) => episode.stopReason === null);
  for (const episode of live) if (episode.environment.stateKey) episode.stateKeys.push(episode.environment.stateKey());
  const decoded = decoder.decodeTurns(
    live.map((episode) => episode.decoderIndex),
    live.map((episode) => Math.min(settings.maxNewTokens, tokensLeft(context, episode, agent))),
  );
  await Promise.all(
    live.map(async (episode, k) => {
      const { ids, logprobs, finishReason } = decoded[k];
      const turn = episode.turns++;
      episode.turnRewards.push(null);
      episode.lastTurnIds = ids;
      const stopped = finishReason === 'stop';
      const special = stopped && context.tokenizer.specialTokenIds.has(ids[ids.length - 1]);
      const { content: text } = episode.rows.addTurn(ids, logprobs, turn, context.tokenizer, special);
      if (!stopped) return void (episode.stopReason = 'length');
      const parsed = parseToolCalls(text, episode.rendering.format);
      episode.messages.push(assistantMessage(text, parsed.calls, episode.rendering.format, turn));
      if (parsed.calls.length + parsed.errors.length > 0) await runCalls(episode, parsed, turn, agent);
      else if (episode.environment.respond) {
        const respond = episode.environment.respond.bind(episode.environment);
        const feedback = await inEnvironment('environment respond()', episode.promptIndex, async () =>
          respond(parsed.content),
        );
        episode.turnRewards[turn] = feedback.reward ?? null;
        if (feedback.done) episode.stopReason = 'env_done';
        else if (feedback.observation === undefined) episode.stopReason = 'stop';
        else episode.messages.push({ role: 'user', content: feedback.observation });
      } else episode.stopReason = 'stop';
      if (episode.stopReason === null) episode.stopReason = stopAfterTurn(episode, agent);
    }),
  );
  for (const episode of live) if (episode.stopReason === null) layNextContext(context, decoder, episode, agent);
}

/** Runs a turn's calls concurrently; results become 'tool' messages in call order. */
async function runCalls(
  episode: LiveEpisode,
  parsed: { calls: ToolCall[]; errors: string[] },
  turn: number,
  agent: AgentSettings,
): Promise<void> {
  const tools = episode.environment.tools ?? [];
  const requests = [...parsed.calls, ...parsed.errors.map((error) => ({ error }))];
  const records = await Promise.all(
    requests.map((call) => runToolCall(tools, call, { turn, timeoutMs: agent.toolTimeoutMs })),
  );
  records.forEach((record, index) => {
    episode.toolCalls.push(record);
    episode.messages.push({
      role: 'tool',
      content: record.result,
      name: record.name,
      tool_call_id: toolCallId(record, turn, index),
    });
  });
}

/** Why the episode ends after a turn that did not end it by itself, or null to go on. */
function stopAfterTurn(episode: LiveEpisode, agent: AgentSettings): EpisodeStopReason | null {
  if (episode.environment.done?.()) return 'env_done';
  const failed = episode.toolCalls.filter((call) => call.error !== undefined).length;
  if (agent.maxToolErrors !== null && failed >= agent.maxToolErrors) return 'tool_error';
  if (agent.episodeTimeoutMs !== null && Date.now() - episode.started > agent.episodeTimeoutMs) return 'timeout';
  if (episode.turns >= agent.maxTurns) return 'max_turns';
  return null;
}

/** Renders the conversation and appends its new tokens, or starts a new row where the template rewrote history. */
function layNextContext(
  context: RolloutContext,
  decoder: TurnDecoder,
  episode: LiveEpisode,
  agent: AgentSettings,
): void {
  const rendered = renderConversation(episode.rendering, episode.messages);
  const next = episode.rows.extend(rendered, context.tokenizer);
  if (next.kind === 'append') {
    // The observation and at least one sampled token must fit, else the episode ends here.
    if (next.ids.length + 1 > tokensLeft(context, episode, agent)) return void (episode.stopReason = 'length');
    decoder.append(episode.decoderIndex, next.ids);
    episode.rows.appendObservation(next.ids, rendered);
    return;
  }
  episode.rows.startRow(next.promptIds, rendered);
  if (tokensLeft(context, episode, agent) < 1) return void (episode.stopReason = 'length');
  episode.decoderIndex = decoder.add(
    next.promptIds,
    episode.random,
    next.promptIds.length + agent.maxEpisodeTokens + 1,
  );
}

/**
 * The environment's per-call rewards onto the calls, and each turn with scored calls gets their mean
 * as its turn reward (MatchTIR's `process_reward[turn] /= count_per_turn[turn]`).
 */
async function scoreToolCalls(environment: Environment, episode: LiveEpisode): Promise<void> {
  const calls = episode.toolCalls;
  const rewards = await inEnvironment('environment scoreToolCalls()', episode.promptIndex, async () =>
    environment.scoreToolCalls!(calls),
  );
  if (!Array.isArray(rewards) || rewards.length !== calls.length)
    throw new Error(
      `environment scoreToolCalls() for prompt ${episode.promptIndex} of the step returned ${Array.isArray(rewards) ? rewards.length : typeof rewards} rewards for ${calls.length} tool calls; it must return one number or null per call`,
    );
  const perTurn = new Map<number, number[]>();
  calls.forEach((call, index) => {
    const reward = rewards[index] as number | null;
    if (reward !== null && !Number.isFinite(reward))
      throw new Error(
        `environment scoreToolCalls() for prompt ${episode.promptIndex} of the step: reward ${index} is ${String(reward)}, not a finite number or null`,
      );
    call.reward = reward;
    if (reward !== null) perTurn.set(call.turn, [...(perTurn.get(call.turn) ?? []), reward]);
  });
  for (const [turn, values] of perTurn)
    episode.turnRewards[turn] = values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** The environment's reward (before close), then the sample: first row, continuation rows, the episode. */
async function finishEpisode(
  context: RolloutContext,
  episode: LiveEpisode,
  promptIndex: number,
): Promise<RolloutSample> {
  const finished: Episode = {
    messages: episode.messages,
    toolCalls: episode.toolCalls,
    turns: episode.turns,
    turnRewards: episode.turnRewards,
    stopReason: episode.stopReason!,
    environment: episode.environment,
  };
  if (episode.environment.scoreToolCalls && episode.toolCalls.length > 0)
    await scoreToolCalls(episode.environment, episode);
  let environmentRewardValue: number | null | undefined;
  let environmentRewardError: string | undefined;
  try {
    environmentRewardValue = episode.environment.reward ? await episode.environment.reward(finished) : null;
  } catch (error) {
    environmentRewardError = (error as Error)?.message ?? String(error);
  }
  await episode.environment.close?.();
  const [first, ...continuationRows] = episode.rows.rows;
  return {
    promptIndex,
    promptIds: first.promptIds,
    completionIds: first.completionIds,
    oldLogprobs: first.oldLogprobs,
    lossMask: first.lossMask,
    tokenTurns: first.tokenTurns,
    continuationRows: continuationRows.length > 0 ? continuationRows : undefined,
    text: context.tokenizer.decode(episode.lastTurnIds, { skipSpecialTokens: true }),
    truncated: episode.stopReason === 'length',
    toolCalls: episode.toolCalls.length,
    turns: episode.turns,
    episode: { ...finished, environmentReward: environmentRewardValue, environmentRewardError },
    stateKeys: episode.environment.stateKey ? episode.stateKeys : undefined,
  };
}
