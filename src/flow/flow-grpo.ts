/**
 * Flow-GRPO (Liu et al. 2025, arXiv:2505.05470) for the small flow model, one step at a time:
 * 1. rollout: for each class prompt, G samples with a stochastic sampler step (`sde`, `cps` or
 *    `dance`), storing every state and each step's log-prob under the sampling policy;
 * 2. rewards on the final images → group-relative advantages with a registered estimator
 *    (`grpo` = (r − mean)/(std + ε) per prompt, Flow-GRPO's per-prompt stat tracking), clipped to
 *    ±advantageClip (Flow-GRPO: 5);
 * 3. the loss over the first ⌊N·trainFraction⌋ steps (Flow-GRPO trains the first steps, in order; or,
 *    with timestepSelection 'dance', DanceGRPO's random ⌊(N−1)·trainFraction⌋ steps per sample):
 *    the registered `ppo-clip` loss with ε = clipRange (Flow-GRPO: 1e-4) where each (step, sample)
 *    plays a token, token-mean aggregation (= Flow-GRPO's mean over the batch, then over steps), plus
 *    β·mean KL(N(μ_θ, s²) ‖ N(μ_ref, s²)) of each step's Gaussians to the frozen reference;
 * 4. μ = innerSteps AdamW updates on the same rollout (the ratio and its clip matter from the second).
 * Two variants change the per-pair term (pairObjective): GRPO-Guard's normalised ratio and step reweighting,
 * and TempFlow-GRPO's noise-aware weight (its branching rollout is tempflow-grpo.ts).
 *
 * Is: the loss as a composition of the registry parts, and one step. Is not: the run loop and its
 * files (flow-run.ts). No classifier-free guidance (the model has no null class).
 *
 * Legend: B = samples (prompts × G), D = pixels, N = sampler steps, J = trained steps.
 */
import { advantageEstimators } from '../algorithms/index.js';
import { type FlowStepResult, flowStepKl } from '../algorithms/flow-steps.js';
import { ppoClipLoss } from '../algorithms/policy-losses.js';
import { type FlowModel, flowVelocity } from '../model/flow-mlp.js';
import { clipGradNorm } from '../nn/clip.js';
import type { AdamW } from '../nn/optimizer.js';
import { noGrad } from '../tensor/autograd.js';
import { add, mul, sub } from '../tensor/elementwise.js';
import { mean } from '../tensor/ops.js';
import { concat, reshape, slice } from '../tensor/primitives.js';
import type { Random } from '../tensor/random.js';
import { type Tensor, tensor } from '../tensor/tensor.js';
import { type SamplerOptions, type Trajectory, finalImages, sampleTrajectory, stepsAt } from './sample.js';

/** The per-pair objective: Flow-GRPO's, or a variant's (pairObjective). */
export type FlowPolicyObjective = 'flow-grpo' | 'grpo-guard' | 'tempflow-grpo';

/** Flow-GRPO's knobs; defaults in `defaultFlowGrpoOptions`. */
export interface FlowGrpoOptions {
  /** The per-pair objective (default 'flow-grpo'); the variants need the `sde` step (flow-run.ts checks). */
  algorithm?: FlowPolicyObjective;
  /** Samples per class prompt (G). */
  groupSize: number;
  /** The sampler used for rollouts and log-probs; its step names must have log-probs. */
  sampler: SamplerOptions;
  /** Fraction of the N steps trained (the first ⌊N·f⌋, at least 1). Flow-GRPO: 0.99. */
  trainFraction: number;
  /**
   * Which steps are trained: 'first' (Flow-GRPO: the first ⌊N·f⌋, the same for every sample; default) or
   * 'dance' (DanceGRPO: per sample a random ⌊(N−1)·f⌋ of the steps before the last; danceTimestepSelection).
   */
  timestepSelection?: 'first' | 'dance';
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

/**
 * DanceGRPO's timestep selection (`train_grpo_flux.py`): every sample gets its own random permutation
 * of the steps except the last (the code drops the final step from `samples`), and the first
 * ⌊(N−1)·fraction⌋ of it (at least one) are trained: a random subset per sample, in random order.
 * Returns, for each step, the samples that train it (sorted), so one model call still covers all pairs.
 */
export function danceTimestepSelection(
  stepCount: number,
  sampleCount: number,
  fraction: number,
  random: Random,
): { steps: number[]; samples: number[][] } {
  if (!(fraction > 0 && fraction <= 1)) throw new Error(`trainFraction must be in (0, 1], got ${fraction}`);
  if (stepCount < 2) throw new Error(`timestepSelection "dance" needs at least 2 sampler steps, got ${stepCount}`);
  const candidates = stepCount - 1;
  const count = Math.max(1, Math.floor(candidates * fraction));
  const samplesAt: number[][] = Array.from({ length: candidates }, () => []);
  for (let b = 0; b < sampleCount; b++)
    for (const step of random.shuffle(Array.from({ length: candidates }, (_, j) => j)).slice(0, count))
      samplesAt[step].push(b);
  const steps = samplesAt.flatMap((rows, step) => (rows.length > 0 ? [step] : []));
  return { steps, samples: steps.map((step) => samplesAt[step]) };
}

/** What the loss needs from a rollout. */
export interface FlowGrpoBatch {
  trajectory: Trajectory;
  /** The trained step indices. */
  steps: number[];
  /** samples[k]: the sample rows trained at steps[k] (DanceGRPO's per-sample choice); absent = every sample. */
  samples?: number[][];
  /** [B] advantages (already clipped). */
  advantages: Float32Array;
}

/** Rows `rows` of a constant [B, D] tensor (the stored states need no gradient). [R, D] */
export function takeRows(x: Tensor, rows: readonly number[]): Tensor {
  const D = x.shape[1];
  if (rows.length === x.shape[0] && rows.every((row, i) => row === i)) return x;
  const out = new Float32Array(rows.length * D);
  rows.forEach((row, i) => out.set(x.data.subarray(row * D, (row + 1) * D), i * D));
  return tensor(out, [rows.length, D]);
}

/** TempFlow-GRPO's weight is 2.25·s, s the step's transition std (train_sd3_pr.py: `- 2.25 * std_dev_t * advantages * ratio`). */
const tempFlowWeightScale = 2.25;

/**
 * What one trained step feeds ppo-clip for its rows: the log-ratio, and a positive weight w on the advantage
 * (max(−wAρ, −wA·clip ρ) = w·max(−Aρ, −A·clip ρ), so the weight scales each pair's surrogate). s is the step's
 * transition std (std_t·√(−dt) for `sde`), dt = σ' − σ < 0:
 * - 'flow-grpo': log ρ = log p_θ − log p_old, w = 1;
 * - 'grpo-guard' (Wang et al. 2025, arXiv:2510.22319; as verl-omni's GRPOGuardLoss and Flow-Factory's
 *   GRPOGuardTrainer): RatioNorm log ρ = s·(log p_θ − log p_old + mean_D (μ_θ − μ_old)²/(2s²)), which removes
 *   the ratio's negative mean bias and its 1/s scale, and the gradient reweighting w = 1/(−dt) (verl-omni's
 *   `pg_loss / sqrt_dt²`; Flow-Factory leaves it out);
 * - 'tempflow-grpo' (He et al. 2025, arXiv:2508.04324, train_sd3_pr.py): log ρ as Flow-GRPO, w = 2.25·s.
 */
export function pairObjective(
  algorithm: FlowPolicyObjective,
  current: FlowStepResult,
  old: { logProbs: Float32Array; mean: Tensor },
  dt: number,
): { logRatio: Tensor; weight: number } {
  if (!current.logProb) throw new Error('pairObjective: the step has no log-prob (an ODE step cannot be trained)');
  const logRatio = sub(current.logProb, tensor(old.logProbs, [old.logProbs.length])); // [rows]
  const s = current.std;
  if (algorithm === 'tempflow-grpo') return { logRatio, weight: tempFlowWeightScale * s };
  if (algorithm !== 'grpo-guard') return { logRatio, weight: 1 };
  // flowStepKl = mean_D (μ_θ − μ_old)²/(2s²): the bias RatioNorm adds back before scaling by s.
  return { logRatio: mul(add(logRatio, flowStepKl(current.mean, old.mean, s)), s), weight: -1 / dt };
}

/**
 * The Flow-GRPO loss of one batch under the current model (gradients flow into its parameters):
 * ppo-clip over (step, sample) pairs + β·mean step-mean KL. One model call over all pairs.
 */
export function flowGrpoLoss(
  model: FlowModel,
  reference: FlowModel | null,
  batch: FlowGrpoBatch,
  options: Pick<FlowGrpoOptions, 'sampler' | 'clipRange' | 'klCoefficient' | 'algorithm'>,
): { loss: Tensor; metrics: Record<string, number> } {
  const { trajectory, steps, advantages } = batch;
  const { sigmas, noiseLevel } = options.sampler;
  const stepFns = stepsAt(options.sampler);
  const B = trajectory.classes.length;
  const all = Array.from({ length: B }, (_, b) => b);
  const rowsAt = steps.map((_, k) => batch.samples?.[k] ?? all);
  if (batch.samples && batch.samples.length !== steps.length)
    throw new Error(`flowGrpoLoss: ${batch.samples.length} sample lists for ${steps.length} steps`);
  if (options.klCoefficient > 0 && !reference)
    throw new Error('flowGrpoLoss: klCoefficient > 0 needs a reference model');
  const states = concat(
    steps.map((j, k) => takeRows(trajectory.states[j], rowsAt[k])),
    0,
  ); // [P, D], P = pairs
  const rowSigmas = steps.flatMap((j, k) => Array<number>(rowsAt[k].length).fill(sigmas[j]));
  const rowClasses = rowsAt.flatMap((rows) => rows.map((b) => trajectory.classes[b]));
  const velocity = flowVelocity(model, states, rowSigmas, rowClasses); // [P, D]
  const referenceVelocity =
    options.klCoefficient > 0 && reference
      ? noGrad(() => flowVelocity(reference, states, rowSigmas, rowClasses))
      : null;
  const logRatioRows: Tensor[] = [];
  const klRows: Tensor[] = [];
  const P = rowSigmas.length;
  const pairAdvantages = new Float32Array(P);
  let offset = 0;
  steps.forEach((j, k) => {
    const rows = rowsAt[k];
    const end = offset + rows.length;
    const input = {
      sample: takeRows(trajectory.states[j], rows),
      sigmas,
      index: j,
      noiseLevel,
      nextSample: takeRows(trajectory.states[j + 1], rows),
    };
    const result = stepFns[j]({ ...input, velocity: slice(velocity, 0, offset, end) });
    const old = trajectory.logProbs[j];
    if (!result.logProb || !old)
      throw new Error(`flowGrpoLoss: step ${j} has no log-prob (an ODE step cannot be trained)`);
    const oldRows = { logProbs: Float32Array.from(rows, (b) => old[b]), mean: takeRows(trajectory.means[j], rows) };
    const pair = pairObjective(options.algorithm ?? 'flow-grpo', result, oldRows, sigmas[j + 1] - sigmas[j]);
    logRatioRows.push(reshape(pair.logRatio, [1, rows.length]));
    rows.forEach((b, i) => (pairAdvantages[offset + i] = advantages[b] * pair.weight));
    if (referenceVelocity) {
      const referenceMean = stepFns[j]({ ...input, velocity: slice(referenceVelocity, 0, offset, end) }).mean;
      klRows.push(flowStepKl(result.mean, referenceMean, result.std)); // [rows]
    }
    offset = end;
  });
  const policy = ppoClipLoss(
    {
      logprobs: concat(logRatioRows, 1), // the log-ratios, against old log-probs of 0
      oldLogprobs: new Float32Array(P),
      advantages: pairAdvantages,
      mask: new Float32Array(P).fill(1),
    },
    { epsilonLow: options.clipRange, epsilonHigh: options.clipRange },
  ); // token-mean over the P (step, sample) pairs
  if (klRows.length === 0)
    return { loss: policy.loss, metrics: { ...policy.metrics, 'loss/policy': policy.loss.item() } };
  const kl = mean(concat(klRows, 0));
  return {
    loss: add(policy.loss, mul(kl, options.klCoefficient)),
    metrics: { ...policy.metrics, 'loss/policy': policy.loss.item(), 'loss/kl': kl.item() },
  };
}

/**
 * Rewards for final images, one per sample (B), with named components for logging; `groups` gives each
 * image its prompt's id, for group-relative rewards (`win-rate`).
 */
export type ScoreImagesFn = (
  images: Float32Array[],
  classes: number[],
  groups: number[],
) => { total: Float32Array; components: Record<string, Float32Array> };

/** The group id of each of `count` samples drawn `groupSize` per prompt, prompt by prompt: [0,0,…,1,1,…]. */
export const promptGroups = (count: number, groupSize: number): number[] =>
  Array.from({ length: count }, (_, index) => Math.floor(index / groupSize));

/** The model, its frozen reference (or null), the optimizer and the image rewards of one flow run. */
export interface FlowGrpoContext {
  model: FlowModel;
  reference: FlowModel | null;
  optimizer: AdamW;
  score: ScoreImagesFn;
}

/** Group-relative advantages of one rollout's rewards, clipped to ±advantageClip, and which groups had no spread. */
export function clippedAdvantages(
  rewards: Float32Array,
  options: Pick<FlowGrpoOptions, 'advantageEstimator' | 'groupSize' | 'advantageClip'>,
): { advantages: Float32Array; stdIsZero: ArrayLike<number | boolean> } {
  const estimate = advantageEstimators.get(options.advantageEstimator)({ rewards, groupSizes: options.groupSize });
  const advantages = Float32Array.from(estimate.advantages, (a) =>
    Math.max(-options.advantageClip, Math.min(options.advantageClip, a)),
  );
  return { advantages, stdIsZero: estimate.stdIsZero };
}

/**
 * μ = innerSteps AdamW updates on the batches of one rollout: the loss is the pair-weighted mean of their
 * flowGrpoLoss (= the token-mean over all their pairs); metrics are pair-weighted means, from the last update.
 */
export function flowGrpoUpdate(
  context: FlowGrpoContext,
  batches: readonly FlowGrpoBatch[],
  options: FlowGrpoOptions,
): Record<string, number> {
  const pairs = batches.map((batch) =>
    batch.steps.reduce((n, _, k) => n + (batch.samples?.[k].length ?? batch.trajectory.classes.length), 0),
  );
  const share = pairs.map((count) => count / pairs.reduce((a, b) => a + b, 0));
  const parameters = [...context.model.parameters.values()];
  let metrics: Record<string, number> = {};
  for (let inner = 0; inner < options.innerSteps; inner++) {
    const results = batches.map((batch) => flowGrpoLoss(context.model, context.reference, batch, options));
    const loss = results
      .slice(1)
      .reduce((sum, result, k) => add(sum, mul(result.loss, share[k + 1])), mul(results[0].loss, share[0]));
    loss.backward();
    const gradNorm = clipGradNorm(parameters, options.maxGradNorm);
    context.optimizer.step();
    context.optimizer.zeroGrad();
    metrics = { 'loss/total': loss.item(), gradNorm };
    for (const name of Object.keys(results[0].metrics))
      metrics[name] = results.reduce((sum, result, k) => sum + share[k] * result.metrics[name], 0);
  }
  return metrics;
}

/** The mean of each reward (and component) and the fraction of groups without spread, as metrics. */
export function rewardMetrics(
  rewards: ReturnType<ScoreImagesFn>,
  stdIsZero: ArrayLike<number | boolean>,
): Record<string, number> {
  const average = (values: ArrayLike<number>) => Array.from(values).reduce((a, b) => a + b, 0) / values.length;
  const metrics: Record<string, number> = { 'reward/mean': average(rewards.total) };
  for (const [name, values] of Object.entries(rewards.components)) metrics[`reward/${name}/mean`] = average(values);
  metrics['reward/fracZeroStd'] = average(Array.from(stdIsZero, Number));
  return metrics;
}

/**
 * One Flow-GRPO step: rollout, rewards, advantages, μ updates. Returns metrics and the final images.
 * `trained` overrides the step choice (MixGRPO's window, mix-grpo.ts).
 */
export function flowGrpoStep(
  context: FlowGrpoContext,
  prompts: readonly number[],
  options: FlowGrpoOptions,
  random: Random,
  trained?: number[],
): { metrics: Record<string, number>; images: Float32Array[]; classes: number[] } {
  const classes = prompts.flatMap((label) => Array<number>(options.groupSize).fill(label));
  const trajectory = sampleTrajectory(context.model, classes, options.sampler, random);
  const images = finalImages(trajectory);
  const rewards = context.score(images, classes, promptGroups(classes.length, options.groupSize));
  const { advantages, stdIsZero } = clippedAdvantages(rewards.total, options);
  const stepCount = options.sampler.sigmas.length - 1;
  const selection =
    trained !== undefined
      ? { steps: trained }
      : options.timestepSelection === 'dance'
        ? danceTimestepSelection(stepCount, classes.length, options.trainFraction, random)
        : { steps: trainedSteps(stepCount, options.trainFraction) };
  const metrics = flowGrpoUpdate(context, [{ trajectory, ...selection, advantages }], options);
  return { metrics: { ...metrics, ...rewardMetrics(rewards, stdIsZero) }, images, classes };
}
