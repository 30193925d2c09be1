/**
 * Reg-GRPO: regressive GRPO, the loss of DeepVideo-R1 (Park et al., #63, arXiv 2506.07464, NeurIPS
 * 2025). From the KL-regularised objective's closed form R = λ·log Z(x) + λ·log π*(y|x)/π_old(y|x), the
 * group z-score of the rewards equals the z-score of the optimal policy's log-ratios (Z(x) cancels),
 * so the policy is trained to predict the advantage with its own log-ratios, by regression, with no
 * clip or min (paper Eq. 7–8, Appendix A.4):
 *   ρ_i = log π_θ(y_i|x) − log π_old(y_i|x),  Â_θ,i = (ρ_i − μ_ρ)/σ_ρ,  L = E[(Â_i − Â_θ,i)²] + β·KL(π_θ‖π_ref).
 *
 * Is: the loss and its entry. Followed: the paper (Eq. 5–8 and Appendix A.4, read in its full text);
 * the authors' code (github.com/mlvlab/DeepVideoR1) could not be fetched here. Choices the paper leaves
 * open, each stated below: σ_ρ is the sample std (N − 1, torch's default, as the paper's σ_r in GRPO)
 * and ε is added to it, since on-policy ρ ≡ 0 at an update's first pass; the expectation is the mean
 * over a group's completions, then over the batch's groups.
 * Is not: DeepVideo-R1's difficulty-aware augmentation (hints for hard prompts, noisy video frames for
 * easy ones): a data-side change the trainer does not make.
 */
import { z } from 'zod';
import { add, div, indexSelect, mean, mul, sqrt, square, sub, sum, tensor } from '../tensor/index.js';
import { resolveGroups } from './advantages-groups.js';
import { seqMeanTokenMeanWeights } from './aggregate.js';
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
import { commonLossOptions, epsilonOption } from './option-schemas.js';
import type { RunSettings } from './registry.js';

/** Options of {@link regGrpoLoss}. */
export interface RegGrpoLossOptions {
  /** ε added to σ_ρ before dividing (default 1e-6, the `grpo` advantage's). */
  epsilon?: number;
}

/**
 * Reg-GRPO loss: (1/G)·Σ_groups (1/n)·Σ_i (A_i − (ρ_i − μ_ρ)/(σ_ρ + ε))² + β·KL, ρ_i = Σ_t (logπ_θ − logπ_old)
 * over completion i's tokens, μ_ρ and the sample std σ_ρ over the group's n completions with tokens
 * (gradient through both), A_i the step's advantage (the `grpo` z-score in the paper), ε = 1e-6. Only
 * groups with a non-zero advantage count, G of them in the whole batch (`globalGroupCount`): a group
 * whose advantages are all 0 has zero gradient anyway (its squared z-score sums to n − 1 whatever ρ).
 * Where every ρ of a group is equal σ_ρ is 0 and held constant (its gradient there is 0/0). The KL
 * term is the trainer's (`algorithm.klCoefficient`), averaged per sequence then over sequences
 * (GRPO's 1/G·Σ 1/|o|·Σ_t) unless `algorithm.aggregation` says otherwise. Needs whole groups.
 * #63 (arXiv 2506.07464) Eq. 7–8.
 */
export function regGrpoLoss(
  input: PolicyLossInput,
  options: PolicyLossOptions & RegGrpoLossOptions = {},
): PolicyLossResult {
  if (input.groupSizes === undefined) throw new Error('The reg-grpo loss needs input.groupSizes (whole groups).');
  const epsilon = options.epsilon ?? 1e-6;
  if (!(epsilon >= 0)) throw new RangeError(`options.epsilon must be >= 0, got ${epsilon}.`);
  const prepared = prepareLossInput(input);
  const { B, T, mask } = prepared;
  const layout = resolveGroups(B, input.groupSizes);
  const logRatio = logRatioOf(prepared);
  const sequenceLogRatio = sum(logRatio, 1); // [B] ρ: prepareLossInput zeroed the padded positions of both
  const target = (b: number) => {
    let t = 0;
    while (t < T - 1 && !mask[b * T + t]) t++;
    return prepared.advantages.data[b * T + t];
  };
  const terms = [];
  for (let g = 0; g < layout.groupCount; g++) {
    const rows: number[] = [];
    for (let b = layout.starts[g]; b < layout.starts[g] + layout.sizes[g]; b++)
      if (mask.subarray(b * T, (b + 1) * T).some((m) => m > 0)) rows.push(b);
    const targets = Float32Array.from(rows, target);
    if (rows.length < 2 || targets.every((a) => a === 0)) continue;
    const rho = indexSelect(sequenceLogRatio, rows); // [n]
    const centred = sub(rho, mean(rho));
    const variance = div(sum(square(centred)), rows.length - 1);
    // σ_ρ = 0 (every ρ equal, e.g. on-policy): the square root's gradient there is 0/0; hold σ constant.
    const sigma = variance.item() > 0 ? sqrt(variance) : variance.detach();
    const predicted = div(centred, add(sigma, epsilon));
    terms.push(mean(square(sub(predicted, tensor(targets, [rows.length])))));
  }
  const groups = options.globalGroupCount ?? terms.length;
  if (terms.length > 0 && !(groups > 0)) throw new RangeError(`options.globalGroupCount must be > 0, got ${groups}.`);
  let regression = mul(sum(sequenceLogRatio), 0); // no group with a signal: a zero loss that still reaches logprobs
  for (const term of terms) regression = add(regression, div(term, groups));
  // The KL term (and only it) goes through the shared per-token path: a zero surrogate plus β·KL.
  const metrics = { ...ratioMetrics(logRatio.data, mask), regGrpoGroups: terms.length };
  const kl = finishPolicyLoss(prepared, input, options, mul(logRatio, 0), seqMeanTokenMeanWeights, metrics);
  kl.metrics.policyLoss = regression.item();
  return { loss: add(regression, kl.loss), metrics: kl.metrics };
}

/** The run settings Reg-GRPO cannot work with: per-token weights on a loss that has no per-token term. */
function refusesRegGrpo(_options: Record<string, unknown>, settings: RunSettings): string[] {
  return [
    ...(settings.mismatchCorrection
      ? ['algorithm.mismatchCorrection: the reg-grpo loss regresses whole-sequence log-ratios; set it to null']
      : []),
  ];
}

/** `algorithm.loss: reg-grpo`: the entry `grpo list` prints and configs name. */
export const regGrpoLossPart = definePolicyLoss({
  name: 'reg-grpo',
  fn: regGrpoLoss,
  description:
    'mean over groups and members of (A_i − (ρ_i − μ_ρ)/(σ_ρ + ε))², ρ = Σ_t log π_θ/π_old: the policy regresses the advantage, no clip; whole groups',
  citation: 'Reg-GRPO, DeepVideo-R1 (#63, arXiv 2506.07464) Eq. 7–8',
  needs: ['wholeGroups'],
  options: z
    .object({ epsilon: epsilonOption, klOffPolicyCorrection: commonLossOptions.klOffPolicyCorrection })
    .partial()
    .strict(),
  refuses: refusesRegGrpo,
});
