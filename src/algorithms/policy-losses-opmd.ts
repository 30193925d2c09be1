/**
 * The OPMD loss (online policy mirror descent as a regularised REINFORCE, #205): −A·logπ_θ per
 * token, divided by 1 + τ, with no ratio to π_old and no clip — the authors treat the off-policy
 * data through the regulariser instead (the 1/(1+τ) is the step of the mirror-descent update).
 *
 * Is: the loss and its entry, exact to the authors' code (Trinity-RFT, yaochaorui/Trinity-RFT
 * `trinity/algorithm/policy_loss_fn/opmd_policy_loss.py`, `OPMDPolicyLossFn.__call__`).
 * Is not: the OPMD baseline (`advantages-opmd.ts`; the authors' `opmd` algorithm pairs the two) or
 * the KL to a reference (`algorithm.klCoefficient`, their separate `kl_loss_fn`).
 */
import { z } from 'zod';
import { commonLossOptions } from './option-schemas.js';
import { mul, tensor } from '../tensor/index.js';
import { tokenMeanWeights } from './aggregate.js';
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

/** OPMD's one option. */
export interface OpmdLossOptions {
  /** τ in the 1/(1 + τ) scale (default 1.0, the authors' default; their AsymRE example sets 0). */
  tau?: number;
}

/**
 * OPMD loss per token: −A·logπ_θ/(1 + τ), τ = 1 by default, aggregated token-mean (the authors'
 * loss_agg_mode default); oldLogprobs are not used ("NOT USED!" in their code) except for the
 * ratio metrics. Its value is −A·logπ, not −A·ρ: it differs from `reinforce` by a constant per
 * token and by the 1/(1+τ) scale. With τ = 0 and the `asymre` estimator it is AsymRE.
 * #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT opmd_policy_loss.py, OPMDPolicyLossFn.
 */
export function opmdLoss(input: PolicyLossInput, options: PolicyLossOptions & OpmdLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const tau = options.tau ?? 1;
  if (!(tau >= 0)) throw new RangeError(`options.tau must be ≥ 0, got ${tau}.`);
  const { B, T } = prepared;
  const scale = Float32Array.from(prepared.advantages.data, (a) => -a / (1 + tau));
  const surrogate = mul(prepared.logprobs, tensor(scale, [B, T]));
  return finishPolicyLoss(
    prepared,
    input,
    options,
    surrogate,
    tokenMeanWeights,
    ratioMetrics(logRatioOf(prepared).data, prepared.mask),
  );
}

/** `algorithm.loss: opmd`: the entry `grpo list` prints and configs name. */
export const opmdLossPart = definePolicyLoss({
  name: 'opmd',
  fn: opmdLoss,
  description: '−A·logπ/(1+τ) per token, τ = 1, no ratio, no clip; token-mean (tau 0 + asymre = AsymRE)',
  citation: 'OPMD in #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT opmd_policy_loss.py OPMDPolicyLossFn',
  options: z
    .object({ tau: z.number().nonnegative().describe('τ in the 1/(1+τ) scale (default 1)') })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});
