/**
 * One optimiser step over a batch of completions: micro-batches with gradient accumulation and the
 * correct global token/sequence counts, the configured policy loss + aggregation + KL composed by
 * name, gradient clipping, the non-finite guard, and AdamW.
 *
 * Is not: scoring or logging, or the SFT step (sft.ts, which shares `applyUpdate`). Returns metrics averaged over micro-batches (weighted by tokens).
 */
import { aggregateLoss, gtpoTokenWeights, topEntropyThreshold, type PolicyLossOptions } from '../algorithms/index.js';
import type { Transformer } from '../model/transformer.js';
import { AdamW, clipGradNorm } from '../nn/index.js';
import { combineSeeds, mul, noGrad, sub, type Tensor, withTrainingWeights } from '../tensor/index.js';
import type { BoundAlgorithm } from '../config/algorithm.js';
import type { TrainerConfig } from '../config/config.js';
import { releaseGarbage } from '../tensor/garbage.js';
import type { TrainerState } from '../run/run-folder.js';
import type { Example } from '../data/task.js';
import type { RewardInput } from '../rewards/types.js';
import type { RenderedPrompt } from './vision-run.js';
import { completionLogprobs, padRows, type TokenSequence } from './completion-logprobs.js';

/** One trained row as the step builds it (the input of `trainingBatch`). */
export interface TrainingRow extends TokenSequence {
  /** log π_old of each completion token (the sampler's). */
  oldLogprobs: ArrayLike<number>;
  advantage: number;
  /** Per-token advantages from a token-level estimator; override `advantage` when present. */
  tokenAdvantages?: ArrayLike<number>;
  /** The sample's group in the step batch: micro-batches keep groups whole when the loss needs it. */
  group: number;
}

/**
 * The rows the optimiser trains on, as columns built once per step: each row's tokens, and per
 * completion token [R, Tc] row-major columns (padding 0). Model-side columns (reference logprobs,
 * π_old recomputed, token weights) are added to it; a micro-batch is a row range that reads views of
 * the columns, never a re-padded copy.
 */
export interface TrainingBatch {
  /** [R] the token rows (prompt, completion, loss mask, images). */
  rows: TokenSequence[];
  /** The padded completion length of every per-token column. */
  Tc: number;
  /** [R] the row's group in the step batch. */
  group: Int32Array;
  /** [R] the row's advantage. */
  advantage: Float32Array;
  /** [R·Tc] log π_old: the sampler's, or the trainer's recomputation under mismatch correction. */
  oldLogprobs: Float32Array;
  /** [R·Tc] per-token advantages (rows without their own repeat `advantage`); absent = `advantage`. */
  tokenAdvantages?: Float32Array;
  /** [R·Tc] the sampler's logprobs, when `oldLogprobs` are the trainer's recomputation (mismatch correction). */
  rolloutLogprobs?: Float32Array;
  /** [R·Tc] log π_ref, when the loss reads it (KL in the loss; see withReferenceLogprobs). */
  refLogprobs?: Float32Array;
  /** [R·Tc] per-token weights computed from the whole group (GTPO conflict tokens). */
  tokenWeights?: Float32Array;
}

/** The training batch of `rows`: the one copy of their per-token arrays into columns. */
export function trainingBatch(rows: readonly TrainingRow[]): TrainingBatch {
  const Tc = Math.max(1, ...rows.map((row) => row.completionIds.length));
  const batch: TrainingBatch = {
    rows: rows.map(({ promptIds, completionIds, lossMask, images }) => ({
      promptIds,
      completionIds,
      lossMask,
      images,
    })),
    Tc,
    group: Int32Array.from(rows, (row) => row.group),
    advantage: Float32Array.from(rows, (row) => row.advantage),
    oldLogprobs: padRows(
      rows.map((row) => row.oldLogprobs),
      Tc,
    ),
  };
  if (rows.some((row) => row.tokenAdvantages))
    batch.tokenAdvantages = padRows(
      rows.map((row) => row.tokenAdvantages ?? row.completionIds.map(() => row.advantage)),
      Tc,
    );
  return batch;
}

/** The sub-batch of rows `[start, end)`: views of the same columns (tests and diagnostics). */
export function trainingRange(batch: TrainingBatch, start: number, end: number): TrainingBatch {
  const { Tc } = batch;
  const view = (values?: Float32Array) => values?.subarray(start * Tc, end * Tc);
  return {
    rows: batch.rows.slice(start, end),
    Tc,
    group: batch.group.subarray(start, end),
    advantage: batch.advantage.subarray(start, end),
    oldLogprobs: view(batch.oldLogprobs)!,
    tokenAdvantages: view(batch.tokenAdvantages),
    rolloutLogprobs: view(batch.rolloutLogprobs),
    refLogprobs: view(batch.refLogprobs),
    tokenWeights: view(batch.tokenWeights),
  };
}

/** The numbers of the step that are not part of the algorithm. */
export interface StepSettings {
  microBatchSize: number;
  /** Sampling temperature: training logprobs use logits / temperature, as the sampler did. */
  temperature: number;
  /** L_max of the constant-normaliser aggregation: the completion limit (an agent run: agent.maxEpisodeTokens). */
  maxNewTokens: number;
  maxGradNorm: number;
}

export function stepSettingsOf(config: TrainerConfig): StepSettings {
  return {
    microBatchSize: config.grpo.microBatchSize,
    temperature: config.sampling.temperature,
    // L_max of the constant normaliser is the longest completion a row can have: an agent episode's
    // rows hold up to agent.maxEpisodeTokens (turns and observations), not one turn's maxNewTokens.
    maxNewTokens: config.agent ? config.agent.maxEpisodeTokens : config.sampling.maxNewTokens,
    maxGradNorm: config.optimizer.maxGradNorm,
  };
}

/** Loss-carrying tokens of a sample: its loss mask's ones, or every completion token (id 0 included). */
export function lossTokenCount(sample: TokenSequence): number {
  return sample.lossMask ? sample.lossMask.reduce((a: number, b) => a + (b ? 1 : 0), 0) : sample.completionIds.length;
}

/**
 * The micro-batches of a batch as row ranges of at most `size` rows; with `wholeGroups`, a group is
 * never split (a micro-batch closes early rather than cut one), so group-level losses see every member.
 */
export function microBatches(
  group: ArrayLike<number>,
  size: number,
  wholeGroups: boolean,
): { start: number; end: number }[] {
  const ranges: { start: number; end: number }[] = [];
  if (!wholeGroups) {
    for (let start = 0; start < group.length; start += size)
      ranges.push({ start, end: Math.min(group.length, start + size) });
    return ranges;
  }
  let current = { start: 0, end: 0 };
  for (let start = 0; start < group.length;) {
    let end = start;
    while (end < group.length && group[end] === group[start]) end++;
    if (end - start > size)
      throw new Error(
        `group ${group[start]} has ${end - start} samples, more than grpo.microBatchSize ${size}; the loss needs whole groups`,
      );
    if (end - current.start > size) {
      ranges.push(current);
      current = { start, end: start };
    }
    current.end = end;
    start = end;
  }
  if (current.end > current.start) ranges.push(current);
  return ranges;
}

/**
 * [R·Tc] log π of every row's completion tokens under a frozen model (the reference, or the policy
 * before its update), in micro-batches, without gradient: each micro-batch's forward writes its rows.
 */
export function frozenColumn(
  model: Transformer,
  rows: readonly TokenSequence[],
  settings: Pick<StepSettings, 'microBatchSize' | 'temperature'>,
  Tc: number,
): Float32Array {
  const result = new Float32Array(rows.length * Tc);
  withTrainingWeights(model.parameters.values(), () => {
    for (let start = 0; start < rows.length; start += settings.microBatchSize) {
      const micro = rows.slice(start, start + settings.microBatchSize);
      const { logprobs } = noGrad(() =>
        completionLogprobs(model, micro, settings.temperature, { completionLength: Tc }),
      );
      result.set(logprobs.data, start * Tc);
      releaseGarbage(); // this forward's intermediates, before the next one allocates its own
    }
  });
  return result;
}

/** log π of every completion token under a frozen model, one array per sequence (frozenColumn's rows). */
export function frozenLogprobs(
  model: Transformer,
  samples: readonly TokenSequence[],
  settings: Pick<StepSettings, 'microBatchSize' | 'temperature'>,
): Float32Array[] {
  const Tc = Math.max(1, ...samples.map((sample) => sample.completionIds.length));
  const values = frozenColumn(model, samples, settings, Tc);
  return samples.map((sample, r) => values.slice(r * Tc, r * Tc + sample.completionIds.length));
}

/**
 * RewardInput.policyLogprobsAfter: the row rendered (`render`: the run's own prompt rendering) with
 * `prompt` in its prompt's place, and log π of `completionIds` after it, one frozen forward.
 */
export async function frozenLogprobsAfter(
  model: Transformer,
  render: (example: Example, where: string) => Promise<RenderedPrompt>,
  example: Example,
  prompt: RewardInput['prompt'],
  completionIds: readonly number[],
  settings: Pick<StepSettings, 'microBatchSize' | 'temperature'>,
): Promise<number[]> {
  const rendered = await render(
    { ...example, prompt: typeof prompt === 'string' ? prompt : [...prompt] },
    "a reward's policyLogprobsAfter prompt",
  );
  const row = { promptIds: rendered.ids, completionIds: [...completionIds], images: rendered.images };
  return Array.from(frozenLogprobs(model, [row], settings)[0]);
}

/**
 * The reference model's logprobs of every completion token as the batch's `refLogprobs` column,
 * computed once per batch (μ passes reuse them: the reference never changes).
 */
export function withReferenceLogprobs(
  settings: StepSettings,
  referenceModel: Transformer,
  batch: TrainingBatch,
  /** The same rows as the reference reads them (a vision-language reference's own connector). */
  read: readonly TokenSequence[] = batch.rows,
): void {
  batch.refLogprobs = frozenColumn(referenceModel, read, settings, batch.Tc);
}

/** GTPO conflict-token weights of the batch's rows, computed over each group's rows (before micro-batching). */
export function withGroupTokenWeights(bound: BoundAlgorithm, batch: TrainingBatch): void {
  const weights = gtpoTokenWeights(
    batch.rows.map((row) => row.completionIds),
    Array.from(batch.advantage),
    runLengths(batch.group),
    bound.loss.options,
  );
  batch.tokenWeights = padRows(weights, batch.Tc);
}

export interface StepOutcome {
  metrics: Record<string, number>;
  /** False when the loss or gradient was not finite and the update was skipped. */
  applied: boolean;
}

/** The options the bound loss runs with: its own, plus the trainer-side ones (aggregation, KL, global counts). */
export function lossOptionsFor(bound: BoundAlgorithm, settings: Pick<StepSettings, 'maxNewTokens'>): PolicyLossOptions {
  return {
    ...bound.loss.options,
    aggregation: bound.aggregation.fn,
    klCoefficient: bound.klPlacement === 'loss' ? bound.klCoefficient : 0,
    klEstimator: bound.klEstimator.fn,
    maxLength: settings.maxNewTokens,
    mismatchCorrection: bound.mismatchCorrection ?? undefined,
  };
}

/**
 * Parameters as AdamW wants them: matrices decay, norms and biases do not. With LoRA only the
 * adapters' A and B (matrices, PEFT names), so the frozen base weights get no optimiser state. With
 * a vision-language model (`vision`: its weights by HF name) every weight that trains: the language
 * model and the connector (and the tower when unfrozen).
 */
export function optimizedParameters(model: Transformer, vision?: ReadonlyMap<string, Tensor>) {
  const trained = vision
    ? [...vision].filter(([, tensor]) => tensor.requiresGrad)
    : model.adapters
      ? model.adapters.namedParameters()
      : [...model.parameters];
  return trained.map(([name, tensor]) => ({
    name,
    tensor,
    decay: tensor.rank >= 2 && !/norm\d?\.weight$/.test(name), // SigLIP's layer_norm1/2 too
  }));
}

/** Clips the gradient of every parameter the optimiser updates, then steps unless something was not finite. */
export function applyUpdate(
  optimizer: AdamW,
  maxGradNorm: number,
  lossValue: number,
): { gradNorm: number; applied: boolean } {
  const parameters = optimizer.parameters.map(({ tensor }) => tensor);
  const gradNorm = maxGradNorm > 0 ? clipGradNorm(parameters, maxGradNorm) : clipGradNorm(parameters, Infinity);
  const applied = Number.isFinite(gradNorm) && Number.isFinite(lossValue);
  if (applied) optimizer.step();
  optimizer.zeroGrad();
  return { gradNorm, applied };
}

/** Groups with at least one row of non-zero advantage (REAL's labelled groups), over the whole batch. */
function labelledGroupCount(batch: TrainingBatch): number {
  return new Set(batch.group.filter((_, r) => batch.advantage[r] !== 0)).size;
}

/**
 * Runs the bound loss over the batch in micro-batches and accumulates the parameter gradients
 * (it does not step). Global token, sequence and group counts make the accumulated gradient equal
 * the whole batch's in one pass; the entropy bonus is −λ_H·H aggregated like the policy loss.
 */
export function accumulatePolicyGradients(
  bound: BoundAlgorithm,
  settings: StepSettings,
  model: Transformer,
  batch: TrainingBatch,
  dropoutSeed?: number,
): { lossTotal: number; metrics: Record<string, number> } {
  // The weights change only in the optimiser step after this returns: a device backend keeps them there
  // for every micro-batch's forward and backward (a no-op on the CPU backends).
  return withTrainingWeights(model.parameters.values(), () =>
    accumulateWithFixedWeights(bound, settings, model, batch, dropoutSeed),
  );
}

function accumulateWithFixedWeights(
  bound: BoundAlgorithm,
  settings: StepSettings,
  model: Transformer,
  batch: TrainingBatch,
  dropoutSeed: number | undefined,
): { lossTotal: number; metrics: Record<string, number> } {
  const globals = {
    globalTokenCount: batch.rows.reduce((total, row) => total + lossTokenCount(row), 0),
    globalSequenceCount: batch.rows.length,
    globalGroupCount: labelledGroupCount(batch),
  };
  const options: PolicyLossOptions = { ...lossOptionsFor(bound, settings), ...globals };
  const wholeGroups = bound.needs.has('wholeGroups');
  const ranges = microBatches(batch.group, settings.microBatchSize, wholeGroups);
  if (options.topEntropyQuantile !== undefined) {
    // The quantile is over the whole batch's tokens: one gradient-free pass over the same micro-batches first.
    const entropies: number[] = [];
    const masks: number[] = [];
    for (const { start, end } of ranges) {
      const { entropies: values, mask } = noGrad(() =>
        completionLogprobs(model, batch.rows.slice(start, end), settings.temperature, { completionLength: batch.Tc }),
      );
      entropies.push(...values);
      masks.push(...mask);
      releaseGarbage(); // this forward's intermediates
    }
    options.topEntropyThreshold = topEntropyThreshold(entropies, masks, options.topEntropyQuantile);
  }
  const accumulator = new MetricAccumulator();
  let lossTotal = 0;
  for (const [index, range] of ranges.entries()) {
    // Each micro-batch its own LoRA dropout masks: the step's seed mixed with the micro-batch index.
    const seed = dropoutSeed === undefined ? undefined : combineSeeds(dropoutSeed, index);
    // The previous micro-batch's graph (unreachable once its call returned) or the rollout's arrays,
    // collected before this forward allocates its activations beside them.
    releaseGarbage();
    const result = microBatchGradients(
      bound,
      settings,
      model,
      trainingRange(batch, range.start, range.end),
      options,
      wholeGroups,
      seed,
    );
    lossTotal += result.loss;
    accumulator.add(result.metrics, result.tokens);
  }
  releaseGarbage(); // the last graph, before the optimiser step and the next rollout
  return { lossTotal, metrics: accumulator.result() };
}

/**
 * Forward, loss and backward of one micro-batch (gradients accumulate into the parameters); returns
 * numbers only, so the graph is unreachable once it returns.
 */
function microBatchGradients(
  bound: BoundAlgorithm,
  settings: StepSettings,
  model: Transformer,
  micro: TrainingBatch,
  options: PolicyLossOptions,
  wholeGroups: boolean,
  dropoutSeed: number | undefined,
): { loss: number; metrics: Record<string, number>; tokens: number } {
  const lossNeedsEntropy = bound.needs.has('entropyWithGradient');
  const forward = completionLogprobs(model, micro.rows, settings.temperature, {
    entropyWithGradient: bound.entropyCoefficient > 0 || lossNeedsEntropy,
    dropoutSeed,
    completionLength: micro.Tc,
  });
  const { logprobs, mask, entropies } = forward;
  const result = bound.loss.fn(
    {
      logprobs,
      oldLogprobs: micro.oldLogprobs,
      advantages: micro.tokenAdvantages ?? micro.advantage,
      mask,
      refLogprobs: micro.refLogprobs,
      rolloutLogprobs: micro.rolloutLogprobs,
      tokenWeights: micro.tokenWeights,
      entropies,
      entropyTensor: lossNeedsEntropy ? forward.entropyTensor : undefined,
      groupSizes: wholeGroups ? runLengths(micro.group) : undefined,
    },
    options,
  );
  let loss = result.loss;
  if (bound.entropyCoefficient > 0 && forward.entropyTensor) {
    const bonus = aggregateLoss(forward.entropyTensor, mask, bound.aggregation.fn, { ...options });
    result.metrics.entropyBonus = -bound.entropyCoefficient * bonus.item();
    loss = sub(loss, mul(bonus, bound.entropyCoefficient));
  }
  if (bound.needs.has('previousEntropy')) {
    // DCPO's entropy estimate, as the authors' entropy_loss: −mean logπ_θ of this micro-batch's loss tokens.
    let total = 0;
    let count = 0;
    mask.forEach((m, i) => {
      if (m) {
        total -= logprobs.data[i];
        count++;
      }
    });
    result.metrics[UPDATE_ENTROPY_METRIC.slice('loss/'.length)] = count > 0 ? total / count : 0;
  }
  loss.backward();
  return {
    loss: loss.item(),
    metrics: result.metrics,
    tokens: mask.reduce((a, b) => a + b, 0),
  };
}

/**
 * The metric an update logs when a part needs `previousEntropy`: −mean logπ_θ over the update's loss
 * tokens (micro-batches weighted by their tokens); recordStepState keeps it for the next step.
 */
export const UPDATE_ENTROPY_METRIC = 'loss/sampledNegativeLogprob';

/** Lengths of runs of equal values: [0,0,1,1,1] → [2,3]. */
function runLengths(values: ArrayLike<number>): number[] {
  const lengths: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (i === 0 || values[i] !== values[i - 1]) lengths.push(0);
    lengths[lengths.length - 1]++;
  }
  return lengths;
}

/** One policy-gradient update over the batch (its rows already those that carry gradient). */
export function policyStep(
  bound: BoundAlgorithm,
  settings: StepSettings,
  model: Transformer,
  optimizer: AdamW,
  batch: TrainingBatch,
  dropoutSeed?: number,
): StepOutcome {
  optimizer.zeroGrad();
  const { lossTotal, metrics } = accumulatePolicyGradients(bound, settings, model, batch, dropoutSeed);
  const { gradNorm, applied } = applyUpdate(optimizer, settings.maxGradNorm, lossTotal);
  return { metrics: { ...metrics, 'loss/total': lossTotal, gradNorm }, applied };
}

// Loss metric names → the stable names of docs/run-folder.md, and how micro-batches combine them:
// the policy loss and the entropy bonus are already shares of the global mean (sum), extremes take min/max, the rest
// are token-weighted means.
const METRIC_NAMES: Record<string, [string, 'sum' | 'min' | 'max' | 'mean']> = {
  policyLoss: ['loss/policy', 'sum'],
  kl: ['loss/kl', 'mean'],
  clipFractionLow: ['clip/low', 'mean'],
  clipFractionHigh: ['clip/high', 'mean'],
  clipFraction: ['clip/region', 'mean'],
  ratioMean: ['ratio/mean', 'mean'],
  ratioMin: ['ratio/min', 'min'],
  ratioMax: ['ratio/max', 'max'],
  approxKl: ['kl/approx', 'mean'],
  entropy: ['entropy', 'mean'],
  entropyBonus: ['loss/entropyBonus', 'sum'], // like the policy loss, each micro-batch's is its share
};

class MetricAccumulator {
  private readonly values = new Map<string, { mode: 'sum' | 'min' | 'max' | 'mean'; total: number; weight: number }>();

  add(metrics: Record<string, number>, tokens: number): void {
    for (const [rawName, value] of Object.entries(metrics)) {
      const [name, mode] = METRIC_NAMES[rawName] ?? [`loss/${rawName}`, 'mean'];
      const entry = this.values.get(name) ?? {
        mode,
        total: mode === 'min' ? Infinity : mode === 'max' ? -Infinity : 0,
        weight: 0,
      };
      if (mode === 'sum') entry.total += value;
      else if (mode === 'min') entry.total = Math.min(entry.total, value);
      else if (mode === 'max') entry.total = Math.max(entry.total, value);
      else entry.total += value * tokens;
      entry.weight += tokens;
      this.values.set(name, entry);
    }
  }

  result(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, { mode, total, weight }] of this.values)
      out[name] = mode === 'mean' ? total / Math.max(1, weight) : total;
    return out;
  }
}

/**
 * Counts a skipped step (a loss or gradient that was not finite, so the update was not applied):
 * `limit` in a row stop the run, which has stopped learning. The count is in `TrainerState`, so it
 * survives a resume. Both loops (SFT and GRPO) call it after their update.
 */
export function countSkippedStep(state: TrainerState, applied: boolean, limit: number): void {
  state.consecutiveSkips = applied ? 0 : state.consecutiveSkips + 1;
  if (state.consecutiveSkips >= limit) {
    throw new Error(
      `stopping: ${state.consecutiveSkips} consecutive steps had a non-finite loss or gradient (step ${state.step}); lower the learning rate or check the rewards`,
    );
  }
}
