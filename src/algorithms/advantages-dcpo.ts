/**
 * DCPO: Distribution-Centric Policy Optimization (Li, Wang, Bai, Cui, Lan, Zhao, Wang, #198, "…
 * Dominates Exploration-Exploitation Trade-off", arXiv 2601.12730). Entropy is steered at the level of
 * the distribution the gradient is taken under: the correct samples get a REINFORCE term weighted by
 * the importance ratio of a virtual target policy (π_old at a higher temperature when the policy's
 * entropy has fallen below a target, a lower one when above) to π_old, mixed into the GRPO advantage.
 *
 * Is: the advantage estimator and its entry, exact to the authors' code (597358816/DCPO,
 * `verl/trainer/ray_trainer.py` `fit`, branch `alg == "DCPO"`, with `_compute_bool_reward_by_score`
 * and EasyR1's `compute_grpo_outcome_advantage`), defaults from there and `trainer.entropy_base` 0.5 of
 * their `qwen-math-7b-DCPO.sh`; and `dcpoTargetTemperature`, the entry's choice of the target
 * temperature from the previous update's entropy, which the trainer reads before it computes π_old's
 * log-probs at that temperature (need `temperatureLogprobs`) and keeps that entropy across steps
 * (need `previousEntropy`).
 * Is not: the loss (theirs is EasyR1's clipped surrogate with dual clip 3: `ppo-clip` with
 * `lossOptions.dualClip=3`), nor the trainer's forward at the target temperature (grpo-step.ts).
 */
import { z } from 'zod';
import {
  type AdvantageInput,
  type AdvantageOptions,
  type AdvantageResult,
  defineAdvantageEstimator,
  requireSampleField,
  toRewardArray,
} from './advantages-groups.js';
import { grpoAdvantage } from './advantages.js';
import { epsilonOption, stdOption } from './option-schemas.js';

/** DCPO's options (the authors' names in brackets). */
export interface DcpoOptions extends AdvantageOptions {
  /** H, the entropy the previous update's −mean logπ is compared with [entropy_base] (default 0.5). */
  entropyTarget?: number;
  /** Target temperature when that entropy is ≤ H (default 1.2, their DCPO branch). */
  temperatureHigh?: number;
  /** Target temperature when it is > H (default 0.8). */
  temperatureLow?: number;
  /** A sample is marked when its reward exceeds this [_compute_bool_reward_by_score threshold] (default 0.05). */
  scoreThreshold?: number;
  /** The cap on |H − entropy| before the division by the marked share (default 0.1). */
  deltaCap?: number;
}

const defaults = { entropyTarget: 0.5, temperatureHigh: 1.2, temperatureLow: 0.8, scoreThreshold: 0.05, deltaCap: 0.1 };

/**
 * The target temperature of a step: `temperatureHigh` (1.2) when the previous update's entropy
 * estimate is ≤ H, else `temperatureLow` (0.8). Before any update the authors' entropy is 0, so the
 * first step warms. The trainer calls this (the entry's `logprobTemperature`) before the step's signal.
 */
export function dcpoTargetTemperature(options: DcpoOptions, previousEntropy: number): number {
  const entropy = Number.isFinite(previousEntropy) ? previousEntropy : 0;
  return entropy <= (options.entropyTarget ?? defaults.entropyTarget)
    ? (options.temperatureHigh ?? defaults.temperatureHigh)
    : (options.temperatureLow ?? defaults.temperatureLow);
}

/**
 * DCPO advantage per token: A'_{i,t} = (1 − α)·A_i + α·m_i·π_old^T(o_{i,t})/π_old(o_{i,t}), with A_i the
 * GRPO z-score (sample std, ε 1e-6), m_i = 1[r_i > 0.05], α = a/(1 + a), a = min(|H − E|, 0.1)/(Σ m/N),
 * E the previous update's −mean logπ (0 before the first), N the samples of the batch, π_old^T π_old at
 * the target temperature (`input.temperatureLogprobs`) and π_old the rollout's (`input.oldLogprobs`).
 * Choice: with no marked sample the authors divide by 0 (NaN); here α = 0 and A' = A. `advantages` is
 * each row's token mean. #198 (arXiv 2601.12730); 597358816/DCPO ray_trainer.py fit, alg == "DCPO".
 */
export function dcpoAdvantage(input: AdvantageInput, options: DcpoOptions = {}): AdvantageResult {
  const rewards = toRewardArray(input.rewards);
  const N = rewards.length;
  const old = requireSampleField(input.oldLogprobs, 'oldLogprobs', N, 'dcpo');
  const target = requireSampleField(input.temperatureLogprobs, 'temperatureLogprobs', N, 'dcpo');
  const threshold = options.scoreThreshold ?? defaults.scoreThreshold;
  const cap = options.deltaCap ?? defaults.deltaCap;
  if (!(cap >= 0)) throw new RangeError(`options.deltaCap must be ≥ 0, got ${cap}.`);
  const entropy = Number.isFinite(input.previousEntropy) ? input.previousEntropy! : 0;
  const base = grpoAdvantage(input, { epsilon: options.epsilon, std: options.std });
  const marked = Array.from(rewards, (r): number => (r > threshold ? 1 : 0)); // NaN (unscored) > t is false
  const share = marked.reduce((a, b) => a + b, 0) / Math.max(N, 1);
  const a =
    share > 0 ? Math.min(Math.abs((options.entropyTarget ?? defaults.entropyTarget) - entropy), cap) / share : 0;
  const alpha = a / (a + 1);
  const tokenAdvantages = Array.from({ length: N }, (_, i) => {
    if (old[i].length !== target[i].length)
      throw new RangeError(
        `input.temperatureLogprobs[${i}] has ${target[i].length} tokens but input.oldLogprobs[${i}] has ${old[i].length}.`,
      );
    if (!base.keep[i]) return new Float32Array(old[i].length); // unscored: no signal, as every estimator
    return Float32Array.from(
      { length: old[i].length },
      (_, t) => (1 - alpha) * base.advantages[i] + alpha * marked[i] * Math.exp(target[i][t] - old[i][t]),
    );
  });
  const advantages = Float32Array.from(tokenAdvantages, (row) =>
    row.length > 0 ? row.reduce((a, b) => a + b, 0) / row.length : 0,
  );
  return { advantages, tokenAdvantages, keep: base.keep, stdIsZero: base.stdIsZero };
}

/** `algorithm.advantage: dcpo`: the entry `grpo list` prints and configs name. */
export const dcpoAdvantagePart = defineAdvantageEstimator({
  name: 'dcpo',
  fn: dcpoAdvantage,
  description:
    '(1 − α)·A_grpo + α·1[r > 0.05]·π_old^T/π_old per token, T = 1.2 if the last update’s −mean logπ ≤ H (0.5) else 0.8, α = a/(1+a), a = min(|H − E|, 0.1)/correct share',
  citation: 'DCPO distribution-centric (#198, arXiv 2601.12730); 597358816/DCPO ray_trainer.py fit (alg DCPO)',
  options: z
    .object({
      epsilon: epsilonOption,
      std: stdOption,
      entropyTarget: z.number().nonnegative().describe('H, the entropy target (default 0.5)'),
      temperatureHigh: z.number().positive().describe('target temperature when the entropy is ≤ H (default 1.2)'),
      temperatureLow: z.number().positive().describe('target temperature when the entropy is > H (default 0.8)'),
      scoreThreshold: z.number().describe('a sample is marked when its reward exceeds this (default 0.05)'),
      deltaCap: z.number().nonnegative().describe('cap on |H − entropy| (default 0.1)'),
    })
    .partial()
    .strict(),
  needs: ['temperatureLogprobs', 'previousEntropy'],
  logprobTemperature: (options, previousEntropy) => dcpoTargetTemperature(options as DcpoOptions, previousEntropy),
});
