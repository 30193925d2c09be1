/**
 * A multi-turn step through the real pipeline (createRunContext with a recipe environment and the
 * agent section → prepareGrpoStep → accumulatePolicyGradients): its gradient equals the direct
 * composition of the parts on the exact ids (the sampled ids plus the appended observation ids,
 * masked loss), observation tokens receive exactly zero gradient, and what sits in their old-logprob
 * slots cannot leak into the update. Also: turn credit is wired (every loss token of a turn gets its
 * turn's advantage), and impossible agent configurations are refused before any compute.
 */
import { rowsOf } from '../../test/helpers/training-rows.js';
import { describe, expect, it } from 'vitest';
import { advantageEstimators, lossAggregations, policyLosses, turnCreditEstimators } from '../algorithms/index.js';
import type { EnvironmentFactory, Tool } from '../agents/types.js';
import { matchedCallsEnvironment } from '../agents/environments/matched-calls.js';
import { multiTurnRollout, type TurnDecoder } from '../rollout/multi-turn-rollout.js';
import type { RolloutContext } from '../rollout/rollout.js';
import type { NamedReward } from '../rewards/types.js';
import { Random, Tensor } from '../tensor/index.js';
import { createStepEnvironment, prepareGrpoStep, rolloutSettingsOf } from './grpo-step.js';
import { accumulatePolicyGradients, lossOptionsFor, stepSettingsOf } from './optimize.js';
import { mergeConfig } from '../config/presets.js';
import { completionLogprobs, padRows } from './completion-logprobs.js';
import { createRunContext, resolveConfig } from './setup.js';
import { sampleRows } from './step-batch.js';
import { gradients, zeroGradients } from '../../test/helpers/gradients.js';

// The addition task's characters only (digits, '+', '='): the template joins messages with '+'.
const base = {
  model: {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    chatTemplate: "{% for m in messages %}{{ m.content + '+' }}{% endfor %}",
  },
  sft: { steps: 0 },
  grpo: { steps: 1, promptsPerStep: 2, microBatchSize: 2, learningRate: 0.01 },
  sampling: { groupSize: 4, maxNewTokens: 4 },
  evaluation: { examples: 8 },
  agent: { maxTurns: 3, toolCallFormat: 'hermes', maxEpisodeTokens: 40 },
};

/** A game that answers every turn with a digit of feedback and a per-turn reward, done after three turns. */
const game: EnvironmentFactory = (_, { seed }) => {
  let turns = 0;
  return {
    respond: (text) => {
      turns++;
      return turns < 3
        ? { observation: String((seed + turns) % 10), reward: text.length % 3, done: false }
        : { reward: 1, done: true };
    },
  };
};
const lowDigits: NamedReward = {
  name: 'low',
  weight: 1,
  reward: ({ completion, episode }) =>
    [...(episode?.messages.map((m) => m.content).join('') ?? completion)].filter((c) => '1234'.includes(c)).length,
};

function maxDifference(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  let worst = 0;
  for (const [name, values] of a) values.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - b.get(name)![i]))));
  return worst;
}

async function agentStep(overrides: Record<string, unknown> = {}) {
  const config = resolveConfig(mergeConfig(base, overrides));
  const context = createRunContext(config, { rewards: [lowDigits], environment: game });
  const environment = createStepEnvironment(context, null);
  // Turns end at any digit (ordinary ids), so episodes take several turns on a random model.
  const digits = [...'0123456789'].map((d) => context.tokenizer.encode(d, { addSpecialTokens: false })[0]);
  const settings = { ...rolloutSettingsOf(context, 7), stopTokenIds: digits };
  const state = { step: 0, phase: 'grpo' as const, phaseStep: 0, consecutiveSkips: 0, evalBefore: null, extra: {} };
  const prepared = await prepareGrpoStep(environment, state, new Random(7), settings, 0);
  return { config, context, prepared };
}

describe('a multi-turn GRPO step', () => {
  it("equals the direct composition: the masked loss over the exact ids, the episode's advantage on every row", async () => {
    const { config, context, prepared } = await agentStep();
    const { batch } = prepared;
    expect(batch.samples.every((s) => (s.turns ?? 0) > 1)).toBe(true);
    expect(batch.samples.some((s) => s.lossMask.includes(0))).toBe(true);
    zeroGradients(context.model);
    accumulatePolicyGradients(context.algorithm, stepSettingsOf(config), context.model, prepared.training);
    const fromStep = gradients(context.model);

    zeroGradients(context.model);
    const advantages = advantageEstimators.get('grpo')(
      { rewards: Array.from(batch.rewards), groupSizes: batch.groupSizes },
      {},
    ).advantages;
    const rows = batch.samples.flatMap((_, i) =>
      sampleRows(batch, i).map((row) => ({ row, advantage: advantages[i] })),
    );
    const forward = completionLogprobs(
      context.model,
      rows.map(({ row }) => ({ promptIds: row.promptIds, completionIds: row.completionIds, lossMask: row.lossMask })),
      config.sampling.temperature,
    );
    const loss = policyLosses.get('ppo-clip')(
      {
        logprobs: forward.logprobs,
        oldLogprobs: padRows(
          rows.map(({ row }) => row.oldLogprobs),
          forward.Tc,
        ),
        advantages: Float32Array.from(rows, ({ advantage }) => advantage),
        mask: forward.mask,
        entropies: forward.entropies,
      },
      { aggregation: lossAggregations.get('token-mean'), maxLength: config.sampling.maxNewTokens, klCoefficient: 0 },
    );
    loss.loss.backward();
    const direct = gradients(context.model);
    expect(Math.max(...[...direct.values()].map((g) => Math.max(...g.map(Math.abs))))).toBeGreaterThan(1e-6);
    expect(maxDifference(fromStep, direct)).toBeLessThan(1e-6);
  });

  it('gives observation tokens exactly zero gradient, and their old-logprob slots cannot leak into the update', async () => {
    const { config, context, prepared } = await agentStep();
    const samples = rowsOf(prepared.training);
    const Tc = Math.max(...samples.map((s) => s.completionIds.length));
    // d loss / d log π at every completion position, with the log-probs as a leaf.
    const forward = completionLogprobs(context.model, samples, config.sampling.temperature);
    const leaf = new Tensor(forward.logprobs.data.slice(), forward.logprobs.shape, { requiresGrad: true });
    const loss = context.algorithm.loss.fn(
      {
        logprobs: leaf,
        oldLogprobs: padRows(
          samples.map((s) => s.oldLogprobs),
          Tc,
        ),
        advantages: Float32Array.from(samples, (s) => s.advantage),
        mask: forward.mask,
        entropies: forward.entropies,
      },
      lossOptionsFor(context.algorithm, stepSettingsOf(config)),
    );
    loss.loss.backward();
    let observationTokens = 0;
    let trainedWithGradient = 0;
    samples.forEach((sample, b) =>
      sample.lossMask!.forEach((mask, t) => {
        const gradient = leaf.grad!.data[b * Tc + t];
        if (mask === 0) {
          observationTokens++;
          expect(gradient).toBe(0);
        } else if (gradient !== 0) trainedWithGradient++;
      }),
    );
    expect(observationTokens).toBeGreaterThan(0);
    expect(trainedWithGradient).toBeGreaterThan(0);
    // Garbage in the masked slots (huge, NaN) changes nothing in the parameter gradient.
    zeroGradients(context.model);
    accumulatePolicyGradients(context.algorithm, stepSettingsOf(config), context.model, prepared.training);
    const clean = gradients(context.model);
    const poisoned = { ...prepared.training, oldLogprobs: prepared.training.oldLogprobs.slice() };
    samples.forEach((s, r) =>
      s.lossMask!.forEach((mask, t) => {
        if (mask === 0) poisoned.oldLogprobs[r * Tc + t] = t % 2 ? 1e30 : NaN;
      }),
    );
    zeroGradients(context.model);
    accumulatePolicyGradients(context.algorithm, stepSettingsOf(config), context.model, poisoned);
    expect(maxDifference(clean, gradients(context.model))).toBe(0);
  });

  it.each([
    ['turn-rewards', { gamma: 0.5 }],
    ['ui-s1', { gamma: 0.5, normalization: 'mean' }], // UI-S1 #96: turn scores 0–2, ≥ 0.9 counts as matched
    ['prorag', { beta: 0.5 }], // ProRAG #100: outcome z-score plus β × the pooled step-score z-score
  ])("gives every loss token of a turn that turn's advantage from algorithm.turnCredit %s", async (name, options) => {
    const { prepared } = await agentStep({ algorithm: { turnCredit: { name, options } } });
    const { batch, signal } = prepared;
    const expected = turnCreditEstimators.get(name)(
      {
        rewards: Float64Array.from(signal.rewards, (r, i) => (signal.keep[i] ? r : NaN)),
        groupSizes: batch.groupSizes,
        turnRewards: batch.samples.map((s) => s.episode!.turnRewards),
        // each turn's loss tokens over the episode's rows (ProRAG pools step scores by token)
        turnTokenCounts: batch.samples.map((s, i) =>
          s.episode!.turnRewards.map(
            (_, turn) =>
              sampleRows(batch, i).flatMap((row) =>
                row.tokenTurns!.filter((tokenTurn, t) => tokenTurn === turn && row.lossMask![t] !== 0),
              ).length,
          ),
        ),
      },
      options,
    ).turnAdvantages;
    expect(signal.turnAdvantages).toEqual(expected);
    let row = 0;
    batch.samples.forEach((sample, i) => {
      if (!signal.keep[i]) return;
      for (const sampleRow of sampleRows(batch, i)) {
        const tokens = Array.from(rowsOf(prepared.training)[row++].tokenAdvantages!);
        sampleRow.tokenTurns!.forEach((turn, t) => expect(tokens[t]).toBeCloseTo(turn >= 0 ? expected[i][turn] : 0, 6));
      }
    });
    expect(new Set(rowsOf(prepared.training).flatMap((s) => Array.from(s.tokenAdvantages!))).size).toBeGreaterThan(2);
  });
});

describe('IGPO through the step', () => {
  it("gives each turn the information gain of the row's answer under the policy, then igpo's advantages", async () => {
    const { context, prepared } = await agentStep({ algorithm: { turnCredit: { name: 'igpo' } } });
    const { batch, signal } = prepared;
    // Directly: before each turn, exp(mean log π(answer | tokens so far)); gain = next − this; last turn 0.
    const gains = batch.samples.map((sample, i) => {
      const answer = context.tokenizer.encode(String(batch.prompts[sample.promptIndex].example.answer), {
        addSpecialTokens: false,
      });
      const before: number[] = [];
      for (const row of sampleRows(batch, i))
        row.tokenTurns!.forEach((turn, t) => {
          if (turn < 0 || (t > 0 && row.tokenTurns![t - 1] === turn)) return;
          const context_ = [...row.promptIds, ...row.completionIds.slice(0, t)];
          const forward = completionLogprobs(context.model, [{ promptIds: context_, completionIds: answer }], 1);
          const values = Array.from(forward.logprobs.data.slice(0, answer.length));
          before[turn] = Math.exp(values.reduce((a, b) => a + b, 0) / values.length);
        });
      return before.map((p, turn) => (turn + 1 < before.length ? before[turn + 1] - p : 0));
    });
    expect(gains.flat().some((gain) => gain !== 0)).toBe(true);
    const expected = turnCreditEstimators.get('igpo')(
      {
        rewards: Float64Array.from(signal.rewards, (r, i) => (signal.keep[i] ? r : NaN)),
        groupSizes: batch.groupSizes,
        turnRewards: batch.samples.map((s) => s.episode!.turnRewards),
        informationGains: gains,
      },
      {},
    ).turnAdvantages;
    signal.turnAdvantages!.forEach((row, i) =>
      row.forEach((value, turn) => expect(value).toBeCloseTo(expected[i][turn], 5)),
    );
  });
});

describe('agent configuration is refused before any compute', () => {
  const context = (overrides: Record<string, unknown>, environment?: EnvironmentFactory) => () =>
    createRunContext(resolveConfig(mergeConfig(base, overrides)), { rewards: [lowDigits], environment });

  it.each([
    ['an agent section without an environment', {}, undefined, /agent: multi-turn episodes need environments/],
    ['an environment without an agent section', { agent: null }, game, /agent: the recipe exports an environment/],
    [
      'turn credit without turns',
      { agent: null, algorithm: { turnCredit: { name: 'turn-rewards' } } },
      undefined,
      /algorithm\.turnCredit: turn-rewards gives each model turn its own advantage, and this rollout has no turns/,
    ],
    [
      'an unknown turn-credit estimator',
      { algorithm: { turnCredit: { name: 'nope' } } },
      game,
      /algorithm\.turnCredit: unknown turn-credit estimator "nope"; known: /,
    ],
    [
      'a bad turn-credit option',
      { algorithm: { turnCredit: { name: 'gigpo', options: { omega: -1 } } } },
      game,
      /algorithm\.turnCredit\.options/,
    ],
    ["'auto' on a template without tool syntax", { agent: { toolCallFormat: 'auto' } }, game, /agent\.toolCallFormat/],
    [
      'a model without a chat template',
      { model: { chatTemplate: 'none' } },
      game,
      /agent: multi-turn episodes render tool results through a chat template/,
    ],
    [
      'a ground-truth completion (single-turn only)',
      { grpo: { groundTruthCompletion: '{answer}' } },
      game,
      /grpo\.groundTruthCompletion: a ground-truth completion replaces a single-turn sample/,
    ],
  ])('%s', (_, overrides, environment, message) => {
    expect(context(overrides, environment)).toThrow(message);
  });

  it("adds the environment's reward as 'environment' (weight 1), or with the weight config.rewards gives it", () => {
    const added = createRunContext(resolveConfig(base), { rewards: [lowDigits], environment: game }).rewards;
    expect(added.map((r) => [r.name, r.weight])).toEqual([
      ['low', 1],
      ['environment', 1],
    ]);
    const configured = createRunContext(
      resolveConfig(mergeConfig(base, { rewards: [{ name: 'environment', weight: 0.25 }] })),
      {
        environment: game,
      },
    ).rewards;
    expect(configured.map((r) => [r.name, r.weight])).toEqual([['environment', 0.25]]);
    expect(() =>
      createRunContext(resolveConfig(mergeConfig(base, { agent: null, rewards: [{ name: 'environment' }] }))),
    ).toThrow(/unknown reward "environment"/);
  });

  it('refuses gigpo on an environment without stateKey() before decoding', async () => {
    await expect(agentStep({ algorithm: { turnCredit: { name: 'gigpo' } } })).rejects.toThrow(
      /algorithm\.turnCredit: gigpo groups turns by the environment's anchor state, and the recipe's environment has no stateKey\(\)/,
    );
  });
});

describe('per-call rewards through the step (MatchTIR)', () => {
  // Llama-3 JSON calls over a character tokenizer; a scripted policy (its text is fixed per episode)
  // makes the calls a random model would not, through the real multi-turn rollout and trainer step.
  const template = [
    "{% for m in messages %}{% if m.role == 'user' %}Q:{{ m.content }}\n",
    "{% elif m.role == 'assistant' %}A:{{ m.content }}{{ eos_token }}\n",
    "{% elif m.role == 'tool' %}R:{{ m.content }}\n{% endif %}{% endfor %}",
    '{% if add_generation_prompt %}A:{% endif %}',
  ].join('');
  const call = (tool: string, city: string) => `{"name": "${tool}", "parameters": {"c": "${city}"}}`;
  /** Episode g of each group: two calls (one per turn) of quality varying with g, then an answer. */
  const scripts = [
    [call('w', 'o'), call('s', 'x'), '7'], // weather right, search right → call rewards 1, 1
    [call('w', 'b'), call('s', 'x'), '5'], // weather's value wrong → 2/3, then 1
    [call('s', 'x'), '7'], // search right, weather never called
    [call('q', 'o'), '5'], // an unknown tool (an error observation), matching nothing → 0
  ];
  const expectedTurnRewards = [
    [1, 1, null],
    [2 / 3, 1, null],
    [1, null],
    [0, null],
  ];
  const examples = (count: number) =>
    Array.from({ length: count }, (_, i) => ({
      prompt: `p${i % 10}`,
      answer: '7',
      references: [
        { name: 'w', parameters: { c: 'o' } },
        { name: 's', parameters: { c: 'x' } },
      ],
    }));
  const task = {
    name: 'matched-calls',
    description: 'scripted tool calls against reference calls',
    alphabet: [...new Set(`0123456789QAR:pwsqobx\n${call('w', 'o')}`)].join(''),
    trainExamples: examples,
    evalExamples: examples,
    demonstration: () => '7',
    rewards: () => [],
    isCorrect: () => false,
  };
  const answer: NamedReward = { name: 'answer', weight: 1, reward: ({ completion }) => (completion === '7' ? 1 : 0) };
  const tool: Tool = { name: 'w', description: 'weather', parameters: { type: 'object' }, run: () => 'ok' };
  const search: Tool = { ...tool, name: 's', description: 'search' };

  class Scripted implements TurnDecoder {
    private readonly turns: number[] = [];
    private readonly scriptOf: number[] = [];
    constructor(private readonly context: RolloutContext) {}
    add(): number {
      const index = this.turns.length;
      this.turns.push(0);
      this.scriptOf.push(index % scripts.length);
      return index;
    }
    append(): void {}
    decodeTurns(episodes: readonly number[]) {
      const tokenizer = this.context.tokenizer;
      return episodes.map((episode) => {
        const text = scripts[this.scriptOf[episode]][this.turns[episode]++];
        const ids = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.eosTokenId!];
        return { ids, logprobs: ids.map((_, t) => -1 - t / 50), finishReason: 'stop' as const };
      });
    }
  }

  it("scores each call, gives its turn the calls' mean, and the matchtir advantages reach the loss exactly", async () => {
    const config = resolveConfig(
      mergeConfig(base, {
        model: { chatTemplate: template },
        agent: null,
        sampling: { groupSize: 4, maxNewTokens: 60 },
        algorithm: { turnCredit: { name: 'matchtir', options: { gamma: 0.5 } } },
      }),
    );
    const agent = { maxTurns: 3, toolTimeoutMs: 1000, toolCallFormat: 'llama3' as const, maxEpisodeTokens: 400, maxToolErrors: null, episodeTimeoutMs: null }; // prettier-ignore
    const environment = matchedCallsEnvironment({ tools: [tool, search], referenceColumn: 'references' });
    const rollout = multiTurnRollout(environment, agent, (context) => new Scripted(context));
    const context = createRunContext(config, { rewards: [answer], task, rollout });
    const step = createStepEnvironment(context, null);
    const settings = { ...rolloutSettingsOf(context, 7), stopTokenIds: [context.tokenizer.eosTokenId!] };
    const state = { step: 0, phase: 'grpo' as const, phaseStep: 0, consecutiveSkips: 0, evalBefore: null, extra: {} };
    const prepared = await prepareGrpoStep(step, state, new Random(7), settings, 0);
    const { batch, signal } = prepared;

    // The per-call rewards, and each turn's mean of them, as the script and the references say.
    expect(batch.samples.map((s) => s.episode!.toolCalls.map((c) => c.reward))).toEqual(
      [0, 1].flatMap(() => [[1, 1], [2 / 3, 1], [1], [0]]),
    );
    expect(batch.samples.map((s) => s.episode!.turnRewards)).toEqual([...expectedTurnRewards, ...expectedTurnRewards]);
    expect(Array.from(signal.rewards)).toEqual([1, 0, 1, 0, 1, 0, 1, 0]);

    // Direct composition: matchtir on the hand-written turn rewards, broadcast on each turn's tokens.
    const turnAdvantages = turnCreditEstimators.get('matchtir')(
      {
        rewards: Float64Array.from([1, 0, 1, 0, 1, 0, 1, 0]),
        groupSizes: [4, 4],
        turnRewards: [...expectedTurnRewards, ...expectedTurnRewards],
      },
      { gamma: 0.5 },
    ).turnAdvantages;
    expect(signal.turnAdvantages).toEqual(turnAdvantages);
    const rows = batch.samples.flatMap((_, i) => sampleRows(batch, i).map((row) => ({ row, episode: i })));
    const forward = completionLogprobs(
      context.model,
      rows.map(({ row }) => ({ promptIds: row.promptIds, completionIds: row.completionIds, lossMask: row.lossMask })),
      config.sampling.temperature,
    );
    const tokenAdvantages = rows.map(({ row, episode }) =>
      row.tokenTurns!.map((turn) => (turn >= 0 ? turnAdvantages[episode][turn] : 0)),
    );
    const loss = policyLosses.get('ppo-clip')(
      {
        logprobs: forward.logprobs,
        oldLogprobs: padRows(
          rows.map(({ row }) => row.oldLogprobs),
          forward.Tc,
        ),
        advantages: padRows(tokenAdvantages, forward.Tc),
        mask: forward.mask,
        entropies: forward.entropies,
      },
      { aggregation: lossAggregations.get('token-mean'), maxLength: config.sampling.maxNewTokens, klCoefficient: 0 },
    );
    zeroGradients(context.model);
    loss.loss.backward();
    const direct = gradients(context.model);
    zeroGradients(context.model);
    accumulatePolicyGradients(context.algorithm, stepSettingsOf(config), context.model, prepared.training);
    const fromStep = gradients(context.model);
    expect(Math.max(...[...direct.values()].map((g) => Math.max(...g.map(Math.abs))))).toBeGreaterThan(1e-6);
    expect(maxDifference(fromStep, direct)).toBeLessThan(1e-6);
  });
});
