/**
 * REC: group-relative REINFORCE with clipping (Yao, Chen et al., "Group-Relative REINFORCE Is
 * Secretly an Off-Policy Algorithm", #205). The loss is REINFORCE on log π_θ itself — not a ratio
 * surrogate — with tokens outside a trust region dropped (one-side, two-side or ring), optionally
 * weighted by the detached ratio, plus an optional forward-KL or k2 regulariser. Its named variants
 * are option sets (the authors' examples/rec_gsm8k README): REC-OneSide-NoIS = clipMode 'one-side';
 * REC-OneSide-IS and REC-TwoSide-IS add weight 'importance-sampling'; REC-Ring-NoIS = clipMode
 * 'ring'; the REP family's AsymRE = regularizer 'forward-kl' 0.1 and Kimi's OPMD = 'k2' 0.1; RED-Weight
 * = weight 'advantage'. With clipMode 'one-side' and weight 'importance-sampling' its gradient is
 * PPO's (the paper's point); its value is not.
 *
 * Is: the loss and its entry, exact to the authors' code (Trinity-RFT `RECPolicyLossFn.__call__`,
 * yaochaorui/Trinity-RFT branch cr/rec, `trinity/algorithm/policy_loss_fn/rec_policy_loss.py`, as
 * of 2025-09-22), with the same defaults (its default_args).
 * Is not: the REC advantage (group mean, optionally ÷ std: `dr-grpo`, or `grpo` with
 * `std: 'population'`), RED-Drop (a random drop of surplus negatives, not a loss), or the later
 * upstream weights ('truncated_importance_sampling', 'gspo_importance_sampling', fix_opd_advantage).
 */
import { z } from 'zod';
import { commonLossOptions } from './option-schemas.js';
import { add, mul, square, tensor } from '../tensor/index.js';
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

/** REC's own options (ε_low, ε_high and the temperature are the shared `PolicyLossOptions` fields). */
export interface RecLossOptions {
  /** Which tokens keep their policy-gradient term (default 'none': all). */
  clipMode?: 'none' | 'one-side' | 'two-side' | 'ring';
  /** ε'_low of the ring's outer band (default 0.6). */
  epsilonLowPrime?: number;
  /** ε'_high of the ring's outer band (default 2). */
  epsilonHighPrime?: number;
  /** The factor on A: none, the detached ratio ρ, or exp(A/temperature) (default 'none'). */
  weight?: 'none' | 'importance-sampling' | 'advantage';
  /** Added per token: −c·logπ ('forward-kl') or c·(logπ − logπ_old)² ('k2') (default 'none'). */
  regularizer?: 'none' | 'forward-kl' | 'k2';
  /** c of the regulariser (default 0). */
  regularizerCoefficient?: number;
}

function checkRange(value: number, field: string, upper: number | null): number {
  if (!(value > 0 && (upper === null || value <= upper)))
    throw new RangeError(`options.${field} must be in (0, ${upper ?? '∞'}${upper === null ? ')' : ']'}, got ${value}.`);
  return value;
}

/**
 * Whether a token keeps its policy-gradient term, given its detached ratio ρ and advantage A
 * (`is_in_range` of the authors' code): 'two-side' 1−ε_l ≤ ρ ≤ 1+ε_h; 'one-side' (A ≥ 0 and
 * ρ ≤ 1+ε_h) or (A ≤ 0 and ρ ≥ 1−ε_l); 'ring' the two-side band, or A ≥ 0 with ρ ≤ 1−ε'_l, or A ≤ 0
 * with ρ ≥ 1+ε'_h; 'none' always.
 */
export function recInRange(
  ratio: number,
  advantage: number,
  mode: NonNullable<RecLossOptions['clipMode']>,
  bounds: { low: number; high: number; lowPrime: number; highPrime: number },
): boolean {
  const inBand = ratio >= 1 - bounds.low && ratio <= 1 + bounds.high;
  if (mode === 'two-side') return inBand;
  if (mode === 'one-side')
    return (advantage >= 0 && ratio <= 1 + bounds.high) || (advantage <= 0 && ratio >= 1 - bounds.low);
  if (mode === 'ring')
    return (
      inBand || (advantage >= 0 && ratio <= 1 - bounds.lowPrime) || (advantage <= 0 && ratio >= 1 + bounds.highPrime)
    );
  return true;
}

/**
 * REC loss per token: −w·A·logπ_θ·1[in range] + reg, with ρ = sg(exp(logπ_θ − logπ_old)),
 * w = 1 ('none'), ρ ('importance-sampling') or exp(A/temperature) ('advantage'), the range from
 * `recInRange`, and reg = −c·logπ_θ ('forward-kl') or c·(logπ_θ − logπ_old)² ('k2') on every token.
 * Defaults (the authors' default_args): clipMode 'none', ε_low = ε_high = 0.2, ε'_low = 0.6,
 * ε'_high = 2, weight 'none', temperature 1, regularizer 'none', c = 0; aggregation token-mean.
 * Metrics: clipFraction = masked share of tokens out of range (their pg_clipfrac), ratio stats.
 * #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT cr/rec rec_policy_loss.py, RECPolicyLossFn.
 */
export function recLoss(input: PolicyLossInput, options: PolicyLossOptions & RecLossOptions = {}): PolicyLossResult {
  const prepared = prepareLossInput(input);
  const mode = options.clipMode ?? 'none';
  const bounds = {
    low: checkRange(options.epsilonLow ?? 0.2, 'epsilonLow', 1),
    high: checkRange(options.epsilonHigh ?? 0.2, 'epsilonHigh', null),
    lowPrime: checkRange(options.epsilonLowPrime ?? 0.6, 'epsilonLowPrime', 1),
    highPrime: checkRange(options.epsilonHighPrime ?? 2, 'epsilonHighPrime', null),
  };
  const weight = options.weight ?? 'none';
  const temperature = checkRange(options.temperature ?? 1, 'temperature', null);
  const regularizer = options.regularizer ?? 'none';
  const coefficient = options.regularizerCoefficient ?? 0;
  if (!(coefficient >= 0)) throw new RangeError(`options.regularizerCoefficient must be ≥ 0, got ${coefficient}.`);
  const logRatio = logRatioOf(prepared);
  const { B, T, mask } = prepared;
  const advantages = prepared.advantages.data;
  // The whole policy-gradient term is one detached coefficient on logπ_θ: −w·A·1[in range].
  const scale = new Float32Array(B * T);
  let outOfRange = 0;
  let count = 0;
  for (let i = 0; i < B * T; i++) {
    if (!mask[i]) continue;
    const ratio = Math.exp(logRatio.data[i]);
    const kept = recInRange(ratio, advantages[i], mode, bounds);
    count++;
    if (!kept) {
      outOfRange++;
      continue;
    }
    const factor =
      weight === 'importance-sampling' ? ratio : weight === 'advantage' ? Math.exp(advantages[i] / temperature) : 1;
    scale[i] = -factor * advantages[i];
  }
  // forward-kl: −c·logπ joins the same coefficient; k2 needs the ratio's own gradient.
  if (regularizer === 'forward-kl') for (let i = 0; i < B * T; i++) if (mask[i]) scale[i] -= coefficient;
  let surrogate = mul(prepared.logprobs, tensor(scale, [B, T]));
  if (regularizer === 'k2') surrogate = add(surrogate, mul(square(logRatio), coefficient));
  const metrics: Record<string, number> = {
    ...ratioMetrics(logRatio.data, mask),
    clipFraction: count > 0 ? outOfRange / count : 0,
  };
  return finishPolicyLoss(prepared, input, options, surrogate, tokenMeanWeights, metrics);
}

const positive = z.number().positive();

/** `algorithm.loss: rec`: the entry `grpo list` prints and configs name. */
export const recLossPart = definePolicyLoss({
  name: 'rec',
  fn: recLoss,
  description: '−w·A·logπ·1[in range] + reg: REC one-side/two-side/ring clip, IS weight, forward-KL/k2; token-mean',
  citation: 'REC in #205 (arXiv 2509.24203); yaochaorui/Trinity-RFT cr/rec rec_policy_loss.py RECPolicyLossFn',
  options: z
    .object({
      clipMode: z
        .enum(['none', 'one-side', 'two-side', 'ring'])
        .describe("which tokens keep their term (default 'none')"),
      epsilonLow: positive.max(1).describe('ε_low (default 0.2)'),
      epsilonHigh: positive.describe('ε_high (default 0.2)'),
      epsilonLowPrime: positive.max(1).describe("ε'_low of the ring (default 0.6)"),
      epsilonHighPrime: positive.describe("ε'_high of the ring (default 2)"),
      weight: z.enum(['none', 'importance-sampling', 'advantage']).describe("factor on A (default 'none')"),
      temperature: positive.describe("temperature of weight 'advantage' (default 1)"),
      regularizer: z.enum(['none', 'forward-kl', 'k2']).describe("per-token regulariser (default 'none')"),
      regularizerCoefficient: z.number().nonnegative().describe('its coefficient c (default 0)'),
    })
    .partial()
    .extend(commonLossOptions)
    .strict(),
});
