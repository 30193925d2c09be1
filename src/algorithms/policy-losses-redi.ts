/**
 * REDI: reinforcement distillation (Xu, Peng, Long, Xu, Chu, Qi, "Harnessing Negative Signals:
 * Reinforcement Distillation from Teacher Data for LLM Reasoning", #72, arXiv 2505.24850). A
 * reference-free objective on positive and negative traces: raise the length-normalised
 * log-likelihood of correct traces, lower that of wrong ones with a smaller, asymmetric weight.
 *
 * Is: the loss and its entry, exact to the authors' code (Tim-Siu/reinforcement-distillation,
 * `trl/trl/trainer/dpo2_trainer.py`, `dpo_loss` with loss_type 'reinforce': per pair
 * −c₊·logπ(y₊)/|y₊| + c₋·logπ(y₋)/|y₋|, lengths clamped at 1, optional negative weighting
 * exp(γ·logπ(y₋)/|y₋|) with its gradient), with the coefficients of their recipe
 * `experiments_trl/recipes/redi/redi_1_08_1e-6/config.yaml` (reinforce_chosen_coef 1,
 * reinforce_rejected_coef 0.8, no negative weighting, reference_free). Their per-pair mean is
 * reproduced as the sum over labelled sequences divided by half the batch's sequences: on a batch of
 * P (correct, wrong) pairs that is exactly their mean over pairs.
 * Is not: the data. REDI's stage 2 trains offline on a teacher's traces; this loss trains on
 * whatever completions the step holds (the policy's own, or a rollout's that returns teacher
 * traces); labels are the sign of each sequence's advantage (or `input.sequenceLabels`).
 */
import { z } from 'zod';
import { add, div, exp, mul, sum, tensor } from '../tensor/index.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';
import type { RunSettings } from './registry.js';

/** REDI's options (the authors' names in brackets). */
export interface RediLossOptions {
  /** c₊, the factor on the correct traces' normalised log-likelihood [reinforce_chosen_coef] (default 1). */
  positiveCoefficient?: number;
  /** c₋, the factor on the wrong traces' normalised log-likelihood [reinforce_rejected_coef] (default 0.8). */
  negativeCoefficient?: number;
  /** γ of the negative weighting exp(γ·logπ(y₋)/|y₋|) [neg_weighting_gamma]; absent: off [use_neg_weighting false]. */
  negativeWeightingGamma?: number;
}

function nonNegative(value: number, field: string): number {
  if (!(value >= 0 && Number.isFinite(value))) throw new RangeError(`options.${field} must be ≥ 0, got ${value}.`);
  return value;
}

/** Each row's label: 1 correct, 0 wrong, NaN none (no tokens, advantage 0, or a NaN label). */
function sequenceLabels(
  input: PolicyLossInput,
  advantages: Float32Array,
  mask: Float32Array,
  tokens: Float32Array,
  T: number,
) {
  const B = tokens.length;
  const labels = input.sequenceLabels;
  if (labels !== undefined && labels.length !== B)
    throw new RangeError(`input.sequenceLabels has ${labels.length} entries but there are ${B} sequences.`);
  return Float32Array.from({ length: B }, (_, b) => {
    if (tokens[b] === 0) return NaN;
    if (labels !== undefined) {
      if (labels[b] !== 0 && labels[b] !== 1 && !Number.isNaN(labels[b]))
        throw new RangeError(`input.sequenceLabels[${b}] is ${labels[b]}; use 1, 0 or NaN.`);
      return labels[b];
    }
    let t = 0;
    while (t < T - 1 && !mask[b * T + t]) t++; // the sequence's advantage: its first token's, if per token
    const advantage = advantages[b * T + t];
    return advantage > 0 ? 1 : advantage < 0 ? 0 : NaN;
  });
}

/**
 * REDI loss: Σ_b ℓ_b / (N/2), ℓ_b = −c₊·s_b for a correct trace and c₋·s_b·w_b for a wrong one,
 * s_b = Σ_t logπ_θ / max(|y_b|, 1), w_b = exp(γ·s_b) with gradient (or 1 without γ), N the batch's
 * sequences (`globalSequenceCount`, else this call's rows with tokens). Defaults c₊ = 1, c₋ = 0.8.
 * #72 (arXiv 2505.24850); Tim-Siu/reinforcement-distillation dpo2_trainer.py dpo_loss 'reinforce'.
 */
export function rediLoss(input: PolicyLossInput, options: PolicyLossOptions & RediLossOptions = {}): PolicyLossResult {
  for (const field of ['klCoefficient', 'mismatchCorrection', 'topEntropyQuantile'] as const)
    if (options[field] !== undefined && options[field] !== 0)
      throw new Error(`The redi loss does not support options.${field}.`);
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const positiveCoefficient = nonNegative(options.positiveCoefficient ?? 1, 'positiveCoefficient');
  const negativeCoefficient = nonNegative(options.negativeCoefficient ?? 0.8, 'negativeCoefficient');
  const gamma = options.negativeWeightingGamma;
  if (gamma !== undefined && !Number.isFinite(gamma))
    throw new RangeError(`options.negativeWeightingGamma must be finite, got ${gamma}.`);
  const tokens = new Float32Array(B);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) tokens[b] += mask[b * T + t];
  const label = sequenceLabels(input, prepared.advantages.data, mask, tokens, T);
  const localSequences = tokens.filter((n) => n > 0).length;
  const sequences = options.globalSequenceCount ?? Math.max(localSequences, 1);
  if (!(sequences > 0)) throw new RangeError(`options.globalSequenceCount must be > 0, got ${sequences}.`);
  const pairs = sequences / 2;

  // s [B]: each row's length-normalised log-likelihood (padding is 0 in prepared.logprobs).
  const normalised = div(
    sum(prepared.logprobs, 1),
    tensor(
      tokens.map((n) => Math.max(n, 1)),
      [B],
    ),
  );
  const positiveScale = new Float32Array(B);
  const negativeScale = new Float32Array(B);
  let positives = 0;
  let negatives = 0;
  for (let b = 0; b < B; b++) {
    if (label[b] === 1) {
      positiveScale[b] = -positiveCoefficient / pairs;
      positives++;
    } else if (label[b] === 0) {
      negativeScale[b] = negativeCoefficient / pairs;
      negatives++;
    }
  }
  const negativeTerm = gamma === undefined ? normalised : mul(normalised, exp(mul(normalised, gamma))); // w_b keeps its gradient, as theirs
  const loss = sum(add(mul(normalised, tensor(positiveScale, [B])), mul(negativeTerm, tensor(negativeScale, [B]))));
  const logRatio = logRatioOf(prepared);
  return {
    loss,
    metrics: {
      ...ratioMetrics(logRatio.data, mask),
      policyLoss: loss.item(),
      rediPositives: positives,
      rediNegatives: negatives,
    },
  };
}

/** The run settings REDI cannot work with: it is reference-free and has no per-token weights. */
function refusesRedi(settings: RunSettings): string[] {
  return [
    ...(settings.klCoefficient > 0 && settings.klPlacement === 'loss'
      ? [
          'algorithm.klCoefficient: the redi loss is reference-free (the authors set reference_free); use algorithm.klPlacement "reward" or klCoefficient 0',
        ]
      : []),
    ...(settings.mismatchCorrection
      ? ['algorithm.mismatchCorrection: the redi loss has no per-token weights to correct; set it to null']
      : []),
  ];
}

/** `algorithm.loss: redi`: the entry `grpo list` prints and configs name. */
export const rediLossPart = definePolicyLoss({
  name: 'redi',
  fn: rediLoss,
  description:
    'correct: −c₊·logπ(y)/|y|, wrong: +c₋·logπ(y)/|y| (c₊ 1, c₋ 0.8; optional ×exp(γ·logπ(y)/|y|)); Σ / (N/2) = mean over pairs',
  citation: 'REDI (#72, arXiv 2505.24850); Tim-Siu/reinforcement-distillation dpo2_trainer.py dpo_loss reinforce',
  options: z
    .object({
      positiveCoefficient: z.number().nonnegative().describe('c₊ on correct traces (default 1)'),
      negativeCoefficient: z.number().nonnegative().describe('c₋ on wrong traces (default 0.8)'),
      negativeWeightingGamma: z.number().describe('γ of the negative weighting exp(γ·logπ/|y|) (default: off)'),
    })
    .partial()
    .strict(),
  refuses: (_options, settings) => refusesRedi(settings),
});
