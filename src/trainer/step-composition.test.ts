/**
 * Every selectable part through a real trainer step: `prepareGrpoStep` + `accumulatePolicyGradients`
 * (exactly what train() runs, in micro-batches) against the direct composition of the registry
 * functions on the same rollout batch, computed here in one pass with nothing from the step
 * pipeline. The loss and every parameter gradient must agree to float32 rounding, and the gradient
 * must be non-zero, so a part that is ignored, mis-wired or given the wrong inputs fails.
 */
import { describe, expect, it } from 'vitest';
import {
  advantageEstimators,
  aggregateLoss,
  defineAdvantageEstimator,
  definePolicyLoss,
  groupFilters,
  gtpoTokenWeights,
  klArray,
  klEstimators,
  klK1,
  knapsackAllocation,
  lossAggregations,
  policyLosses,
  registerParts,
  updateQuantileTracker,
  vadeSelection,
  type AdvantageInput,
  type QuantileTracker,
  type RiskpoAdvantageOptions,
} from '../algorithms/index.js';
import {
  answersMatch,
  extractFinalAnswer,
  makeRewardInput,
  selfAlignedReward,
  unlikeliness,
  type RewardFn,
} from '../rewards/index.js';
import { Transformer } from '../model/transformer.js';
import { Random, add, mul, noGrad, sub } from '../tensor/index.js';
import type { NamedReward } from '../rewards/types.js';
import { createStepEnvironment, prepareGrpoStep, rolloutSettingsOf } from './grpo-step.js';
import { recordStepState } from './step-signal.js';
import { accumulatePolicyGradients } from './optimize.js';
import { mergeConfig } from '../config/presets.js';
import { trapoAdvantagePart } from '../../recipes/papers/trapo.js';
import type { TrainerState } from '../run/run-folder.js';
import type { RolloutFn } from '../rollout/rollout.js';
import { completionLogprobs, padRows } from './completion-logprobs.js';
import { createRunContext, resolveConfig, type RunContext } from './setup.js';
import { groupStarts, type StepBatch } from './step-batch.js';
import { gradients, zeroGradients } from '../../test/helpers/gradients.js';

const base = {
  model: { hiddenSize: 16, numLayers: 1, numHeads: 2 },
  sft: { steps: 0 },
  grpo: { steps: 1, promptsPerStep: 4, microBatchSize: 4, learningRate: 0.01 },
  sampling: { groupSize: 4, maxNewTokens: 4 },
  evaluation: { examples: 8 },
};

// Rewards with spread on a random model: the share of digits, and a binary "starts with a digit".
const digitShare: NamedReward = {
  name: 'digits',
  weight: 1,
  reward: ({ completion }) =>
    completion.length ? [...completion].filter((c) => /\d/.test(c)).length / completion.length : 0,
};
const startsWithDigit: NamedReward = {
  name: 'lead',
  weight: 0.5,
  reward: ({ completion }) => (/^\d/.test(completion) ? 1 : 0),
};
const binary: NamedReward = { name: 'lead', weight: 1, reward: ({ completion }) => (/^\d/.test(completion) ? 1 : 0) };

interface Case {
  config: Record<string, unknown>;
  rewards?: NamedReward[];
  rollout?: RolloutFn;
  state?: Partial<TrainerState>;
}

const freshState = (extra: Record<string, unknown> = {}): TrainerState => ({
  step: 0,
  phase: 'grpo',
  phaseStep: 0,
  consecutiveSkips: 0,
  evalBefore: null,
  extra: structuredClone(extra),
});

/** The same step composed directly from the registry functions, in one forward/backward pass. */
function directComposition(
  configInput: Record<string, unknown>,
  batch: StepBatch,
  model: Transformer,
  reference: Transformer | null,
  state: TrainerState,
  decode: (id: number) => string,
) {
  const config = resolveConfig(configInput);
  const algorithm = config.algorithm;
  const N = batch.samples.length;
  const starts = groupStarts(batch.groupSizes);
  const sequences = batch.samples.map((s) => ({
    promptIds: batch.prompts[s.promptIndex].promptIds,
    completionIds: s.completionIds,
  }));
  const temperature = config.sampling.temperature;
  const referenceLogprobs = reference ? noGrad(() => completionLogprobs(reference, sequences, temperature)) : null;
  let rewards = Array.from(batch.rewards, (r) => (Number.isFinite(r) ? r : null));
  if (algorithm.klPlacement === 'reward' && reference) {
    const Tc = referenceLogprobs!.Tc;
    rewards = rewards.map((r, i) => {
      const ids = batch.samples[i].completionIds;
      const k1 = klArray(
        klK1,
        batch.samples[i].oldLogprobs,
        referenceLogprobs!.logprobs.data.slice(i * Tc, i * Tc + ids.length),
      );
      const total = k1.reduce((a, b) => a + b, 0);
      return r === null ? null : r - algorithm.klCoefficient * total;
    });
  }
  const K = batch.rewardNames.length;
  const input: AdvantageInput = {
    rewards,
    groupSizes: batch.groupSizes,
    rewardWeights: batch.rewardWeights,
    completionIds: batch.samples.map((s) => s.completionIds),
    rewardComponents: batch.rewardNames.map((_, k) =>
      batch.samples.map((_, i) => (Number.isFinite(batch.scores[i * K + k]) ? batch.scores[i * K + k] : null)),
    ),
    rewardNames: batch.rewardNames,
    step: 0,
  };
  const options = algorithm.advantageOptions as Record<string, unknown>;
  if (typeof options.strataFrom === 'string')
    input.strata = batch.samples.map((s) =>
      String(batch.prompts[s.promptIndex].example[(options.strataFrom as string).slice(4)]),
    );
  if (algorithm.advantage === 'seed-grpo') input.clusters = directClusters(batch);
  if (algorithm.advantage === 'riskpo') input.quantileTracker = state.extra.quantileTracker as QuantileTracker;
  if (algorithm.advantage === 'single-stream') {
    const tracker = (state.extra.valueTracker ?? {}) as Record<string, { sum: number; weight: number }>;
    input.baselines = batch.samples.map((s) => {
      const entry = tracker[String(batch.prompts[s.promptIndex].exampleIndex)];
      if (entry) return entry.sum / entry.weight;
      const scored = rewards
        .slice(starts[s.promptIndex], starts[s.promptIndex] + batch.groupSizes[s.promptIndex])
        .filter((r): r is number => r !== null);
      return (0.5 + scored.reduce((a, b) => a + b, 0)) / (1 + scored.length); // the authors' ½ prior
    });
  }
  const estimator = advantageEstimators.entry(algorithm.advantage);
  if (estimator.needs?.includes('temperatureLogprobs')) {
    // DCPO: π_old at the entry's temperature for the state's previous entropy, in one pass here.
    input.previousEntropy = typeof state.extra.previousEntropy === 'number' ? state.extra.previousEntropy : NaN;
    const atTemperature = noGrad(() =>
      completionLogprobs(model, sequences, estimator.logprobTemperature!(options, input.previousEntropy!)),
    );
    input.oldLogprobs = batch.samples.map((s) => s.oldLogprobs);
    input.temperatureLogprobs = batch.samples.map((s, i) =>
      atTemperature.logprobs.data.slice(i * atTemperature.Tc, i * atTemperature.Tc + s.completionIds.length),
    );
  }
  if (estimator.needs?.includes('referenceTokenLogprobs'))
    input.referenceLogprobs = batch.samples.map((s, i) =>
      referenceLogprobs!.logprobs.data.slice(
        i * referenceLogprobs!.Tc,
        i * referenceLogprobs!.Tc + s.completionIds.length,
      ),
    );
  if (estimator.needs?.includes('tokenTexts'))
    input.tokenTexts = batch.samples.map((s) => Array.from(s.completionIds, decode));
  const advantage = advantageEstimators.get(algorithm.advantage)(input, options);
  const keep = Array.from(advantage.keep, Boolean);
  if (algorithm.groupFilter)
    groupFilters
      .get(algorithm.groupFilter)(
        { rewards, groupSizes: batch.groupSizes, truncated: batch.samples.map((s) => s.truncated) },
        algorithm.groupFilterOptions,
      )
      .keepSamples.forEach((k, i) => {
        if (!k) keep[i] = false;
      });
  batch.samples.forEach((s, i) => {
    if (!batch.valid[i] || (algorithm.maskTruncated && s.truncated)) keep[i] = false;
  });
  const kept = Array.from({ length: N }, (_, i) => i).filter((i) => keep[i]);
  const keptSequences = kept.map((i) => ({ ...sequences[i], lossMask: batch.samples[i].lossMask }));
  const keptSizes = batch.groupSizes
    .map((size, g) => kept.filter((i) => i >= starts[g] && i < starts[g] + size).length)
    .filter((n) => n > 0);
  const lossNeedsEntropy = policyLosses.entry(algorithm.loss).needs?.includes('entropyWithGradient') ?? false;
  const forward = completionLogprobs(model, keptSequences, temperature, {
    entropyWithGradient: algorithm.entropyCoefficient > 0 || lossNeedsEntropy,
  });
  const Tc = forward.Tc;
  const oldRows = kept.map((i) => [...batch.samples[i].oldLogprobs]);
  const recomputed = algorithm.mismatchCorrection
    ? noGrad(() => completionLogprobs(model, keptSequences, temperature))
    : null;
  const lossOptions = algorithm.lossOptions as Record<string, unknown>;
  const loss = policyLosses.get(algorithm.loss)(
    {
      logprobs: forward.logprobs,
      oldLogprobs: recomputed ? recomputed.logprobs.data : padRows(oldRows, Tc),
      rolloutLogprobs: recomputed ? padRows(oldRows, Tc) : undefined,
      advantages: advantage.tokenAdvantages
        ? padRows(
            kept.map((i) => Array.from(advantage.tokenAdvantages![i])),
            Tc,
          )
        : Float32Array.from(kept, (i) => advantage.advantages[i]),
      mask: forward.mask,
      entropies: forward.entropies,
      entropyTensor: lossNeedsEntropy ? forward.entropyTensor : undefined,
      refLogprobs:
        reference &&
        (algorithm.klPlacement === 'loss' || policyLosses.entry(algorithm.loss).needs?.includes('referenceLogprobs'))
          ? padRows(
              kept.map((i) =>
                Array.from(
                  referenceLogprobs!.logprobs.data.slice(
                    i * referenceLogprobs!.Tc,
                    i * referenceLogprobs!.Tc + batch.samples[i].completionIds.length,
                  ),
                ),
              ),
              Tc,
            )
          : undefined,
      tokenWeights:
        algorithm.loss === 'gtpo'
          ? padRows(
              gtpoTokenWeights(
                kept.map((i) => batch.samples[i].completionIds),
                kept.map((i) => advantage.advantages[i]),
                keptSizes,
                lossOptions,
              ).map((w) => Array.from(w)),
              Tc,
            )
          : undefined,
      groupSizes: policyLosses.entry(algorithm.loss).needs?.includes('wholeGroups') ? keptSizes : undefined,
    },
    {
      ...lossOptions,
      aggregation: lossAggregations.get(algorithm.aggregation),
      maxLength: config.sampling.maxNewTokens,
      klCoefficient: algorithm.klPlacement === 'loss' ? algorithm.klCoefficient : 0,
      klEstimator: klEstimators.get(algorithm.klEstimator),
      mismatchCorrection: algorithm.mismatchCorrection ?? undefined,
    },
  );
  let total = loss.loss;
  if (algorithm.entropyCoefficient > 0)
    total = sub(
      total,
      mul(
        aggregateLoss(forward.entropyTensor!, forward.mask, lossAggregations.get(algorithm.aggregation), {
          maxLength: config.sampling.maxNewTokens,
        }),
        algorithm.entropyCoefficient,
      ),
    );
  total.backward();
  return { loss: total.item(), keptCount: kept.length };
}

function directClusters(batch: StepBatch): number[] {
  const ids: number[] = [];
  let next = 0;
  groupStarts(batch.groupSizes).forEach((start, g) => {
    const seen: { answer: string; id: number }[] = [];
    for (let i = start; i < start + batch.groupSizes[g]; i++) {
      const answer = extractFinalAnswer(batch.samples[i].text.trim())?.answer ?? null;
      const match = answer === null ? undefined : seen.find((s) => answersMatch(answer, s.answer));
      ids.push(match ? match.id : next++);
      if (!match && answer !== null) seen.push({ answer, id: ids[ids.length - 1] });
    }
  });
  return ids;
}

async function compare(testCase: Case): Promise<{ batch: StepBatch; state: TrainerState; context: RunContext }> {
  const configInput = mergeConfig(base, testCase.config);
  const config = resolveConfig(configInput);
  const context = createRunContext(config, {
    rewards: testCase.rewards ?? [digitShare, startsWithDigit],
    rollout: testCase.rollout,
  });
  const needsReference =
    config.algorithm.klCoefficient > 0 ||
    policyLosses.entry(config.algorithm.loss).needs?.includes('referenceLogprobs') ||
    advantageEstimators.entry(config.algorithm.advantage).needs?.includes('referenceTokenLogprobs');
  const reference = needsReference ? Transformer.random(context.model.config, 99, 0.05) : null;
  const environment = createStepEnvironment(context, reference);
  const state = freshState(testCase.state?.extra);
  const prepared = await prepareGrpoStep(environment, state, new Random(7), rolloutSettingsOf(context, 7), 0);
  zeroGradients(context.model);
  const trainer = accumulatePolicyGradients(context.algorithm, environment.settings, context.model, prepared.training);
  const trainerGradients = gradients(context.model);
  zeroGradients(context.model);
  const direct = directComposition(
    configInput,
    prepared.batch,
    context.model,
    reference,
    freshState(testCase.state?.extra),
    (id) => context.tokenizer.decode([id]),
  );
  const directGradients = gradients(context.model);
  expect(prepared.training.rows.length).toBe(direct.keptCount);
  expect(trainer.lossTotal).toBeCloseTo(direct.loss, 5);
  let largest = 0;
  for (const [name, expected] of directGradients) {
    const actual = trainerGradients.get(name)!;
    const scale = Math.max(1e-6, ...Array.from(expected, Math.abs));
    largest = Math.max(largest, scale);
    for (let i = 0; i < expected.length; i++)
      expect(Math.abs(actual[i] - expected[i]), `${name}[${i}]`).toBeLessThanOrEqual(2e-5 * scale + 1e-7);
  }
  expect(largest, 'the step moved the parameters').toBeGreaterThan(1e-6);
  recordStepState(context.algorithm, state, prepared);
  return { batch: prepared.batch, state, context };
}

describe('every registered part, through a trainer step, equals the direct composition', () => {
  const advantageOptions: Record<string, Record<string, unknown>> = {
    stratified: { alpha: 0.5, strataFrom: 'row.a' },
    'seed-grpo': { alpha: 0.5 },
    'mc-grpo': { madFloor: 0.1 },
    opmd: { baseline: 'logavgexp', tau: 0.5 }, // the default 'mean' is dr-grpo's path
    riskpo: { bundleSize: 2, creditAssignment: 'std' }, // two bundles of the step's four groups
    'trust-grpo': { thinkingReward: 'lead' }, // digits is the outcome; lead (weight 0.5) scores the "thinking"
    // A random model writes no <answer>: tags that its completions hold make the reference likelihoods count.
    'grpo-care': { answerTags: ['1', '2'] },
    prof: { processReward: 'digits', removePerGroup: 1 }, // lead is the 1/0 outcome; digits (weight 0) the "PRM"
    // Zoom-Zero's four scores from the two rewards (no zoom); marker id 20 and 2 answer tokens split each completion.
    'zoom-zero': {
      formatReward: 'lead',
      iouReward: 'digits',
      answerReward: 'lead',
      zoomReward: null,
      markerIds: [20],
      answerTokens: 2,
    },
  };
  // PROF ranks 1/0 outcomes by a process score: lead (binary) is the outcome, digits the process reward.
  const advantageRewards: Record<string, NamedReward[]> = { prof: [binary, { ...digitShare, weight: 0 }] };
  const serialRollout: RolloutFn = Object.assign(
    (async (context, prompts, settings) => {
      // Serial exits of one sampled chain: exit k keeps the first k+1 tokens (a stand-in for "truncate the CoT, answer").
      const { singleTurnRollout } = await import('../rollout/rollout.js');
      const chains = await singleTurnRollout(context, prompts, { ...settings, groupSize: 1 });
      return chains.flatMap((chain) =>
        Array.from({ length: settings.groupSize }, (_, k) => {
          const length = Math.min(chain.completionIds.length, k + 1);
          return {
            ...chain,
            completionIds: chain.completionIds.slice(0, length),
            oldLogprobs: chain.oldLogprobs.slice(0, length),
            lossMask: chain.lossMask.slice(0, length),
            text: context.tokenizer.decode(chain.completionIds.slice(0, length), { skipSpecialTokens: true }),
          };
        }),
      );
    }) as RolloutFn,
    { provides: ['serialExits'] as const },
  );
  it.each(advantageEstimators.names())('advantage %s', async (advantage) => {
    const serial = advantage === 's-grpo';
    await compare({
      config: { algorithm: { advantage, advantageOptions: advantageOptions[advantage] ?? {} } },
      rollout: serial ? serialRollout : undefined,
      rewards: serial ? [binary] : advantageRewards[advantage],
    });
  });
  // GTPO's entropy filter zeroes every advantage of a random model (mean entropy ≈ ln V > 0.7), so the
  // threshold is raised here; the filter itself is still applied (A − 0.1·H).
  const lossOptions: Record<string, Record<string, unknown>> = {
    dispo: { positiveBounds: [0.2, 0.3], negativeBounds: [0.1, 0.2], maskOutside: true },
    gtpo: { entropyThreshold: 10 },
    opmd: { tau: 0.5 },
    rec: { clipMode: 'ring', weight: 'importance-sampling', regularizer: 'k2', regularizerCoefficient: 0.1 },
    dno: { eta: 1 },
  };
  // LLDS gates on logπ_old − logπ_θ, which on-policy is rounding noise (sampling vs training forward)
  // that differs between batchings: a stale π_old (+0.3 / −0.2 on alternate tokens) makes every gate clear.
  const staleRollout: RolloutFn = async (context, prompts, settings) => {
    const { singleTurnRollout } = await import('../rollout/rollout.js');
    const samples = await singleTurnRollout(context, prompts, settings);
    return samples.map((s) => ({ ...s, oldLogprobs: s.oldLogprobs.map((l, t) => l + (t % 2 ? -0.2 : 0.3)) }));
  };
  // Reg-GRPO z-scores the sequence log-ratios: on-policy those are that same rounding noise, so it
  // too is compared at a stale π_old (at π_θ = π_old it is the GRPO direction, tested in its own file).
  const lossRollouts: Record<string, RolloutFn> = { llds: staleRollout, 'reg-grpo': staleRollout };
  // TRPA pairs raw rewards (its own advantage), its pair mean over one call: the whole batch in one micro-batch.
  const lossConfigs: Record<string, Record<string, unknown>> = {
    trpa: { algorithm: { advantage: 'trpa' }, grpo: { microBatchSize: 16 } },
    // DNO regresses on its own win-rates; one group per micro-batch, summed over the batch's group count.
    dno: { algorithm: { advantage: 'dno' } },
  };
  it.each(policyLosses.names())('loss %s', async (loss) => {
    await compare({
      config: mergeConfig(lossConfigs[loss] ?? {}, { algorithm: { loss, lossOptions: lossOptions[loss] ?? {} } }),
      rollout: lossRollouts[loss],
    });
  });
  it('dcpo after an update whose entropy was above H (π_old at T = 0.8 from the state)', async () => {
    await compare({ config: { algorithm: { advantage: 'dcpo' } }, state: { extra: { previousEntropy: 0.9 } } });
  });
  it('llds with the response-level gate (stale π_old, as above)', async () => {
    await compare({
      config: { algorithm: { loss: 'llds', lossOptions: { gate: 'response' } } },
      rollout: staleRollout,
    });
  });
  it.each(lossAggregations.names())('aggregation %s', async (aggregation) => {
    await compare({ config: { algorithm: { aggregation } } });
  });
  it.each(klEstimators.names())('KL in the loss with %s', async (klEstimator) => {
    await compare({ config: { algorithm: { klCoefficient: 0.5, klEstimator, klPlacement: 'loss' } } });
  });
  it('KL in the reward (k1 summed over tokens, before advantages)', async () => {
    await compare({ config: { algorithm: { klCoefficient: 0.5, klPlacement: 'reward' } } });
  });
  it('KL in the reward feeds the single-stream tracker the same rewards as the estimator', async () => {
    await compare({ config: { algorithm: { klCoefficient: 0.5, klPlacement: 'reward', advantage: 'single-stream' } } });
  });
  it.each(groupFilters.names())('group filter %s (with refill rounds)', async (groupFilter) => {
    await compare({ config: { algorithm: { groupFilter, maxRefills: 2 } } });
  });
  it('maskTruncated', async () => {
    await compare({ config: { algorithm: { maskTruncated: true }, sampling: { maxNewTokens: 3 } } });
  });
  it.each([
    ['truncate', 'token'],
    ['mask', 'sequence'],
  ])('mismatch correction %s per %s (π_old recomputed by the trainer)', async (mode, level) => {
    await compare({ config: { algorithm: { mismatchCorrection: { mode, level, cap: 1.0001 } } } });
  });
  it('entropy bonus', async () => {
    await compare({ config: { algorithm: { entropyCoefficient: 0.05 } } });
  });
  it('top-entropy token selection (the quantile is taken over the whole batch, not per micro-batch)', async () => {
    await compare({ config: { algorithm: { lossOptions: { topEntropyQuantile: 0.5 } } } });
  });
  it('a reward that reads the policy logprobs (unlikeliness) gets the rollout’s own, and its scores reach the loss', async () => {
    const share = digitShare.reward as RewardFn;
    const { batch } = await compare({
      config: {},
      rewards: [{ name: 'unlikely', weight: 1, reward: unlikeliness({ correctness: share, rankPenalty: 0.5 }) }],
    });
    // recomputed here from the samples' old logprobs: R·(1 − β·rank/G), rank ascending in the mean logprob
    groupStarts(batch.groupSizes).forEach((start, g) => {
      const size = batch.groupSizes[g];
      const members = batch.samples.slice(start, start + size);
      const means = members.map((s) => s.oldLogprobs.reduce((a, b) => a + b, 0) / Math.max(1, s.oldLogprobs.length));
      members.forEach((s, k) => {
        const rank = means.filter((m, j) => m < means[k] || (m === means[k] && j < k)).length;
        const correct = share(makeRewardInput({ completion: s.text })) as number;
        expect(batch.scores[start + k]).toBeCloseTo(correct * (1 - (0.5 * rank) / size), 12);
      });
    });
    expect(new Set(batch.scores).size, 'the rewards differ, so the loss moves').toBeGreaterThan(1);
  });
  it('a reward that scores the completion after another prompt (self-aligned, SAR) gets the policy’s log-probs there', async () => {
    const { batch, context } = await compare({
      config: {},
      rewards: [{ name: 'self-aligned', weight: 1, reward: selfAlignedReward() }],
    });
    // The addition prompts are plain text, so the prompt without its question is empty: BOS alone.
    const withoutQuestion = context.tokenizer.encode('', { addSpecialTokens: true });
    expect(withoutQuestion.length).toBe(1);
    const perplexity = (logprobs: ArrayLike<number>) =>
      Math.exp(-Array.from(logprobs).reduce((a, b) => a + b, 0) / logprobs.length);
    batch.samples.forEach((sample, i) => {
      const after = noGrad(() =>
        completionLogprobs(
          context.model,
          [{ promptIds: withoutQuestion, completionIds: sample.completionIds }],
          context.config.sampling.temperature,
        ),
      );
      const answerOnly = perplexity(after.logprobs.data.slice(0, sample.completionIds.length));
      const expected = Math.max((answerOnly - perplexity(sample.oldLogprobs)) / (answerOnly + 1e-9), -1);
      expect(batch.scores[i]).toBeCloseTo(expected, 5);
    });
    expect(new Set(batch.scores).size, 'the rewards differ, so the loss moves').toBeGreaterThan(1);
  });
  it('a recipe estimator that drops the groups its reward left unscored (trapo-grpo, recipes/papers/trapo.ts)', async () => {
    registerParts([trapoAdvantagePart], 'step-composition.test');
    // "trapo" scores prompts with an even second operand only; the others' combined reward is 0, not unscored.
    const trapo: NamedReward = {
      name: 'trapo',
      weight: 1,
      reward: ({ completion, row }) => (Number(row.b) % 2 ? null : /^\d/.test(completion) ? 1 : 0),
    };
    const { batch } = await compare({
      config: { algorithm: { advantage: 'trapo-grpo' } },
      rewards: [digitShare, trapo],
    });
    const odd = batch.prompts.map((prompt) => Number(prompt.example.b) % 2 === 1);
    expect(odd, 'both kinds of group in the step').toContain(true);
    expect(odd).toContain(false);
  });
  it('an estimator that reads the reference log-probs and token texts before advantages gets the reference’s (grpo-care’s inputs)', async () => {
    registerParts([referenceProbePart], 'step-composition.test');
    await compare({ config: { algorithm: { advantage: 'test-reference-probe' } } });
  });
  it('a loss that needs the entropy with gradient gets it (a recipe part: REINFORCE + a squared entropy target)', async () => {
    registerParts([entropyTargetLossPart], 'step-composition.test');
    await compare({ config: { algorithm: { loss: 'test-entropy-target' } } });
    // Alone with the entropy bonus, each term stays its own: the bonus is not handed to the loss twice.
    await compare({ config: { algorithm: { loss: 'test-entropy-target', entropyCoefficient: 0.05 } } });
  });
});

/**
 * An estimator whose advantage is each sample's mean reference log-prob plus 0.1 per digit token: a
 * trainer that handed it the policy's log-probs, or another token's text, gives other advantages.
 */
const referenceProbePart = defineAdvantageEstimator({
  name: 'test-reference-probe',
  fn: (input) => {
    const advantages = Float32Array.from(input.referenceLogprobs!, (logprobs, i) => {
      const mean = Array.from(logprobs).reduce((a, b) => a + b, 0) / Math.max(1, logprobs.length);
      return mean + 0.1 * input.tokenTexts![i].filter((text) => /^\d$/.test(text)).length;
    });
    return {
      advantages,
      keep: new Uint8Array(advantages.length).fill(1),
      stdIsZero: new Uint8Array(advantages.length),
    };
  },
  description: 'mean reference log-prob + 0.1 per digit token (test only)',
  citation: 'step-composition.test.ts',
  needs: ['referenceTokenLogprobs', 'tokenTexts'],
});

/**
 * A recipe's loss with a term on the entropy itself: REINFORCE plus c·(H − 1)² per token (c = 0.5),
 * aggregated like the surrogate. It throws without input.entropyTensor, and the squared term makes a
 * loss that received the entropy without gradient (or not at all) differ from the direct composition.
 */
const entropyTargetLossPart = definePolicyLoss({
  name: 'test-entropy-target',
  fn: (input, options = {}) => {
    if (!input.entropyTensor) throw new Error('test-entropy-target needs input.entropyTensor');
    const result = policyLosses.get('reinforce')(input, options);
    const gap = sub(input.entropyTensor, 1);
    const target = aggregateLoss(mul(gap, gap), input.mask, options.aggregation!, options);
    return { loss: add(result.loss, mul(target, 0.5)), metrics: result.metrics };
  },
  description: 'REINFORCE + 0.5·(H − 1)² (test only)',
  citation: 'step-composition.test.ts',
  needs: ['entropyWithGradient'],
});

describe('riskpo reads the quantile tracker from trainer state and moves it after the step', () => {
  it('a tracked step equals the composition with that tracker, and the tracker takes one SGD step on the papers', async () => {
    const levels = [
      0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95,
    ];
    const tracker = { levels, values: levels.map((level) => 0.2 + level) }; // q_0.2 = 0.4, q_0.8 = 1
    const options: RiskpoAdvantageOptions = { bundleSize: 2 };
    const { batch, state } = await compare({
      config: { algorithm: { advantage: 'riskpo', advantageOptions: options } },
      state: { extra: { quantileTracker: tracker } },
    });
    const rewards = Array.from(batch.rewards, (r) => (Number.isFinite(r) ? r : null));
    const tracked = advantageEstimators.get('riskpo')(
      { rewards, groupSizes: batch.groupSizes, quantileTracker: tracker },
      options,
    );
    const untracked = advantageEstimators.get('riskpo')({ rewards, groupSizes: batch.groupSizes }, options);
    expect(Array.from(tracked.advantages)).not.toEqual(Array.from(untracked.advantages)); // the tracker mattered
    expect(state.extra.quantileTracker).toEqual(updateQuantileTracker(tracker, tracked.quantileSamples!));
  });
});

describe('prompt selectors choose from posteriors in trainer state', () => {
  const P = base.grpo.promptsPerStep;
  const G = base.sampling.groupSize;
  function candidates(count: number): number[] {
    const random = new Random(7); // the step's draw: same seed, same order as choosePrompts
    return Array.from({ length: count }, () => random.integer(4096));
  }
  it('knapsack: rollouts per prompt are the DP allocation over the candidates posteriors', async () => {
    const indices = candidates(P);
    const posteriors = Object.fromEntries(indices.map((index, k) => [String(index), [1 + 5 * k, 6 - k]]));
    const { batch, state } = await compare({
      config: { algorithm: { promptSelector: 'knapsack', loss: 'real' }, grpo: { microBatchSize: 8 } },
      state: { extra: { promptPosteriors: posteriors } },
    });
    const expected = knapsackAllocation(
      { alpha: indices.map((i) => posteriors[String(i)][0]), beta: indices.map((i) => posteriors[String(i)][1]) },
      { budget: P * G, allowedCounts: [2, 4, 6, 8] },
    );
    expect(batch.groupSizes).toEqual(Array.from(expected.rolloutCounts));
    expect(new Set(batch.groupSizes).size).toBeGreaterThan(1); // ragged groups really reached the step
    const updated = state.extra.promptPosteriors as Record<string, [number, number]>;
    const first = batch.prompts[0].exampleIndex!;
    expect(updated[String(first)][0] + updated[String(first)][1]).toBeCloseTo(
      posteriors[String(first)][0] + posteriors[String(first)][1] + batch.groupSizes[0],
      10,
    );
  });
  it('vade: the top promptsPerStep candidates by a seeded Thompson draw', async () => {
    const indices = candidates(4 * P);
    const posteriors = Object.fromEntries(indices.map((index, k) => [String(index), [1 + (k % 5), 1 + ((3 * k) % 7)]]));
    const { batch } = await compare({
      config: { algorithm: { promptSelector: 'vade' } },
      state: { extra: { promptPosteriors: posteriors } },
    });
    const selection = vadeSelection(
      { alpha: indices.map((i) => posteriors[String(i)][0]), beta: indices.map((i) => posteriors[String(i)][1]) },
      { promptCount: P, rolloutsPerPrompt: G, seed: 7 },
    );
    const chosen = indices.filter((_, k) => selection.rolloutCounts[k] > 0);
    expect(batch.prompts.map((p) => p.exampleIndex)).toEqual(chosen);
  });
});
