/**
 * Sequence-level policy losses: GSPO (geometric-mean sequence ratio, clipped per sequence),
 * GSPO-token (the same ratio with per-token advantages) and REAL (rewards as labels: a group-wise
 * classification loss on mean log-ratios).
 *
 * Is: surrogates built from tensor ops with gradients through log π_θ only.
 * Is not: the token-level losses (policy-losses.ts) or aggregation (GSPO hands a [B, T] broadcast
 * of its per-sequence loss to `finishPolicyLoss`, whose default seq-mean-token-mean is a mean over sequences).
 */
import { z } from 'zod';
import { clipHighOption, clipLowOption, commonLossOptions } from './option-schemas.js';
import { definePolicyLoss } from './policy-losses-common.js';
import { type Tensor, add, div, exp, log, matmul, mul, reshape, sub, sum, tensor } from '../tensor/index.js';
import { resolveGroups } from './advantages-groups.js';
import { seqMeanTokenMeanWeights } from './aggregate.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  type PreparedLossInput,
  finishPolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';
import { clippedSurrogate } from './policy-losses.js';

/** [B] mean over each row's masked tokens of log π_θ − log π_old (0 for empty rows), with gradient. */
export function sequenceLogRatio(prepared: PreparedLossInput): Tensor {
  const { B, T, mask } = prepared;
  const counts = new Float32Array(B);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) counts[b] += mask[b * T + t];
  const masked = mul(logRatioOf(prepared), tensor(mask, [B, T]));
  return div(
    sum(masked, 1),
    tensor(
      counts.map((c) => Math.max(c, 1)),
      [B],
    ),
  );
}

function sequenceAdvantages(prepared: PreparedLossInput, loss: string): Float32Array {
  const { B, T } = prepared;
  if (!prepared.perSequenceAdvantages && T !== 1)
    throw new Error(`The ${loss} loss needs per-sequence advantages [B]; use gspo-token for per-token advantages.`);
  return Float32Array.from({ length: B }, (_, b) => prepared.advantages.data[b * T]);
}

function sequenceRatioMetrics(
  sequenceRatio: Float32Array,
  mask: Float32Array,
  B: number,
  T: number,
): Record<string, number> {
  const rowsWithTokens = Float32Array.from({ length: B }, (_, b) =>
    mask.subarray(b * T, (b + 1) * T).some((m) => m !== 0) ? 1 : 0,
  );
  const stats = ratioMetrics(Float32Array.from(sequenceRatio, Math.log), rowsWithTokens);
  return { sequenceRatioMean: stats.ratioMean, sequenceRatioMin: stats.ratioMin, sequenceRatioMax: stats.ratioMax };
}

/**
 * GSPO: s_i = exp(mean_t(logπ_θ − logπ_old)) (geometric mean over the sequence's tokens),
 * L_i = −min(s_i·A_i, clip(s_i, 1−ε_low, 1+ε_high)·A_i), needs per-sequence A. Defaults are the
 * paper's ε_low = 3e-4, ε_high = 4e-4; default aggregation seq-mean-token-mean (= mean over
 * sequences, forced in verl). Zheng et al. 2025, "Group Sequence Policy Optimization" (Qwen).
 */
export function gspoLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const { B, T } = prepared;
  const low = 1 - (options.epsilonLow ?? 3e-4);
  const high = 1 + (options.epsilonHigh ?? 4e-4);
  const advantages = tensor(sequenceAdvantages(prepared, 'gspo'), [B]);
  const ratio = exp(sequenceLogRatio(prepared)); // [B]
  const perSequence = clippedSurrogate(ratio, advantages, low, high); // [B]
  const surrogate = mul(reshape(perSequence, [B, 1]), tensor(new Float32Array(B * T).fill(1), [B, T]));
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatioOf(prepared).data, prepared.mask),
    ...sequenceRatioMetrics(ratio.data, prepared.mask, B, T),
  };
  const rows = Array.from({ length: B }, (_, b) => b).filter((b) =>
    prepared.mask.subarray(b * T, (b + 1) * T).some((m) => m !== 0),
  );
  metrics.clipFractionLow =
    rows.length > 0 ? rows.filter((b) => advantages.data[b] < 0 && ratio.data[b] < low).length / rows.length : 0;
  metrics.clipFractionHigh =
    rows.length > 0 ? rows.filter((b) => advantages.data[b] > 0 && ratio.data[b] > high).length / rows.length : 0;
  metrics.clipFraction = metrics.clipFractionLow + metrics.clipFractionHigh;
  return finishPolicyLoss(prepared, input, options, surrogate, seqMeanTokenMeanWeights, metrics);
}

/** `algorithm.loss: gspo`: the entry `grpo list` prints and configs name. */
export const gspoLossPart = definePolicyLoss({
  name: 'gspo',
  fn: gspoLoss,
  description: 'sequence ratio exp(mean_t log-ratio), clipped per sequence (ε 3e-4/4e-4)',
  citation: 'GSPO (Qwen 2025); TRL importance_sampling_level="sequence"',
  options: z
    .object({ epsilonLow: clipLowOption, epsilonHigh: clipHighOption })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});

/**
 * GSPO-token: w_{i,t} = sg(s_i)·π_θ(o_t)/sg(π_θ(o_t)) (value s_i, gradient of log π_θ at each token),
 * loss −min(w·A_{i,t}, clip(w)·A_{i,t}) per token; equals GSPO when A is constant over a sequence.
 * Same defaults as GSPO. Zheng et al. 2025, GSPO; TRL `importance_sampling_level="sequence_token"`.
 */
export function gspoTokenLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const { B, T, logprobs } = prepared;
  const low = 1 - (options.epsilonLow ?? 3e-4);
  const high = 1 + (options.epsilonHigh ?? 4e-4);
  const sequenceLog = sequenceLogRatio(prepared).detach(); // [B]
  const logWeight = add(reshape(sequenceLog, [B, 1]), sub(logprobs, logprobs.detach())); // [B, T]
  const weight = exp(logWeight);
  const surrogate = clippedSurrogate(weight, prepared.advantages, low, high);
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatioOf(prepared).data, prepared.mask),
    ...sequenceRatioMetrics(Float32Array.from(sequenceLog.data, Math.exp), prepared.mask, B, T),
  };
  return finishPolicyLoss(prepared, input, options, surrogate, seqMeanTokenMeanWeights, metrics);
}

/** `algorithm.loss: gspo-token`: the entry `grpo list` prints and configs name. */
export const gspoTokenLossPart = definePolicyLoss({
  name: 'gspo-token',
  fn: gspoTokenLoss,
  description: 'GSPO ratio with per-token advantages: sg(s)·π/sg(π)',
  citation: 'GSPO (Qwen 2025); TRL "sequence_token"',
  options: z
    .object({ epsilonLow: clipLowOption, epsilonHigh: clipHighOption })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});

/** log(1 + Σ_k m_k·e^{x_k}) per group, as [G] = log(e^{−c} + M·e^{x−c}) + c with a constant shift c. */
function logOnePlusSumExp(x: Tensor, membership: Float32Array, G: number, B: number): Tensor {
  let shift = 0;
  for (let b = 0; b < B; b++) for (let g = 0; g < G; g++) if (membership[g * B + b]) shift = Math.max(shift, x.data[b]);
  const shifted = exp(sub(x, shift)); // [B]
  const sums = reshape(matmul(tensor(membership, [G, B]), reshape(shifted, [B, 1])), [G]);
  return add(log(add(sums, Math.exp(-shift))), shift);
}

/**
 * REAL (rewards as labels): per group, L = log(1 + Σ_pos e^{−s̄_k/τ}) + log(1 + Σ_neg e^{s̄_k/τ}) with
 * s̄_k = mean_t(logπ_θ − logπ_old) and τ = 0.5; the loss is the mean over groups that have a labelled
 * sequence. Labels: input.sequenceLabels (1 positive, 0 negative, NaN ignored) or else the sign of the
 * advantage (0 ignored). Needs input.groupSizes (whole groups per batch); KL and token weightings are
 * not supported. "Rewards as Labels: Revisiting RLVR from a Classification Perspective" (#244; ms-swift REAL doc).
 */
export function realLoss(input: PolicyLossInput, options: PolicyLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const { B } = prepared;
  for (const field of ['klCoefficient', 'mismatchCorrection', 'topEntropyQuantile'] as const) {
    if (options[field] !== undefined && options[field] !== 0)
      throw new Error(`The real loss does not support options.${field}.`);
  }
  if (input.groupSizes === undefined) throw new Error('The real loss needs input.groupSizes (whole groups per batch).');
  const layout = resolveGroups(B, input.groupSizes);
  const temperature = options.temperature ?? 0.5;
  if (!(temperature > 0)) throw new RangeError(`options.temperature must be > 0, got ${temperature}.`);
  const labels = input.sequenceLabels;
  const advantages = labels === undefined ? sequenceAdvantages(prepared, 'real') : new Float32Array(B);
  if (labels !== undefined && labels.length !== B)
    throw new RangeError(`input.sequenceLabels has ${labels.length} entries but there are ${B} sequences.`);
  const G = layout.groupCount;
  const positive = new Float32Array(G * B);
  const negative = new Float32Array(G * B);
  for (let b = 0; b < B; b++) {
    const label = labels !== undefined ? labels[b] : advantages[b] > 0 ? 1 : advantages[b] < 0 ? 0 : NaN;
    if (label === 1) positive[layout.groupOf[b] * B + b] = 1;
    else if (label === 0) negative[layout.groupOf[b] * B + b] = 1;
    else if (!Number.isNaN(label)) throw new RangeError(`input.sequenceLabels[${b}] is ${label}; use 1, 0 or NaN.`);
  }
  const meanLogRatio = sequenceLogRatio(prepared); // [B]
  const perGroup = add(
    logOnePlusSumExp(mul(meanLogRatio, -1 / temperature), positive, G, B),
    logOnePlusSumExp(mul(meanLogRatio, 1 / temperature), negative, G, B),
  ); // [G]
  const labelled = Float32Array.from({ length: G }, (_, g) =>
    positive.subarray(g * B, (g + 1) * B).some((v) => v) || negative.subarray(g * B, (g + 1) * B).some((v) => v)
      ? 1
      : 0,
  );
  const groupCount = Math.max(options.globalGroupCount ?? labelled.reduce((a, b) => a + b, 0), 1);
  const loss = div(sum(mul(perGroup, tensor(labelled, [G]))), groupCount);
  return {
    loss,
    metrics: {
      ...ratioMetrics(logRatioOf(prepared).data, prepared.mask),
      policyLoss: loss.item(),
      labelledGroups: groupCount,
    },
  };
}

/** `algorithm.loss: real`: the entry `grpo list` prints and configs name. */
export const realLossPart = definePolicyLoss({
  name: 'real',
  fn: realLoss,
  description:
    'rewards as labels: log(1+Σ_pos e^{−s̄/τ}) + log(1+Σ_neg e^{s̄/τ}) per group, τ = 0.5; whole groups per micro-batch',
  citation: 'REAL (#244); ms-swift REAL doc',
  needs: ['wholeGroups'],
  options: z.object({ temperature: z.number().positive() }).partial().strict(),
  refuses: (_options, settings) => [
    ...(settings.klCoefficient > 0 && settings.klPlacement === 'loss'
      ? [
          'algorithm.klCoefficient: the real loss has no per-token KL term; use algorithm.klPlacement "reward" or klCoefficient 0',
        ]
      : []),
    ...(settings.mismatchCorrection
      ? ['algorithm.mismatchCorrection: the real loss has no per-token weights to correct; set it to null']
      : []),
  ],
});
