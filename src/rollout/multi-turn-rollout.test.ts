/**
 * The multi-turn rollout's episode logic, driven by a scripted policy (what the model "says" is a
 * function of the context it was fed) over the real TinyStories tokenizer: the trained rows are
 * exactly the ids the policy was fed and sampled, observation tokens carry mask 0 and logprob 0,
 * tool calls run (a hanging one times out and the episode goes on, a malformed one becomes an error
 * observation), every stop reason fires where it should, and a template that rewrites history
 * splits the episode into rows that each extend exactly. The KV-cached decoding itself is checked
 * against full forwards in sampling/episode-decoder.test.ts and in the real-model case below.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EnvironmentFactory, Tool } from '../agents/types.js';
import { loadCheckpoint } from '../model/checkpoint.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { noGrad } from '../tensor/index.js';
import { environmentReward, multiTurnRollout, type AgentSettings, type TurnDecoder } from './multi-turn-rollout.js';
import type { RolloutContext, RolloutPrompt, RolloutSample, RolloutSettings } from './rollout.js';
import { completionLogprobs } from '../trainer/completion-logprobs.js';
import { makeRewardInput } from '../rewards/types.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const fixture = tinyStoriesModel;
/** The scripted cases need JSON characters, which TinyStories' vocabulary lacks: a character tokenizer. */
const tokenizer = new CharTokenizer();
const storiesTokenizer = loadTokenizer(fixture);
const checkpoint = loadCheckpoint(fixture);
const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
const STOP = tokenizer.eosTokenId; // <eos>: the scripted template's end of an assistant turn

/** A plain chat template (assistant turns end with the stop token); `stripThinking` drops earlier <think> blocks as Qwen3 does. */
const template = (stripThinking: boolean, endOfTurn: string = '<eos>'): string =>
  `{% for m in messages %}{% if m.role == 'assistant' %}{{ 'Assistant:' + (${stripThinking ? "m.content.split('</think>') | last" : 'm.content'}) + '${endOfTurn}\n' }}{% else %}{{ m.role + ': ' + m.content + '\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}`;

/** A policy that says `say(context)` each turn; records every sequence it was fed, sampled ids included. */
class ScriptedPolicy implements TurnDecoder {
  readonly fed: number[][] = [];
  /** Sampled ids handed out, over all turns. */
  sampled = 0;
  constructor(private readonly say: (context: string) => string) {}
  add(promptIds: readonly number[]): number {
    this.fed.push([...promptIds]);
    return this.fed.length - 1;
  }
  append(episode: number, ids: readonly number[]): void {
    this.fed[episode].push(...ids);
  }
  decodeTurns(episodes: readonly number[], maxTokens: readonly number[]) {
    return episodes.map((episode, k) => {
      const text = this.say(tokenizer.decode(this.fed[episode], { skipSpecialTokens: false }));
      const full = [...tokenizer.encode(text, { addSpecialTokens: false }), STOP];
      const ids = full.slice(0, maxTokens[k]);
      this.fed[episode].push(...ids);
      this.sampled += ids.length;
      return {
        ids,
        logprobs: ids.map((_, t) => -0.25 - t / 100),
        finishReason: ids.length === full.length ? ('stop' as const) : ('length' as const),
      };
    });
  }
}

const calculator: Tool = {
  name: 'calculator',
  description: 'Evaluates a product a*b.',
  parameters: z.object({ expression: z.string().regex(/^\d+\*\d+$/) }),
  run: ({ expression }) =>
    String(
      (expression as string)
        .split('*')
        .map(Number)
        .reduce((a, b) => a * b),
    ),
};
const hanging: Tool = {
  name: 'hang',
  description: 'Never answers.',
  parameters: { type: 'object', properties: {} },
  run: () => new Promise(() => {}),
  timeoutMs: 50,
};

const call = (name: string, args: object): string =>
  `<tool_call>{"name": "${name}", "arguments": ${JSON.stringify(args)}}</tool_call>`;

const agent: AgentSettings = {
  maxTurns: 4,
  toolTimeoutMs: 1000,
  toolCallFormat: 'hermes',
  maxEpisodeTokens: 400,
  maxToolErrors: null,
  episodeTimeoutMs: null,
};
const settings: RolloutSettings = {
  groupSize: 1,
  maxNewTokens: 120,
  temperature: 1,
  topK: 0,
  topP: 1,
  minP: 0,
  stopTokenIds: [STOP],
  seed: 3,
};
const prompt = (question: string): RolloutPrompt => ({
  example: { prompt: [{ role: 'user', content: question }], answer: '84' },
  promptIds: [],
});

async function run(
  say: (context: string) => string,
  environment: EnvironmentFactory,
  options: { agent?: Partial<AgentSettings>; stripThinking?: boolean; groupSize?: number } = {},
): Promise<{ samples: RolloutSample[]; policy: ScriptedPolicy }> {
  const policy = new ScriptedPolicy(say);
  const context: RolloutContext = { model, tokenizer, chatTemplate: template(options.stripThinking ?? false) };
  const rollout = multiTurnRollout(environment, { ...agent, ...options.agent }, () => policy);
  const samples = await rollout(context, [prompt('What is 12*7?')], { ...settings, groupSize: options.groupSize ?? 1 });
  return { samples, policy };
}

/** Every row of a sample, first row included. */
const rowsOf = (sample: RolloutSample) => [
  {
    promptIds: sample.promptIds!,
    completionIds: sample.completionIds,
    lossMask: sample.lossMask,
    oldLogprobs: sample.oldLogprobs,
  },
  ...(sample.continuationRows ?? []),
];

/** The rows are exactly what the policy was fed and sampled; observation tokens are masked with logprob 0. */
function expectTokenExact(sample: RolloutSample, fed: number[][]): void {
  const rows = rowsOf(sample);
  expect(rows.map((row) => [...row.promptIds, ...row.completionIds])).toEqual(fed);
  for (const row of rows) {
    expect(row.lossMask.length).toBe(row.completionIds.length);
    row.lossMask.forEach((mask, t) => {
      if (mask === 0) expect(row.oldLogprobs[t]).toBe(0);
      else expect(row.oldLogprobs[t]).toBeLessThan(0);
    });
  }
}

describe('multiTurnRollout', () => {
  it('runs a tool call, appends its result masked, and ends when the model answers', async () => {
    const environment: EnvironmentFactory = () => ({
      tools: [calculator],
      reward: (episode) => (episode.messages.at(-1)!.content.includes('84') ? 1 : 0),
    });
    const { samples, policy } = await run(
      (context) => (context.includes('tool: 84') ? 'The answer is 84.' : call('calculator', { expression: '12*7' })),
      environment,
    );
    const [sample] = samples;
    expectTokenExact(sample, policy.fed);
    expect(sample.episode!.stopReason).toBe('stop');
    expect(sample.turns).toBe(2);
    expect(sample.toolCalls).toBe(1);
    expect(sample.episode!.toolCalls[0]).toMatchObject({ name: 'calculator', result: '84', turn: 0 });
    expect(sample.episode!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(sample.text.trim()).toBe('The answer is 84.');
    expect(sample.tokenTurns!.filter((turn) => turn === -1).length).toBe(sample.lossMask.filter((m) => m === 0).length);
    // The observation is "tool: 84\nAssistant:" as the template renders it, between the two turns.
    const observation = sample.completionIds.filter((_, t) => sample.lossMask[t] === 0);
    expect(tokenizer.decode(observation)).toContain('tool: 84');
    expect(sample.episode!.environmentReward).toBe(1);
    const reward = environmentReward().reward as (input: ReturnType<typeof makeRewardInput>) => number | null;
    expect(reward(makeRewardInput({ completion: sample.text, episode: sample.episode }))).toBe(1);
  });

  it('gives the episodes of one group the same groupSeed and other groups another', async () => {
    const contexts: { seed: number; episodeIndex: number; groupSeed?: number }[] = [];
    const environment: EnvironmentFactory = (_row, context) => (contexts.push(context), {});
    const policy = new ScriptedPolicy(() => 'Fine.');
    const rollout = multiTurnRollout(environment, agent, () => policy);
    const context: RolloutContext = { model, tokenizer, chatTemplate: template(false) };
    await rollout(context, [prompt('A?'), prompt('B?')], { ...settings, groupSize: 2 });
    const byEpisode = [...contexts].sort((a, b) => a.episodeIndex - b.episodeIndex);
    expect(new Set(byEpisode.map((c) => c.seed)).size).toBe(4);
    const [a, b, c, d] = byEpisode.map((c) => c.groupSeed);
    expect(a).toBe(b);
    expect(c).toBe(d);
    expect(a).not.toBe(c);
  });

  it('times out a hanging tool and goes on with the episode', async () => {
    // The tool's promise never settles: the episode can only go on because the 50 ms limit fired.
    const { samples, policy } = await run(
      (context) => (context.includes('timed out') ? 'I give up.' : call('hang', {})),
      () => ({ tools: [calculator, hanging] }),
    );
    const [sample] = samples;
    expect(sample.episode!.toolCalls[0].error).toMatch(/timed out after 50 ms/);
    expect(sample.turns).toBe(2);
    expect(sample.episode!.stopReason).toBe('stop');
    expectTokenExact(sample, policy.fed);
  });

  it.each([
    ['a malformed call', '<tool_call>{"name": "calculator", "arguments": {</tool_call>', /malformed tool call/],
    ['an unknown tool', call('search', { query: 'x' }), /unknown tool "search"/],
    ['arguments its zod schema refuses', call('calculator', { expression: 'rm -rf /' }), /bad arguments/],
  ])(
    'turns %s into an error observation, and maxToolErrors ends the episode with tool_error',
    async (_, bad, error) => {
      const going = await run(
        (context) => (context.includes('Error:') ? 'Done.' : bad),
        () => ({ tools: [calculator] }),
      );
      expect(going.samples[0].episode!.toolCalls[0].error).toMatch(error);
      expect(going.samples[0].episode!.messages[2]).toMatchObject({ role: 'tool' });
      expect(going.samples[0].episode!.stopReason).toBe('stop');
      const stopped = await run(
        () => bad,
        () => ({ tools: [calculator] }),
        { agent: { maxToolErrors: 1 } },
      );
      expect(stopped.samples[0].episode!.stopReason).toBe('tool_error');
      expect(stopped.samples[0].turns).toBe(1);
    },
  );

  it('ends with max_turns, length, env_done and timeout where each applies', async () => {
    const always = () => call('calculator', { expression: '2*3' });
    const tools = () => ({ tools: [calculator] });
    const maxTurns = await run(always, tools, { agent: { maxTurns: 3 } });
    expect(maxTurns.samples[0].episode!.stopReason).toBe('max_turns');
    expect(maxTurns.samples[0].turns).toBe(3);
    const length = await run(always, tools, { agent: { maxEpisodeTokens: 60 } });
    expect(length.samples[0].episode!.stopReason).toBe('length');
    expect(length.samples[0].truncated).toBe(true);
    expect(length.samples[0].completionIds.length).toBeLessThanOrEqual(60);
    let calls = 0;
    const done = await run(always, () => ({ tools: [calculator], done: () => ++calls >= 2 }));
    expect(done.samples[0].episode!.stopReason).toBe('env_done');
    const slow: Tool = { ...calculator, run: () => new Promise((resolve) => setTimeout(() => resolve('6'), 20)) };
    const timeout = await run(always, () => ({ tools: [slow] }), { agent: { episodeTimeoutMs: 10 } });
    expect(timeout.samples[0].episode!.stopReason).toBe('timeout');
    expect(timeout.samples[0].turns).toBe(1);
  });

  it("records respond()'s per-turn rewards and state keys, and ends when the environment is done", async () => {
    const environment: EnvironmentFactory = () => {
      let guesses = 0;
      return {
        respond: (text) => {
          guesses++;
          return guesses < 3
            ? { observation: `not ${text.trim()}`, reward: -guesses, done: false }
            : { reward: 10, done: true };
        },
        stateKey: () => `guessed ${guesses}`,
      };
    };
    const { samples, policy } = await run((context) => `guess ${context.split('Assistant:').length}`, environment, {
      groupSize: 2,
    });
    for (const sample of samples) {
      expect(sample.episode!.stopReason).toBe('env_done');
      expect(sample.episode!.turnRewards).toEqual([-1, -2, 10]);
      expect(sample.stateKeys).toEqual(['guessed 0', 'guessed 1', 'guessed 2']);
      expect(sample.episode!.messages.map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
        'assistant',
      ]);
    }
    expectTokenExact(samples[0], policy.fed.slice(0, 1));
    expectTokenExact(samples[1], policy.fed.slice(1, 2));
  });

  it("stops the step naming the member when the recipe's own environment code throws", async () => {
    const failing: EnvironmentFactory = () => ({
      respond: () => {
        throw new Error('bad state');
      },
    });
    await expect(run(() => 'hello', failing)).rejects.toThrow(
      /environment respond\(\) failed for prompt 0 of the step: bad state/,
    );
    await expect(
      run(
        () => 'hello',
        () => {
          throw new Error('no game');
        },
      ),
    ).rejects.toThrow(/the environment factory failed for prompt 0 of the step: no game/);
  });

  it('splits an episode whose template rewrites history into rows that each extend exactly', async () => {
    const environment: EnvironmentFactory = () => {
      let turns = 0;
      return { respond: () => (++turns < 3 ? { observation: 'higher', done: false } : { done: true }) };
    };
    const { samples, policy } = await run(
      (context) => `<think>turn ${context.split('Assistant:').length}</think>guess`,
      environment,
      {
        stripThinking: true,
      },
    );
    const [sample] = samples;
    // Turn 0 is laid out, then the template drops its <think> block: every later turn starts a row.
    expect(sample.continuationRows).toHaveLength(2);
    expectTokenExact(sample, policy.fed);
    const second = tokenizer.decode(sample.continuationRows![0].promptIds, { skipSpecialTokens: false });
    expect(second).not.toContain('<think>turn'); // the rewritten history is what the model saw next
    expect(second).toContain('Assistant:guess');
    // Every sampled token is trained exactly once across the rows.
    const trained = rowsOf(sample).reduce((n, row) => n + row.lossMask.filter((m) => m === 1).length, 0);
    expect(trained).toBe(policy.sampled);
    expect(sample.turns).toBe(3);
  });
});

describe('multiTurnRollout with the real model', () => {
  it('gives every sampled token the logprob a full forward of its row gives it (KV-cached turns, 1e-4)', async () => {
    const environment: EnvironmentFactory = () => {
      let turns = 0;
      return { respond: () => (++turns < 3 ? { observation: 'Once upon a time', done: false } : { done: true }) };
    };
    const rollout = multiTurnRollout(environment, { ...agent, toolCallFormat: 'hermes' });
    // Turns end at any of the 400 lowest ids (short, frequent pieces), so episodes take several turns.
    const frequent = Array.from({ length: 400 }, (_, id) => id + 3);
    const samples = await rollout(
      { model, tokenizer: storiesTokenizer, chatTemplate: template(false, '') }, // turns end at ordinary ids: no end marker
      [prompt('Tell a story.')],
      { ...settings, groupSize: 2, maxNewTokens: 40, temperature: 0.8, stopTokenIds: frequent },
    );
    for (const sample of samples) {
      expect(sample.turns).toBeGreaterThan(1);
      const full = noGrad(() =>
        completionLogprobs(model, [{ promptIds: sample.promptIds!, completionIds: sample.completionIds }], 0.8),
      );
      sample.lossMask.forEach((mask, t) => {
        if (mask === 1) expect(Math.abs(full.logprobs.data[t] - sample.oldLogprobs[t])).toBeLessThan(1e-4);
      });
      expect(sample.lossMask).toContain(0); // observations sit between the turns of one row
      expect(sample.continuationRows).toBeUndefined();
    }
  });
});
