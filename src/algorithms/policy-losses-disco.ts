/**
 * DisCO: discriminative constrained optimisation (Li, Lin, Galanti, Tu, Yang, #23, arXiv 2505.12366).
 * Per group, raise the scores of the positive completions above those of the negatives — a
 * discriminative (AUC-like) objective on sequence scores instead of a clipped ratio surrogate — and
 * keep the policy near π_old by a squared-hinge penalty on KL(π_old‖π_θ) rather than by clipping.
 *
 * Is: the loss and its entry, exact to the authors' code (Optimization-AI/DisCO,
 * `verl/verl/trainer/ppo/core_algos.py`: `compute_policy_loss_disco_logL`/`_disco_Lratio` for the
 * log-sum-exp negatives, `compute_policy_loss_discob_logL`/`_discob_Lratio` for DisCO-b's mean), with
 * the defaults of their `scripts/train/run_disco_{logL,Lratio}_1.5b_8k.sh` (δ = 1e-4, β = 1e3,
 * τ = 10 for log-L and 1 for L-ratio, ppo_kl_type 'kl'), and their dynamic-batch scaling of a
 * micro-batch's loss by its share of the batch's sequences. Also `discriminativeLoss`, the shared
 * body DRPO (`policy-losses-drpo.ts`) weights.
 * Is not: a per-token surrogate — there is no KL-to-reference term, mismatch correction or token
 * selection on top (refused); nor the authors' "disco" advantage, which is a dummy.
 */
import { z } from 'zod';
import { add, div, exp, mul, sub, sum, tensor } from '../tensor/index.js';
import { resolveGroups } from './advantages-groups.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  type PreparedLossInput,
  definePolicyLoss,
  logRatioOf,
  prepareLossInput,
  ratioMetrics,
} from './policy-losses-common.js';
import type { RunSettings } from './registry.js';

/** DisCO's options (the authors' names in brackets). */
export interface DiscoLossOptions {
  /** The sequence score s: mean_t logπ_θ ('log-likelihood', log-L) or mean_t π_θ/π_old ('likelihood-ratio', L-ratio). */
  score?: 'log-likelihood' | 'likelihood-ratio';
  /** How the negatives' scores enter: τ·log Σ exp(s/τ) ('log-sum-exp', DisCO) or their mean ('mean', DisCO-b). */
  negatives?: 'log-sum-exp' | 'mean';
  /** τ of the log-sum-exp [tau] (default 10 for log-likelihood, 1 for likelihood-ratio, the authors' scripts). */
  tau?: number;
  /** δ, the KL bound [delta] (default 1e-4). */
  klBound?: number;
  /** β, the squared-hinge penalty [beta] (default 1e3). */
  klPenalty?: number;
  /** The KL(π_old‖π_θ) estimate: mean −log ρ ('k1', their scripts' ppo_kl_type 'kl') or mean (ρ − 1 − log ρ) ('k3', 'low_var_kl'). */
  klBoundEstimator?: 'k1' | 'k3';
}

/** float32's machine epsilon: the authors add torch.finfo(dtype).eps to the detached sum, in their float32 training. */
const FLOAT32_EPS = 2 ** -23;

function checkPositive(value: number, field: string): number {
  if (!(value > 0 && Number.isFinite(value))) throw new RangeError(`options.${field} must be > 0, got ${value}.`);
  return value;
}

/**
 * The DisCO objective with optional positive weights (DRPO): per group g with ≥ 1 positive and
 * ≥ 1 negative, J_g = Σ_pos w_i·(s_i − N_g)/Σ_pos w_i with N_g the negatives' term; the loss is
 * (B/N)·(−Σ_g J_g/Q + sg(max(β(KL − δ), 0))·KL), Q = groups in the call (all, as the authors' number
 * of questions), B/N = this call's share of the batch's sequences (`globalSequenceCount`), KL the
 * token mean over this call. Labels: `input.sequenceLabels` (1, 0, NaN) or else the advantage's sign.
 */
export function discriminativeLoss(
  input: PolicyLossInput,
  options: PolicyLossOptions & DiscoLossOptions,
  name: string,
  positiveWeight: (prepared: PreparedLossInput, tokens: Float32Array) => Float32Array,
): PolicyLossResult {
  for (const field of ['klCoefficient', 'mismatchCorrection', 'topEntropyQuantile'] as const)
    if (options[field] !== undefined && options[field] !== 0)
      throw new Error(`The ${name} loss does not support options.${field}.`);
  if (input.groupSizes === undefined)
    throw new Error(`The ${name} loss needs input.groupSizes (whole groups per batch).`);
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const layout = resolveGroups(B, input.groupSizes);
  const score = options.score ?? 'log-likelihood';
  const negatives = options.negatives ?? 'log-sum-exp';
  const tau = checkPositive(options.tau ?? (score === 'log-likelihood' ? 10 : 1), 'tau');
  const bound = options.klBound ?? 1e-4;
  if (!(bound >= 0)) throw new RangeError(`options.klBound must be ≥ 0, got ${bound}.`);
  const penalty = options.klPenalty ?? 1e3;
  if (!(penalty >= 0)) throw new RangeError(`options.klPenalty must be ≥ 0, got ${penalty}.`);
  const tokens = new Float32Array(B);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) tokens[b] += mask[b * T + t];
  const labels = input.sequenceLabels;
  if (labels !== undefined && labels.length !== B)
    throw new RangeError(`input.sequenceLabels has ${labels.length} entries but there are ${B} sequences.`);
  const label = Float32Array.from({ length: B }, (_, b) => {
    if (labels === undefined) {
      let t = 0;
      while (t < T - 1 && !mask[b * T + t]) t++;
      const advantage = prepared.advantages.data[b * T + t]; // the sequence's (its first token's, if per token)
      return tokens[b] === 0 || advantage === 0 ? NaN : advantage > 0 ? 1 : 0; // advantage 0: no label
    }
    if (labels[b] !== 0 && labels[b] !== 1 && !Number.isNaN(labels[b]))
      throw new RangeError(`input.sequenceLabels[${b}] is ${labels[b]}; use 1, 0 or NaN.`);
    return tokens[b] === 0 ? NaN : labels[b];
  });

  // s [B]: the mean over each row's tokens of logπ_θ (log-L) or of ρ (L-ratio), with gradient.
  const logRatio = logRatioOf(prepared);
  const perToken = score === 'log-likelihood' ? prepared.logprobs : exp(logRatio);
  const scores = div(
    sum(mul(perToken, tensor(mask, [B, T])), 1),
    tensor(
      tokens.map((n) => Math.max(n, 1)),
      [B],
    ),
  );
  const weights = positiveWeight(prepared, tokens);
  // J = Σ_b a_b·s_b − Σ_b c_b·e_b, with constant a, c: a positive's weight share, a negative's mean
  // share (DisCO-b), or for log-sum-exp e_b = exp(s_b/τ − max_g s/τ) and c_b = τ/(sg(Σ_neg e) + eps),
  // whose value is τ·S/(S + eps) ≈ τ and whose gradient is that of τ·log Σ_neg exp(s/τ), as theirs.
  const linear = new Float32Array(B);
  const exponential = new Float32Array(B);
  const shifts = new Float32Array(B);
  let valid = 0;
  for (let g = 0; g < layout.groupCount; g++) {
    const rows = Array.from({ length: layout.sizes[g] }, (_, k) => layout.starts[g] + k);
    const positives = rows.filter((b) => label[b] === 1);
    const negativeRows = rows.filter((b) => label[b] === 0);
    if (positives.length === 0 || negativeRows.length === 0) continue; // all-correct, all-wrong: no signal
    valid++;
    const weightSum = positives.reduce((total, b) => total + weights[b], 0);
    for (const b of positives) linear[b] = weights[b] / weightSum;
    if (negatives === 'mean') {
      for (const b of negativeRows) linear[b] = -1 / negativeRows.length;
      continue;
    }
    const top = Math.max(...negativeRows.map((b) => scores.data[b] / tau));
    const sumExp = negativeRows.reduce((total, b) => total + Math.exp(scores.data[b] / tau - top), 0);
    for (const b of negativeRows) {
      shifts[b] = top;
      exponential[b] = -tau / (sumExp + FLOAT32_EPS);
    }
  }
  let objective = sum(mul(scores, tensor(linear, [B])));
  if (negatives === 'log-sum-exp')
    objective = add(objective, sum(mul(exp(sub(mul(scores, 1 / tau), tensor(shifts, [B]))), tensor(exponential, [B]))));

  // KL(π_old‖π_θ) over this call's tokens: −log ρ (k1) or ρ − 1 − log ρ (k3); a squared hinge's gradient.
  const tokenCount = Math.max(
    tokens.reduce((a, b) => a + b, 0),
    1,
  );
  const negativeLogRatio = mul(logRatio, -1);
  const klPerToken =
    (options.klBoundEstimator ?? 'k1') === 'k3' ? add(negativeLogRatio, sub(exp(logRatio), 1)) : negativeLogRatio;
  const kl = div(sum(mul(klPerToken, tensor(mask, [B, T]))), tokenCount);
  const hinge = Math.max(penalty * (kl.data[0] - bound), 0);
  const share = B / checkPositive(options.globalSequenceCount ?? B, 'globalSequenceCount');
  const loss = mul(add(mul(objective, -1 / Math.max(layout.groupCount, 1)), mul(kl, hinge)), share);
  return {
    loss,
    metrics: {
      ...ratioMetrics(logRatio.data, mask),
      policyLoss: loss.item(),
      klConstraint: kl.data[0],
      clipFraction: kl.data[0] > bound ? 1 : 0, // the authors' pg_clipfrac: 1 when the hinge binds
      discriminativeGroups: valid,
    },
  };
}

/**
 * DisCO loss: per group, J = mean_pos s − τ·log Σ_neg exp(s/τ) ('log-sum-exp') or mean_pos s − mean_neg s
 * ('mean', DisCO-b), s = mean_t logπ_θ ('log-likelihood', default) or mean_t ρ ('likelihood-ratio');
 * loss −Σ J/Q + sg(max(β(KL − δ), 0))·KL, δ = 1e-4, β = 1e3, τ = 10 (log-L) / 1 (L-ratio), KL = mean −log ρ.
 * Groups without both a positive and a negative add nothing (the authors' valid_mask) but count in Q.
 * Needs whole groups. #23 (arXiv 2505.12366); Optimization-AI/DisCO core_algos.py compute_policy_loss_disco_*.
 */
export function discoLoss(
  input: PolicyLossInput,
  options: PolicyLossOptions & DiscoLossOptions = {},
): PolicyLossResult {
  return discriminativeLoss(input, options, 'disco', (prepared) => new Float32Array(prepared.B).fill(1));
}

/** The run settings a sequence-level discriminative loss cannot work with (DisCO, DRPO). */
export function refusesPerTokenTerms(name: string, settings: RunSettings): string[] {
  return [
    ...(settings.klCoefficient > 0 && settings.klPlacement === 'loss'
      ? [
          `algorithm.klCoefficient: the ${name} loss has no per-token KL-to-reference term (its KL bound is to π_old); use algorithm.klPlacement "reward" or klCoefficient 0`,
        ]
      : []),
    ...(settings.mismatchCorrection
      ? [`algorithm.mismatchCorrection: the ${name} loss has no per-token weights to correct; set it to null`]
      : []),
  ];
}

/** DisCO's options schema, shared with DRPO. */
export const discoOptionFields = {
  score: z
    .enum(['log-likelihood', 'likelihood-ratio'])
    .describe("sequence score: mean logπ or mean ρ (default 'log-likelihood')"),
  negatives: z
    .enum(['log-sum-exp', 'mean'])
    .describe("negatives' term: τ·log Σ exp(s/τ) or mean, DisCO-b (default 'log-sum-exp')"),
  tau: z.number().positive().describe('τ of the log-sum-exp (default 10 for log-likelihood, 1 for likelihood-ratio)'),
  klBound: z.number().nonnegative().describe('δ, the bound on KL(π_old‖π_θ) (default 1e-4)'),
  klPenalty: z.number().nonnegative().describe('β of the squared-hinge penalty (default 1e3)'),
  klBoundEstimator: z
    .enum(['k1', 'k3'])
    .describe("KL estimate of the bound: mean −log ρ or mean ρ−1−log ρ (default 'k1')"),
};

/** `algorithm.loss: disco`: the entry `grpo list` prints and configs name. */
export const discoLossPart = definePolicyLoss({
  name: 'disco',
  fn: discoLoss,
  description:
    'per group mean_pos s − τ·log Σ_neg e^{s/τ} (or mean_neg s: DisCO-b), s = mean logπ; + β·[KL(π_old‖π)−δ]²₊ hinge; whole groups',
  citation: 'DisCO (#23, arXiv 2505.12366); Optimization-AI/DisCO core_algos.py compute_policy_loss_disco_logL',
  needs: ['wholeGroups'],
  options: z.object(discoOptionFields).partial().strict(),
  refuses: (_options, settings) => refusesPerTokenTerms('disco', settings),
});
