/**
 * Flow-GRPO (Liu et al. 2025, arXiv:2505.05470) for the small flow model, one step at a time:
 * 1. rollout: for each class prompt, G samples with a stochastic sampler step (`sde`, `cps` or
 *    `dance`), storing every state and each step's log-prob under the sampling policy;
 * 2. rewards on the final images → group-relative advantages with a registered estimator
 *    (`grpo` = (r − mean)/(std + ε) per prompt, Flow-GRPO's per-prompt stat tracking), clipped to
 *    ±advantageClip (Flow-GRPO: 5);
 * 3. the loss over the first ⌊N·trainFraction⌋ steps (Flow-GRPO trains the first steps, in order):
 *    the registered `ppo-clip` loss with ε = clipRange (Flow-GRPO: 1e-4) where each (step, sample)
 *    plays a token, token-mean aggregation (= Flow-GRPO's mean over the batch, then over steps), plus
 *    β·mean KL(N(μ_θ, s²) ‖ N(μ_ref, s²)) of each step's Gaussians to the frozen reference;
 * 4. μ = innerSteps AdamW updates on the same rollout (the ratio and its clip matter from the second).
 *
 * Is: the loss as a composition of the registry parts, and one step. Is not: the run loop and its
 * files (flow-train.ts). No classifier-free guidance (the model has no null class).
 *
 * Legend: B = samples (prompts × G), D = pixels, N = sampler steps, J = trained steps.
 */
import { advantageEstimators } from '../algorithms/index.js';
import { flowStepKl } from '../algorithms/flow-steps.js';
import { ppoClipLoss } from '../algorithms/policy-losses.js';
import { type FlowModel, flowVelocity } from '../model/flow-mlp.js';
import { clipGradNorm } from '../nn/clip.js';
import type { AdamW } from '../nn/optimizer.js';
import { noGrad } from '../tensor/autograd.js';
import { add, mul } from '../tensor/elementwise.js';
import { mean } from '../tensor/ops.js';
import { concat, reshape, slice } from '../tensor/primitives.js';
import type { Random } from '../tensor/random.js';
import type { Tensor } from '../tensor/tensor.js';
import { type SamplerOptions, type Trajectory, finalImages, sampleTrajectory, stepsAt } from './sample.js';

/** Flow-GRPO's knobs; defaults in `defaultFlowGrpoOptions`. */
export interface FlowGrpoOptions {
  /** Samples per class prompt (G). */
  groupSize: number;
  /** The sampler used for rollouts and log-probs; its step names must have log-probs. */
  sampler: SamplerOptions;
  /** Fraction of the N steps trained (the first ⌊N·f⌋, at least 1). Flow-GRPO: 0.99. */
  trainFraction: number;
  /** PPO clip range ε (Flow-GRPO: 1e-4). */
  clipRange: number;
  /** Advantages are clipped to ±this (Flow-GRPO: 5). */
  advantageClip: number;
  /** β of the step-mean KL to the reference model (0: no reference needed). Flow-GRPO: 0.04. */
  klCoefficient: number;
  /** A registered advantage estimator (default 'grpo'). */
  advantageEstimator: string;
  /** AdamW updates per rollout. */
  innerSteps: number;
  /** Global gradient-norm clip (Flow-GRPO: 1.0). */
  maxGradNorm: number;
}

/** The steps trained: the first ⌊N·fraction⌋ (at least one), as Flow-GRPO's `train_timesteps`. */
export function trainedSteps(stepCount: number, fraction: number): number[] {
  if (!(fraction > 0 && fraction <= 1)) throw new Error(`trainFraction must be in (0, 1], got ${fraction}`);
  return Array.from({ length: Math.max(1, Math.floor(stepCount * fraction)) }, (_, j) => j);
}

/** What the loss needs from a rollout. */
export interface FlowGrpoBatch {
  trajectory: Trajectory;
  /** The trained step indices. */
  steps: number[];
  /** [B] advantages (already clipped). */
  advantages: Float32Array;
}

/**
 * The Flow-GRPO loss of one batch under the current model (gradients flow into its parameters):
 * ppo-clip over (step, sample) pairs + β·mean step-mean KL. One model call over all J·B states.
 */
export function flowGrpoLoss(
  model: FlowModel,
  reference: FlowModel | null,
  batch: FlowGrpoBatch,
  options: Pick<FlowGrpoOptions, 'sampler' | 'clipRange' | 'klCoefficient'>,
): { loss: Tensor; metrics: Record<string, number> } {
  const { trajectory, steps, advantages } = batch;
  const { sigmas, noiseLevel } = options.sampler;
  const stepFns = stepsAt(options.sampler);
  const B = trajectory.classes.length;
  const J = steps.length;
  const states = concat(
    steps.map((j) => trajectory.states[j]),
    0,
  ); // [J·B, D]
  const rowSigmas = steps.flatMap((j) => Array<number>(B).fill(sigmas[j]));
  const rowClasses = steps.flatMap(() => trajectory.classes);
  const velocity = flowVelocity(model, states, rowSigmas, rowClasses); // [J·B, D]
  const referenceVelocity =
    options.klCoefficient > 0 && reference
      ? noGrad(() => flowVelocity(reference, states, rowSigmas, rowClasses))
      : null;
  if (options.klCoefficient > 0 && !reference)
    throw new Error('flowGrpoLoss: klCoefficient > 0 needs a reference model');
  const logProbRows: Tensor[] = [];
  const klRows: Tensor[] = [];
  const oldLogProbs = new Float32Array(J * B);
  steps.forEach((j, row) => {
    const input = {
      sample: trajectory.states[j],
      sigmas,
      index: j,
      noiseLevel,
      nextSample: trajectory.states[j + 1],
    };
    const result = stepFns[j]({ ...input, velocity: slice(velocity, 0, row * B, (row + 1) * B) });
    const old = trajectory.logProbs[j];
    if (!result.logProb || !old)
      throw new Error(`flowGrpoLoss: step ${j} has no log-prob (an ODE step cannot be trained)`);
    logProbRows.push(reshape(result.logProb, [1, B]));
    oldLogProbs.set(old, row * B);
    if (referenceVelocity) {
      const referenceMean = stepFns[j]({
        ...input,
        velocity: slice(referenceVelocity, 0, row * B, (row + 1) * B),
      }).mean;
      klRows.push(flowStepKl(result.mean, referenceMean, result.std)); // [B]
    }
  });
  const perToken = new Float32Array(J * B);
  for (let row = 0; row < J; row++) perToken.set(advantages, row * B);
  const policy = ppoClipLoss(
    {
      logprobs: concat(logProbRows, 0),
      oldLogprobs: oldLogProbs,
      advantages: perToken,
      mask: new Float32Array(J * B).fill(1),
    },
    { epsilonLow: options.clipRange, epsilonHigh: options.clipRange },
  ); // token-mean over the J·B (step, sample) pairs
  if (klRows.length === 0)
    return { loss: policy.loss, metrics: { ...policy.metrics, 'loss/policy': policy.loss.item() } };
  const kl = mean(concat(klRows, 0));
  return {
    loss: add(policy.loss, mul(kl, options.klCoefficient)),
    metrics: { ...policy.metrics, 'loss/policy': policy.loss.item(), 'loss/kl': kl.item() },
  };
}

/** Rewards for final images, one per sample (B), with named components for logging. */
export type ScoreImagesFn = (
  images: Float32Array[],
  classes: number[],
) => { total: Float32Array; components: Record<string, Float32Array> };

/**
 * One Flow-GRPO step: rollout, rewards, advantages, μ updates. Returns metrics and the final images.
 * `trained` overrides the first-⌊N·f⌋ choice (MixGRPO's window, mix-grpo.ts).
 */
export function flowGrpoStep(
  context: { model: FlowModel; reference: FlowModel | null; optimizer: AdamW; score: ScoreImagesFn },
  prompts: readonly number[],
  options: FlowGrpoOptions,
  random: Random,
  trained: number[] = trainedSteps(options.sampler.sigmas.length - 1, options.trainFraction),
): { metrics: Record<string, number>; images: Float32Array[]; classes: number[] } {
  const classes = prompts.flatMap((label) => Array<number>(options.groupSize).fill(label));
  const trajectory = sampleTrajectory(context.model, classes, options.sampler, random);
  const images = finalImages(trajectory);
  const rewards = context.score(images, classes);
  const estimate = advantageEstimators.get(options.advantageEstimator)({
    rewards: rewards.total,
    groupSizes: options.groupSize,
  });
  const advantages = Float32Array.from(estimate.advantages, (a) =>
    Math.max(-options.advantageClip, Math.min(options.advantageClip, a)),
  );
  const batch = {
    trajectory,
    steps: trained,
    advantages,
  };
  const parameters = [...context.model.parameters.values()];
  let metrics: Record<string, number> = {};
  for (let inner = 0; inner < options.innerSteps; inner++) {
    const result = flowGrpoLoss(context.model, context.reference, batch, options);
    result.loss.backward();
    const gradNorm = clipGradNorm(parameters, options.maxGradNorm);
    context.optimizer.step();
    context.optimizer.zeroGrad();
    metrics = { ...result.metrics, 'loss/total': result.loss.item(), gradNorm };
  }
  const average = (values: Float32Array) => values.reduce((a, b) => a + b, 0) / values.length;
  metrics['reward/mean'] = average(rewards.total);
  for (const [name, values] of Object.entries(rewards.components)) metrics[`reward/${name}/mean`] = average(values);
  metrics['reward/fracZeroStd'] = average(Float32Array.from(estimate.stdIsZero));
  return { metrics, images, classes };
}
