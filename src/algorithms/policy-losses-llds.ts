/**
 * LLDS: Lazy Likelihood-Displacement Stabilization (Deng, Li, Gong, Ren, Thrampoulidis, Li, #188,
 * "On GRPO Collapse in Search-R1: The Lazy Likelihood-Displacement Death Spiral", arXiv 2512.04220).
 * GRPO on tool-integrated tasks collapses when the likelihood of the responses it should keep
 * (non-negative advantage) drifts down; LLDS adds, to the PPO-clip loss, a penalty on exactly the
 * tokens whose log-likelihood fell below π_old, and only inside an action (or response) whose total
 * log-likelihood fell.
 *
 * Is: the loss and its entry, exact to the authors' code (vengdeng/LLDS-On-Group-Relative-Policy-
 * Optimization-Collapse-in-Search-R1, `verl/workers/actor/dp_actor.py` update_policy with
 * `chunk_sums_vectorized`/`expand_chunk_mask`), with the defaults of their `train_grpo_nqhot.sh`
 * (NO_REDUCE_LAMBDA 0.2, ISCHUNK true: the action-level gate). An action is a maximal run of
 * consecutive loss-mask tokens, so in a multi-turn rollout whose tool output is masked out each
 * model turn is one action, as in theirs (state_masking).
 * Is not: their answer-region weighting (MASK_ANS, off in their script), their GSPO branch (use
 * `gspo` separately), nor their ratio cap clamp(ρ, −100, 100) inside the PPO term, which only
 * differs when ρ > 100.
 */
import { z } from 'zod';
import { add, mul, noGrad, sub, tensor } from '../tensor/index.js';
import { aggregateLoss, tokenMeanWeights } from './aggregate.js';
import { commonLossOptions, clipHighOption, clipLowOption } from './option-schemas.js';
import { ppoClipLoss } from './policy-losses.js';
import {
  type PolicyLossInput,
  type PolicyLossOptions,
  type PolicyLossResult,
  definePolicyLoss,
  prepareLossInput,
} from './policy-losses-common.js';

/** LLDS's options (the authors' names in brackets). */
export interface LldsLossOptions {
  /** λ, the weight of the likelihood-preserving term [no_reduce_lambda] (default 0.2). */
  likelihoodCoefficient?: number;
  /** Where the gate looks: each action (a run of loss tokens, [chunk_noreduce] true, default) or the whole response. */
  gate?: 'action' | 'response';
}

/**
 * The per-token weight of (logπ_old − logπ_θ) in LLDS's term, detached: 1 where the token is in the
 * preserving set (A ≥ 0, masked in), its own log-likelihood fell (logπ_θ < logπ_old; the gradient of
 * max(0, ·), with none at a tie), and its gate is open — the sum of logπ_old − logπ_θ over its action
 * (a maximal run of preserving tokens) or over the response's preserving tokens is > 0.
 */
export function lldsTokenWeights(
  logprobs: ArrayLike<number>,
  oldLogprobs: ArrayLike<number>,
  advantages: ArrayLike<number>,
  mask: ArrayLike<number>,
  B: number,
  T: number,
  gate: 'action' | 'response',
): Float32Array {
  const weights = new Float32Array(B * T);
  const preserving = (i: number) => mask[i] !== 0 && advantages[i] >= 0;
  for (let b = 0; b < B; b++) {
    let t = 0;
    while (t < T) {
      if (!preserving(b * T + t)) {
        t++;
        continue;
      }
      // A run [t, end) of preserving tokens: one action; for the response gate, all of the row's runs.
      let end = t;
      let drop = 0;
      if (gate === 'action') {
        while (end < T && preserving(b * T + end)) {
          drop += oldLogprobs[b * T + end] - logprobs[b * T + end];
          end++;
        }
      } else {
        end = T;
        for (let s = t; s < T; s++) if (preserving(b * T + s)) drop += oldLogprobs[b * T + s] - logprobs[b * T + s];
      }
      if (drop > 0)
        for (let s = t; s < end; s++) {
          const i = b * T + s;
          if (preserving(i) && oldLogprobs[i] - logprobs[i] > 0) weights[i] = 1;
        }
      t = end;
    }
  }
  return weights;
}

/**
 * LLDS loss: the PPO/GRPO clipped surrogate (`ppo-clip`, ε = 0.2, token-mean) plus
 * λ·Σ_t w_t·max(0, logπ_old − logπ_θ) aggregated like it, λ = 0.2, w_t = 1 on preserving tokens
 * (A ≥ 0) of an action whose Σ (logπ_old − logπ_θ) > 0 ('action' gate; 'response': over all the
 * row's preserving tokens). #188 (arXiv 2512.04220); the authors' dp_actor.py update_policy.
 */
export function lldsLoss(input: PolicyLossInput, options: PolicyLossOptions & LldsLossOptions = {}): PolicyLossResult {
  const coefficient = options.likelihoodCoefficient ?? 0.2;
  if (!(coefficient >= 0 && Number.isFinite(coefficient)))
    throw new RangeError(`options.likelihoodCoefficient must be ≥ 0, got ${coefficient}.`);
  const gate = options.gate ?? 'action';
  if (gate !== 'action' && gate !== 'response')
    throw new RangeError(`options.gate must be 'action' or 'response', got ${String(gate)}.`);
  const clipped = ppoClipLoss(input, options);
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const weights = lldsTokenWeights(
    prepared.logprobs.data,
    prepared.oldLogprobs.data,
    prepared.advantages.data,
    mask,
    B,
    T,
    gate,
  );
  // The authors' masked_mean over the response tokens: the same aggregation as the PPO term.
  const drop = mul(sub(prepared.oldLogprobs, prepared.logprobs), tensor(weights, [B, T]));
  const regularizer = aggregateLoss(drop, mask, options.aggregation ?? tokenMeanWeights, options);
  let active = 0;
  let counted = 0;
  for (let i = 0; i < mask.length; i++)
    if (mask[i]) {
      counted++;
      active += weights[i];
    }
  const metrics = {
    ...clipped.metrics,
    likelihoodDisplacement: noGrad(() => regularizer.item()),
    likelihoodPenalizedFraction: counted > 0 ? active / counted : 0,
  };
  return { loss: add(clipped.loss, mul(regularizer, coefficient)), metrics };
}

/** `algorithm.loss: llds`: the entry `grpo list` prints and configs name. */
export const lldsLossPart = definePolicyLoss({
  name: 'llds',
  fn: lldsLoss,
  description:
    'PPO-clip + λ·Σ max(0, logπ_old − logπ) on A ≥ 0 tokens of actions whose likelihood fell (λ 0.2; gate action/response)',
  citation:
    'LLDS (#188, arXiv 2512.04220); vengdeng/LLDS-On-Group-Relative-Policy-Optimization-Collapse-in-Search-R1 dp_actor.py',
  options: z
    .object({
      epsilonLow: clipLowOption,
      epsilonHigh: clipHighOption,
      likelihoodCoefficient: z.number().nonnegative().describe('λ of the likelihood-preserving term (default 0.2)'),
      gate: z
        .enum(['action', 'response'])
        .describe("gate per action (run of loss tokens) or per response (default 'action')"),
    })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});
