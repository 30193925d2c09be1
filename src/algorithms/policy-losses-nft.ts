/**
 * NFT: negative-aware fine-tuning (Chen et al., "Bridging Supervised Learning and Reinforcement
 * Learning in Math Reasoning", #48, arXiv 2505.18116). A supervised loss: maximise the likelihood
 * ratio of correct answers, −log ρ, and of wrong answers under the implicit negative policy
 * (1 − c·ρ)/(1 − c), −log of that, where c is the group's correct rate. Strictly on-policy its
 * gradient is Dr. GRPO's (positives −(1 − c), negatives +c per token, with the default 1 − c factor).
 *
 * Is: the loss and its entry, exact to the authors' code (NVlabs/NFT `dp_actor.py`,
 * `DataParallelPPOActor.update_policy` with neg_weight ≥ 0 and ratio_type 'token'; the correct rate as
 * `ray_nft_trainer.py` `compute_dapo_nft_outcome_advantage`), with their defaults
 * (`config/nft_trainer.yaml`, `train_7B.sh`): neg_weight 1, clamp_negative 1, clamp_positive 0,
 * normalize 1, log-ratio capped at 10, both clamps straight-through (value clamped, gradient not).
 * Is not: their 'sequence' ratio_type, nor their reduction, Σ_tokens/1000 per micro-batch: the
 * default here is seq-mean-token-sum-norm, Σ/(N·L_max), also a token sum over a constant (pass an
 * aggregation weighting 1/1000 to get theirs). Groups without both a correct and a wrong answer
 * carry no loss: the authors require DAPO's filter for them (they assert 0 < c < 1).
 */
import { z } from 'zod';
import { commonLossOptions } from './option-schemas.js';
import { add, clamp, exp, log, mul, tensor } from '../tensor/index.js';
import { type Tensor } from '../tensor/index.js';
import { resolveGroups } from './advantages-groups.js';
import { seqMeanTokenSumNormWeights } from './aggregate.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
  finishPolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';

/** NFT's options (the authors' names in brackets). */
export interface NftLossOptions {
  /** Factor on the negatives' loss [neg_weight] (default 1; 0 is their RFT, rejection-sampling fine-tuning). */
  negativeWeight?: number;
  /** Lower clamp of the implicit negative ratio, value only [clamp_negative] (default 1). */
  clampNegative?: number;
  /** Lower clamp of the positives' ratio, value only [clamp_positive] (default 0: none). */
  clampPositive?: number;
  /** Per-token factor: 1 − c ('negative-rate', their normalize 1, default), √((1 − c)/c) ('square-root', 2) or 1 ('none', 0). */
  normalize?: 'negative-rate' | 'square-root' | 'none';
}

/** x in value clamped below at `low`, in gradient x itself (the authors' clamp_preserve_grad). */
function straightThroughMin(x: Tensor, low: number): Tensor {
  return add(
    x,
    tensor(
      Float32Array.from(x.data, (v) => Math.max(v, low) - v),
      x.shape,
    ),
  );
}

/**
 * Each sequence's label (1 correct, 0 wrong, NaN none: `input.sequenceLabels`, or else the sign of its
 * advantage, 0 → none) and its group's correct rate c = #1/(#1 + #0), clamped to [0.02, 0.98].
 */
function labelsAndRates(input: PolicyLossInput, advantages: Float32Array, mask: Float32Array, B: number, T: number) {
  if (input.groupSizes === undefined) throw new Error('The nft loss needs input.groupSizes (whole groups per batch).');
  const layout = resolveGroups(B, input.groupSizes);
  const labels = input.sequenceLabels;
  if (labels !== undefined && labels.length !== B)
    throw new RangeError(`input.sequenceLabels has ${labels.length} entries but there are ${B} sequences.`);
  const label = Float32Array.from({ length: B }, (_, b) => {
    let t = 0;
    while (t < T - 1 && !mask[b * T + t]) t++;
    if (!mask[b * T + t]) return NaN; // no tokens
    if (labels === undefined) return advantages[b * T + t] > 0 ? 1 : advantages[b * T + t] < 0 ? 0 : NaN;
    if (labels[b] !== 0 && labels[b] !== 1 && !Number.isNaN(labels[b]))
      throw new RangeError(`input.sequenceLabels[${b}] is ${labels[b]}; use 1, 0 or NaN.`);
    return labels[b];
  });
  const rate = new Float32Array(B);
  let groups = 0;
  for (let g = 0; g < layout.groupCount; g++) {
    const rows = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k);
    const correct = rows.filter((b) => label[b] === 1).length;
    const wrong = rows.filter((b) => label[b] === 0).length;
    if (correct === 0 || wrong === 0) {
      for (const b of rows) label[b] = NaN; // all correct or all wrong: the authors filter these groups out
      continue;
    }
    groups++;
    for (const b of rows) rate[b] = Math.min(Math.max(correct / (correct + wrong), 0.02), 0.98);
  }
  return { label, rate, groups };
}

/**
 * NFT loss per token of a correct answer: −log max(ρ, c_p); of a wrong one: −w_n·log max((1 − c·ρ)/(1 − c), c_n),
 * both maxima straight-through, ρ = exp(min(logπ_θ − logπ_old, 10)), c the group's clamped correct rate;
 * times 1 − c ('negative-rate'). Defaults w_n = 1, c_n = 1, c_p = 0; aggregation seq-mean-token-sum-norm.
 * Needs whole groups. #48 (arXiv 2505.18116); NVlabs/NFT dp_actor.py update_policy.
 */
export function nftLoss(input: PolicyLossInput, options: PolicyLossOptions & NftLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const negativeWeight = options.negativeWeight ?? 1;
  if (!(negativeWeight >= 0)) throw new RangeError(`options.negativeWeight must be ≥ 0, got ${negativeWeight}.`);
  const clampNegative = options.clampNegative ?? 1;
  if (!(clampNegative > 0)) throw new RangeError(`options.clampNegative must be > 0, got ${clampNegative}.`);
  const clampPositive = options.clampPositive ?? 0;
  if (!(clampPositive >= 0)) throw new RangeError(`options.clampPositive must be ≥ 0, got ${clampPositive}.`);
  const normalize = options.normalize ?? 'negative-rate';
  const { label, rate, groups } = labelsAndRates(input, prepared.advantages.data, mask, B, T);
  const logRatio = logRatioOf(prepared);
  const ratio = exp(clamp(logRatio, -Infinity, 10));
  // The implicit negative ratio (1 − c·ρ)/(1 − c) = ρ·(−c/(1 − c)) + 1/(1 − c), per-row constants.
  const slope = new Float32Array(B * T);
  const offset = new Float32Array(B * T).fill(1);
  const positiveScale = new Float32Array(B * T);
  const negativeScale = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    if (Number.isNaN(label[b])) continue;
    const c = rate[b];
    const factor = normalize === 'negative-rate' ? 1 - c : normalize === 'square-root' ? Math.sqrt((1 - c) / c) : 1;
    for (let t = 0; t < T; t++) {
      const i = b * T + t;
      if (!mask[i]) continue;
      slope[i] = -c / (1 - c);
      offset[i] = 1 / (1 - c);
      if (label[b] === 1) positiveScale[i] = -factor;
      else negativeScale[i] = -negativeWeight * factor;
    }
  }
  const proxy = add(mul(ratio, tensor(slope, [B, T])), tensor(offset, [B, T]));
  const surrogate = add(
    mul(log(straightThroughMin(ratio, clampPositive)), tensor(positiveScale, [B, T])),
    mul(log(straightThroughMin(proxy, clampNegative)), tensor(negativeScale, [B, T])),
  );
  const metrics = { ...ratioMetrics(logRatio.data, mask), nftGroups: groups };
  return finishPolicyLoss(prepared, input, options, surrogate, seqMeanTokenSumNormWeights, metrics);
}

/** `algorithm.loss: nft`: the entry `grpo list` prints and configs name. */
export const nftLossPart = definePolicyLoss({
  name: 'nft',
  fn: nftLoss,
  description:
    'correct: −log ρ; wrong: −log max((1−cρ)/(1−c), 1) (straight-through), c = group correct rate; ×(1−c); whole groups',
  citation: 'NFT (#48, arXiv 2505.18116); NVlabs/NFT dp_actor.py update_policy',
  needs: ['wholeGroups'],
  options: z
    .object({
      negativeWeight: z.number().nonnegative().describe("factor on the wrong answers' loss (default 1; 0: RFT)"),
      clampNegative: z.number().positive().describe('value clamp of the implicit negative ratio (default 1)'),
      clampPositive: z.number().nonnegative().describe('value clamp of the ratio of correct answers (default 0)'),
      normalize: z
        .enum(['negative-rate', 'square-root', 'none'])
        .describe("per-token factor 1 − c, √((1 − c)/c) or 1 (default 'negative-rate')"),
    })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});
