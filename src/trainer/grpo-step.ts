/**
 * Everything a GRPO step does before the optimiser, in order: choose prompts (uniformly, or by the
 * bound prompt selector from posteriors in trainer state) → generation rounds, refilled by
 * `refillKeptGroups` while the group filter drops groups → one flat batch → the model-side inputs
 * the bound parts need (reference logprobs for KL in the reward, the value tracker's drift, IGPO's
 * per-turn information gains, at the end of this file) → the
 * signal (advantages, loss mask) → the training rows, with what the loss needs attached (π_old
 * recomputed for mismatch correction, GTPO group token weights, reference logprobs for KL in the
 * loss). After the update, step-signal.ts `recordStepState` moves the tracker and the posteriors forward.
 *
 * Is not: the loop, logging or checkpoints (trainer.ts), or any formula (algorithms/).
 */
import {
  klK1,
  klPenalizedRewards,
  refillKeptGroups,
  type GroupFilterFn,
  type QuantileTracker,
} from '../algorithms/index.js';
import type { Example } from '../data/task.js';
import type { Transformer } from '../model/transformer.js';
import type { Random } from '../nn/index.js';
import type { BoundAlgorithm } from '../config/algorithm.js';
import { renderRunPrompt, type RenderedPrompt } from './vision-run.js';
import {
  frozenColumn,
  frozenLogprobs,
  frozenLogprobsAfter,
  stepSettingsOf,
  trainingBatch,
  withGroupTokenWeights,
  withReferenceLogprobs,
  type StepSettings,
  type TrainingBatch,
  type TrainingRow,
} from './optimize.js';
import type { RunContext } from './setup.js';
import type { RolloutContext, RolloutFn, RolloutPrompt, RolloutRow, RolloutSettings } from '../rollout/rollout.js';
import type { TrainerState } from '../run/run-folder.js';
import {
  concatenateGroups,
  generateRound,
  groupIndexOf,
  groupStarts,
  sampleRows,
  type StepBatch,
} from './step-batch.js';
import {
  policyDrift,
  posteriorOf,
  trackedBaseline,
  trackerDiscount,
  type PosteriorState,
  type ValueTrackerState,
  computeSignal,
  turnTokenAdvantages,
  type SignalOutcome,
  type StepSignal,
} from './step-signal.js';
import type { NamedReward } from '../rewards/types.js';
import type { RewardScorer } from '../rewards/run.js';
import { padRows, type TokenSequence } from './completion-logprobs.js';
import type { TextTokenizer } from '../model/tokenizer.js';
import { drawSets, drawTogetherSets } from '../data/draw-together.js';

/** What a step needs from the run. */
export interface StepEnvironment {
  bound: BoundAlgorithm;
  settings: StepSettings;
  rollout: RolloutFn;
  rolloutContext: RolloutContext;
  rewards: readonly NamedReward[];
  /** Scores a round's groups with `rewards` (on this thread or in reward workers). */
  scoreRewards: RewardScorer;
  examples: readonly Example[];
  render: (example: Example, where: string) => Promise<RenderedPrompt>; // vision-run.ts; `where` names the row
  referenceModel: Transformer | null;
  referenceRows: <S extends TokenSequence>(rows: S[]) => S[]; // as the reference reads them (its own connector)
  promptsPerStep: number;
  groupSize: number;
  /** `grpo.drawTogether`'s sets of rows (indices into `examples`), drawn whole; null = a uniform draw. */
  promptSets: number[][] | null;
}

/** A step's batch, its signal and the rows the optimiser trains on. */
export interface PreparedStep extends SignalOutcome {
  /** The rows the optimiser trains on, as columns. */
  training: TrainingBatch;
  metrics: Record<string, number>;
}

/** The environment the loop builds for a run (also used by tests to drive the same step). */
export function createStepEnvironment(context: RunContext, referenceModel: Transformer | null): StepEnvironment {
  const { config, model, tokenizer, task } = context;
  const examples = task.trainExamples(config.grpo.examples, config.seed + 2);
  return {
    bound: context.algorithm,
    settings: stepSettingsOf(config),
    rollout: context.rollout,
    rolloutContext: { model, tokenizer, chatTemplate: context.promptFormat.chatTemplate },
    rewards: context.rewards,
    scoreRewards: context.scoreRewards,
    examples,
    render: (example, where) => renderRunPrompt(context.promptFormat, context.vision, example, where),
    referenceModel,
    referenceRows: (rows) => rows, // a vision-language run's trainer replaces it (vision-run.ts withConnector)
    promptsPerStep: config.grpo.promptsPerStep,
    groupSize: config.sampling.groupSize,
    promptSets: drawTogetherSets(
      config.grpo.drawTogether,
      examples,
      config.grpo.promptsPerStep,
      context.algorithm.promptSelector !== null,
    ),
  };
}

/** The rollout settings of a step: the config's sampling with the run's stop ids and the step's seed. */
export function rolloutSettingsOf(context: RunContext, seed: number): RolloutSettings {
  return { ...context.config.sampling, stopTokenIds: context.stopTokenIds, seed };
}

type Render = StepEnvironment['render'];
async function draw(
  examples: readonly Example[],
  count: number,
  random: Random,
  render: Render,
  sets: number[][] | null = null,
) {
  const indices = sets
    ? drawSets(sets, count, random)
    : Array.from({ length: count }, () => random.integer(examples.length));
  const prompts = indices.map(async (exampleIndex): Promise<RolloutPrompt> => {
    const { ids, ...rendered } = await render(examples[exampleIndex], `training row ${exampleIndex}`);
    return { ...rendered, example: examples[exampleIndex], promptIds: ids, exampleIndex };
  });
  return Promise.all(prompts);
}

/** The first round's prompts and rollouts per prompt: a uniform draw, or the bound selector's choice. */
export async function choosePrompts(
  environment: StepEnvironment,
  state: TrainerState,
  random: Random,
  seed: number,
): Promise<{ prompts: RolloutPrompt[]; counts: number[] }> {
  const { bound, examples, render, promptsPerStep: P, groupSize: G } = environment;
  const selector = bound.promptSelector;
  if (!selector)
    return {
      prompts: await draw(examples, P, random, render, environment.promptSets),
      counts: new Array<number>(P).fill(G),
    };
  const posteriors = (state.extra.promptPosteriors ?? {}) as PosteriorState;
  const plan = selector.entry.plan(selector.options, {
    promptsPerStep: P,
    groupSize: G,
    seed,
  });
  const candidates = await draw(examples, plan.candidates, random, render);
  const beliefs = candidates.map((prompt) => posteriorOf(posteriors, prompt.exampleIndex!));
  const input = { alpha: beliefs.map((b) => b.alpha), beta: beliefs.map((b) => b.beta) };
  const selection = selector.fn(input, plan.options);
  const chosen = candidates.flatMap((prompt, i) =>
    selection.rolloutCounts[i] > 0 ? [{ prompt, count: selection.rolloutCounts[i] }] : [],
  );
  return { prompts: chosen.map((c) => c.prompt), counts: chosen.map((c) => c.count) };
}

const keepEveryGroup: GroupFilterFn = (input) => {
  const groups =
    typeof input.groupSizes === 'number' ? input.rewards.length / input.groupSizes : input.groupSizes.length;
  return { keepGroups: new Uint8Array(groups).fill(1), keepSamples: new Uint8Array(input.rewards.length).fill(1) };
};

/** β·Σ_t k1 per sample under the reference model: the KL-in-reward penalty (RLOO/PPO placement). */
function klPenalties(environment: StepEnvironment, batch: StepBatch): Float64Array {
  // Every trained row of a sample (an episode the template split has several) adds to its penalty.
  const rows = batch.samples.flatMap((_, i) => sampleRows(batch, i).map((row) => ({ ...row, sample: i })));
  const reference = frozenLogprobs(environment.referenceModel!, environment.referenceRows(rows), environment.settings);
  const T = Math.max(1, ...rows.map((row) => row.completionIds.length));
  const penalized = klPenalizedRewards(
    {
      rewards: new Float32Array(rows.length),
      logprobs: padRows(
        rows.map((row) => row.oldLogprobs),
        T,
      ),
      refLogprobs: padRows(
        reference.map((r) => Array.from(r)),
        T,
      ),
      mask: padRows(
        rows.map((row) => row.lossMask),
        T,
      ),
    },
    environment.bound.klCoefficient,
    klK1,
  );
  const penalties = new Float64Array(batch.samples.length);
  rows.forEach((row, r) => (penalties[row.sample] -= penalized[r]));
  return penalties;
}

/**
 * π_old's log-probs of every sample's completion at the temperature the estimator's entry names for
 * this step (DCPO's target policy), from the policy before this step's update, in training micro-batches.
 */
function logprobsAtTemperature(
  environment: StepEnvironment,
  batch: StepBatch,
  previousEntropy: number,
  metrics: Record<string, number>,
): Float32Array[] {
  const { advantage } = environment.bound;
  const temperature = advantage.entry.logprobTemperature!(
    advantage.options as Record<string, unknown>,
    previousEntropy,
  );
  metrics['advantage/logprobTemperature'] = temperature;
  return frozenLogprobs(environment.rolloutContext.model, firstRows(batch), {
    microBatchSize: environment.settings.microBatchSize,
    temperature,
  });
}

/** Each sample's first row with its prompt's images: the completion as an estimator's side input reads it. */
function firstRows(batch: StepBatch) {
  const groupOf = groupIndexOf(batch.groupSizes);
  return batch.samples.map((_, i) => ({ ...sampleRows(batch, i)[0], images: batch.prompts[groupOf[i]].images }));
}

/** Single-stream baselines of every sample and this visit's discount per group. */
function trackerInputs(
  environment: StepEnvironment,
  batch: StepBatch,
  rewards: Float64Array,
  state: TrainerState,
): { baselines: Float64Array; discounts: number[] } {
  const tracker = (state.extra.valueTracker ?? {}) as ValueTrackerState;
  const entries = batch.prompts.map((prompt) => tracker[String(prompt.exampleIndex)]);
  const seen = entries.flatMap((entry, g) => (entry && entry.completionIds.length > 0 ? [g] : []));
  const now = frozenLogprobs(
    environment.rolloutContext.model,
    seen.map((g) => ({ promptIds: entries[g]!.promptIds, completionIds: entries[g]!.completionIds })),
    environment.settings,
  );
  const discounts = batch.prompts.map(() => environment.bound.tracker!.maxDiscount);
  seen.forEach((g, k) => {
    discounts[g] = trackerDiscount(policyDrift(entries[g]!.logprobs, now[k]), environment.bound.tracker!);
  });
  const baselines = new Float64Array(batch.samples.length);
  groupStarts(batch.groupSizes).forEach((start, g) => {
    const visit = Array.from(rewards.subarray(start, start + batch.groupSizes[g]));
    baselines.fill(trackedBaseline(entries[g], visit), start, start + batch.groupSizes[g]);
  });
  return { baselines, discounts };
}

/** Rollout, scoring, refill, signal and training rows of one step. */
export async function prepareGrpoStep(
  environment: StepEnvironment,
  state: TrainerState,
  random: Random,
  rolloutSettings: RolloutSettings,
  step: number,
): Promise<PreparedStep> {
  const { bound, rollout, rolloutContext, rewards, scoreRewards } = environment;
  const first = await choosePrompts(environment, state, random, rolloutSettings.seed);
  let rolloutSeconds = 0;
  let rewardSeconds = 0;
  let firstRound: StepBatch | undefined;
  const refill = await refillKeptGroups(
    async (round) => {
      const { prompts, counts } =
        round === 0
          ? first
          : {
              prompts: await draw(
                environment.examples,
                environment.promptsPerStep,
                random,
                environment.render,
                environment.promptSets,
              ),
              counts: new Array<number>(environment.promptsPerStep).fill(environment.groupSize),
            };
      const generated = await generateRound(
        rollout,
        rolloutContext,
        prompts,
        counts,
        { ...rolloutSettings, seed: rolloutSettings.seed + round * 31 },
        rewards,
        scoreRewards,
        step,
        // as the rollout's own log-probs: this step's policy, before the update, at the sampling temperature
        (example, prompt, completionIds) =>
          frozenLogprobsAfter(
            rolloutContext.model,
            environment.render,
            example,
            prompt,
            completionIds,
            environment.settings,
          ),
      );
      rolloutSeconds += generated.rolloutSeconds;
      rewardSeconds += generated.rewardSeconds;
      firstRound ??= generated.batch;
      const batch = generated.batch;
      return {
        batch,
        filterInput: {
          rewards: Array.from(batch.rewards, (r) => (Number.isFinite(r) ? r : null)),
          groupSizes: batch.groupSizes,
          truncated: batch.samples.map((s) => s.truncated),
        },
      };
    },
    bound.groupFilter ? (input) => bound.groupFilter!.fn(input, bound.groupFilter!.options) : keepEveryGroup,
    first.prompts.length,
    bound.groupFilter ? 1 + bound.maxRefills : 1,
  );
  const metrics: Record<string, number> = {
    'time/rollout': rolloutSeconds,
    'time/reward': rewardSeconds,
    'train/generationRounds': refill.generatedBatches,
  };
  const batch =
    refill.kept.length > 0
      ? concatenateGroups(refill.kept)
      : {
          ...firstRound!,
          prompts: [],
          groupSizes: [],
          samples: [],
          rewards: new Float64Array(0),
          valid: new Uint8Array(0),
          scores: new Float64Array(0),
          errors: [],
        };
  const penalties =
    bound.klPlacement === 'reward' && bound.klCoefficient > 0 && batch.samples.length > 0
      ? klPenalties(environment, batch)
      : undefined;
  if (penalties) metrics['kl/rewardPenalty'] = penalties.reduce((a, b) => a + b, 0) / penalties.length;
  // The tracker sees the rewards the estimator sees (after KL in the reward).
  const seenRewards = penalties ? batch.rewards.map((r, i) => r - penalties[i]) : batch.rewards;
  const tracked =
    bound.tracker && batch.samples.length > 0 ? trackerInputs(environment, batch, seenRewards, state) : undefined;
  const gains =
    bound.needs.has('informationGains') && batch.samples.length > 0
      ? informationGains(
          environment.rolloutContext.model,
          environment.rolloutContext.tokenizer,
          batch,
          environment.settings,
        )
      : undefined;
  const previousEntropy = typeof state.extra.previousEntropy === 'number' ? state.extra.previousEntropy : Number.NaN;
  const temperatureLogprobs =
    bound.needs.has('temperatureLogprobs') && batch.samples.length > 0
      ? logprobsAtTemperature(environment, batch, previousEntropy, metrics)
      : undefined;
  // GRPO-CARE's inputs, per sample's first row.
  const referenceLogprobs =
    bound.needs.has('referenceTokenLogprobs') && batch.samples.length > 0
      ? frozenLogprobs(environment.referenceModel!, environment.referenceRows(firstRows(batch)), environment.settings)
      : undefined;
  const tokenizer = environment.rolloutContext.tokenizer;
  const tokenTexts = bound.needs.has('tokenTexts')
    ? batch.samples.map((sample) => sample.completionIds.map((id) => tokenizer.decode([id])))
    : undefined;
  const signal = computeSignal(bound, batch, {
    klPenalties: penalties,
    baselines: tracked?.baselines,
    informationGains: gains,
    quantileTracker: bound.needs.has('trackedQuantiles')
      ? (state.extra.quantileTracker as QuantileTracker | undefined)
      : undefined,
    temperatureLogprobs,
    previousEntropy,
    step,
    referenceLogprobs,
    tokenTexts,
  });
  for (const [key, value] of Object.entries(signal.turnCreditMetrics ?? {})) metrics[`turnCredit/${key}`] = value;
  const training = trainingRows(environment, batch, signal, metrics);
  return { batch, firstRound: firstRound!, signal, training, discounts: tracked?.discounts, metrics };
}

/** The training batch: the rows of the samples that carry gradient, with the columns the bound loss needs. */
function trainingRows(
  environment: StepEnvironment,
  batch: StepBatch,
  signal: StepSignal,
  metrics: Record<string, number>,
): TrainingBatch {
  const { bound, settings } = environment;
  const groupOf = groupIndexOf(batch.groupSizes); // a sample's images are its group prompt's
  const rows: TrainingRow[] = batch.samples.flatMap((sample, i) =>
    signal.keep[i]
      ? sampleRows(batch, i).map((row, r) => ({
          promptIds: row.promptIds,
          completionIds: row.completionIds,
          lossMask: row.lossMask,
          oldLogprobs: row.oldLogprobs,
          images: batch.prompts[groupOf[i]].images,
          advantage: signal.advantages[i],
          tokenAdvantages: signal.turnAdvantages
            ? turnTokenAdvantages(row, signal.turnAdvantages[i])
            : r === 0
              ? signal.tokenAdvantages?.[i]
              : undefined,
          group: sample.promptIndex,
        }))
      : [],
  );
  const training = trainingBatch(rows);
  if (rows.length === 0) return training;
  const { Tc } = training;
  if (bound.mismatchCorrection) {
    // π_old as the trainer's own kernels compute it; the sampler's logprobs become the rollout's.
    const recomputed = frozenColumn(environment.rolloutContext.model, training.rows, settings, Tc);
    let difference = 0;
    let tokens = 0;
    training.rows.forEach((row, r) => {
      // Over loss tokens only: tokens the policy did not produce (tool output) have no engine logprob.
      for (let t = 0; t < row.completionIds.length; t++) {
        if (row.lossMask?.[t] === 0) continue;
        difference += Math.abs(training.oldLogprobs[r * Tc + t] - recomputed[r * Tc + t]);
        tokens++;
      }
    });
    training.rolloutLogprobs = training.oldLogprobs;
    training.oldLogprobs = recomputed;
    metrics['rollout/logprob_diff'] = difference / Math.max(1, tokens);
  }
  if (bound.needs.has('groupTokenWeights')) withGroupTokenWeights(bound, training);
  const lossReadsReference =
    (bound.klPlacement === 'loss' && bound.klCoefficient > 0) || bound.needs.has('referenceLogprobs');
  if (environment.referenceModel && lossReadsReference)
    withReferenceLogprobs(settings, environment.referenceModel, training, environment.referenceRows(training.rows));
  return training;
}

// IGPO's per-turn information gains, computed with the policy: before each model turn and after the
// last one laid out, the policy's probability of the row's reference answer, teacher-forced right
// where the model would write next — π(a | context) = exp(mean log-probability of the answer's
// tokens), the geometric mean IGPO uses. A turn's gain is the probability before the next turn minus
// the probability before it (the context of the next turn holds this turn and its observation);
// the last turn's entry is 0 (IGPO replaces it by the outcome reward).
//
// Is not: the estimator (algorithms/turn-credit.ts `igpo`) or the rollout that records turns.
// Contexts are the trained rows' own tokens: a turn after a history rewrite is measured in its row.

/** Where each model turn starts: its row and the completion index of its first token, in turn order. */
function turnStarts(rows: readonly RolloutRow[]): { row: number; start: number }[] {
  const starts: { row: number; start: number }[] = [];
  rows.forEach((row, r) => {
    const turns = row.tokenTurns ?? [];
    turns.forEach((turn, t) => {
      if (turn >= 0 && (t === 0 || turns[t - 1] !== turn)) starts[turn] = { row: r, start: t };
    });
  });
  return starts;
}

/** [N][turns] information gain of every turn of every episode in the batch. */
export function informationGains(
  model: Transformer,
  tokenizer: TextTokenizer,
  batch: StepBatch,
  settings: Pick<StepSettings, 'microBatchSize'>,
): number[][] {
  const sequences: { promptIds: number[]; completionIds: number[] }[] = [];
  const owners: { sample: number; turn: number }[] = [];
  const turnCounts = batch.samples.map((sample, i) => {
    const rows = sampleRows(batch, i);
    const answer = batch.prompts[sample.promptIndex].example.answer;
    if (typeof answer !== 'string' || answer.length === 0)
      throw new Error(`algorithm.turnCredit: igpo needs the row's "answer" (sample ${i} has none)`);
    const answerIds = tokenizer.encode(answer, { addSpecialTokens: false });
    const starts = turnStarts(rows);
    // Probability before each turn: the context is the row's tokens up to that turn's first token.
    starts.forEach(({ row, start }, turn) => {
      sequences.push({
        promptIds: [...rows[row].promptIds, ...rows[row].completionIds.slice(0, start)],
        completionIds: answerIds,
      });
      owners.push({ sample: i, turn });
    });
    return starts.length;
  });
  const logprobs = frozenLogprobs(model, sequences, { microBatchSize: settings.microBatchSize, temperature: 1 });
  const probability: number[][] = turnCounts.map((count) => new Array<number>(count).fill(0));
  logprobs.forEach((values, k) => {
    const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    probability[owners[k].sample][owners[k].turn] = Math.exp(mean);
  });
  return probability.map((before) => before.map((p, turn) => (turn + 1 < before.length ? before[turn + 1] - p : 0)));
}
