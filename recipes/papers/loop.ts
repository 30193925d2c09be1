/**
 * LOOP (#226, Chen et al. 2025, "Reinforcement Learning for Long-Horizon Interactive LLM Agents",
 * arXiv 2502.01600): leave-one-out PPO for a multi-turn tool-using agent, on the calculator agent of
 * recipes/tool-calculator.ts (AppWorld is not here). Run: `npx grpo train recipes/papers/loop.ts`.
 *
 * The settings, read from the authors' code (apple/ml-loop at 6ade7b9: `phi_agents/rl/train.py`
 * `_compute_adv_estimates`, `_ppo_loss`, `_surrogate_loss`, `_gradient_step`;
 * `conf/rl/params/default.yaml`, `conf/rl/optimization/adamw_const_lr.yaml`):
 *   - advantage: r_i − mean_{j≠i} r_j (`baseline: leave_one_out`, `adv_normalization: false`), K = 6
 *     rollouts per task (`rollouts_per_scenario`) — `algorithm.advantage: rloo`, groupSize 6;
 *   - loss: per-token PPO clip with the ratio clipped to [1/(1 + ε), 1 + ε], ε = 0.1 (`_ppo_loss`'s
 *     clip_min, clip_max) — `ppo-clip` with epsilonLow = 1 − 1/1.1, epsilonHigh = 0.1; a rollout's
 *     token losses are averaged (`loss.mean()`), rollouts summed and divided by the minibatch size —
 *     `seq-mean-token-mean`; no KL (`rloo_kl_lambda: 0`), no value network, no entropy term;
 *   - two passes over each batch (`epochs_per_iteration: 2`) — grpo.iterations 2;
 *   - AdamW, weight decay 0.01, torch's betas (0.9, 0.999), constant learning rate, gradient norm
 *     clipped at 0.1 (`max_grad_norm`).
 * Not carried over: their learning rate 5e-5 (a 32B model; the calculator recipe's is kept); their
 * minibatches of 32 rollouts within a pass (here each pass is one step over the whole batch, the
 * rollouts weighted 1/N instead of 1/32); their drop of rollouts with |A| < 0.01 (with the constant
 * divisor it removes only rollouts whose gradient is zero or nearly so); their early stop of a pass
 * when the KL estimate exceeds 20.
 */
import { mergeConfig, type Recipe } from '../../src/index.js';
import toolCalculator from '../tool-calculator.js';

/** LOOP's PPO ε: the ratio is clipped to [1/(1 + ε), 1 + ε]. */
export const LOOP_EPSILON = 0.1;

export default {
  ...toolCalculator,
  config: mergeConfig(toolCalculator.config, {
    sampling: { groupSize: 6 },
    grpo: { promptsPerStep: 8, microBatchSize: 48, iterations: 2, schedule: 'constant' },
    algorithm: {
      advantage: 'rloo',
      loss: 'ppo-clip',
      lossOptions: { epsilonLow: 1 - 1 / (1 + LOOP_EPSILON), epsilonHigh: LOOP_EPSILON },
      aggregation: 'seq-mean-token-mean',
      klCoefficient: 0,
    },
    optimizer: { beta1: 0.9, beta2: 0.999, weightDecay: 0.01, maxGradNorm: 0.1 },
  }),
} satisfies Recipe;
