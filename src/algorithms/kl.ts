/**
 * KL estimators between the policy and a reference policy, per sampled token (Schulman's k1, k2,
 * k3), on tensors (for KL in the loss, with gradients) and on arrays (for KL in the reward).
 *
 * Is: the estimators, the off-policy-corrected form, and the KL-in-reward penalty.
 * Is not: where the KL goes in the loss — policy-losses-common.ts adds β·KL per token before aggregation.
 */
import { type Part, definePart } from './registry.js';
import { type Tensor, exp, mul, noGrad, square, sub, tensor } from '../tensor/index.js';

/** The one signature of every registered KL estimator: per-token estimates [B, T] from log π_θ and log π_ref. */
export type KlEstimatorFn = (logprobs: Tensor, refLogprobs: Tensor) => Tensor;

/** A KL estimator's file exports its function with this entry (`algorithm.klEstimator`). */
export const defineKlEstimator = (entry: Omit<Part<KlEstimatorFn>, 'kind'>): Part<KlEstimatorFn> =>
  definePart('KL estimator', entry);

/** k1 = −log r = log π_θ − log π_ref (unbiased, can be negative). Schulman 2020, "Approximating KL Divergence". */
export function klK1(logprobs: Tensor, refLogprobs: Tensor): Tensor {
  return sub(logprobs, refLogprobs);
}

/** `algorithm.klEstimator: k1`: the entry `grpo list` prints and configs name. */
export const klK1Part = defineKlEstimator({
  name: 'k1',
  fn: klK1,
  description: 'log π − log π_ref (unbiased, can be negative; the KL-in-reward default)',
  citation: 'Schulman 2020, "Approximating KL Divergence"',
});

/** k2 = ½ (log r)² (biased, low variance). Schulman 2020, "Approximating KL Divergence". */
export function klK2(logprobs: Tensor, refLogprobs: Tensor): Tensor {
  return mul(square(sub(refLogprobs, logprobs)), 0.5);
}

/** `algorithm.klEstimator: k2`: the entry `grpo list` prints and configs name. */
export const klK2Part = defineKlEstimator({
  name: 'k2',
  fn: klK2,
  description: '½ (log π_ref − log π)² (biased, low variance)',
  citation: 'Schulman 2020, "Approximating KL Divergence"',
});

/** k3 = (r − 1) − log r with r = π_ref/π_θ (unbiased, ≥ 0; GRPO's choice). Schulman 2020; DeepSeekMath. */
export function klK3(logprobs: Tensor, refLogprobs: Tensor): Tensor {
  const logRatio = sub(refLogprobs, logprobs);
  return sub(sub(exp(logRatio), 1), logRatio);
}

/** `algorithm.klEstimator: k3`: the entry `grpo list` prints and configs name. */
export const klK3Part = defineKlEstimator({
  name: 'k3',
  fn: klK3,
  description: '(r − 1) − log r, r = π_ref/π (unbiased, ≥ 0; GRPO)',
  citation: 'Schulman 2020; DeepSeekMath',
});

/**
 * Off-policy-corrected KL (DeepSeek-V3.2, TRL `use_bias_correction_kl`): (π_θ/π_old)·k3, the ratio
 * keeping its gradient so the estimate stays unbiased under samples from π_old.
 */
export function offPolicyCorrectedKl(
  logprobs: Tensor,
  refLogprobs: Tensor,
  oldLogprobs: Tensor,
  estimator: KlEstimatorFn = klK3,
): Tensor {
  return mul(exp(sub(logprobs, oldLogprobs)), estimator(logprobs, refLogprobs));
}

/** Applies a tensor KL estimator to plain arrays (no gradient), e.g. for logging or KL in the reward. */
export function klArray(
  estimator: KlEstimatorFn,
  logprobs: ArrayLike<number>,
  refLogprobs: ArrayLike<number>,
): Float32Array {
  if (logprobs.length !== refLogprobs.length)
    throw new RangeError(`logprobs has ${logprobs.length} entries but refLogprobs has ${refLogprobs.length}.`);
  return noGrad(() => estimator(tensor(logprobs, [logprobs.length]), tensor(refLogprobs, [refLogprobs.length])).data);
}

/** Inputs of the KL-in-reward penalty; token arrays are [B, T] row-major. */
export interface KlRewardInput {
  rewards: ArrayLike<number>;
  logprobs: ArrayLike<number>;
  refLogprobs: ArrayLike<number>;
  mask: ArrayLike<number>;
}

/**
 * KL in the reward (RLOO/PPO placement): r'_i = r_i − β·Σ_t m_t·k_t, k1 by default.
 * Ahmadian et al. 2024 (RLOO); ms-swift RLOO doc (`kl_in_reward`).
 */
export function klPenalizedRewards(input: KlRewardInput, beta: number, estimator: KlEstimatorFn = klK1): Float32Array {
  const B = input.rewards.length;
  const size = input.logprobs.length;
  if (B === 0) return new Float32Array(0);
  if (size % B !== 0 || input.mask.length !== size || input.refLogprobs.length !== size) {
    throw new RangeError(
      `KL in reward: logprobs (${size}), refLogprobs (${input.refLogprobs.length}) and mask (${input.mask.length}) must all be [B=${B}, T].`,
    );
  }
  const T = size / B;
  const perToken = klArray(estimator, input.logprobs, input.refLogprobs);
  return Float32Array.from({ length: B }, (_, b) => {
    let total = 0;
    for (let t = 0; t < T; t++) if (input.mask[b * T + t]) total += perToken[b * T + t];
    return input.rewards[b] - beta * total;
  });
}
