/**
 * DiffusionNFT (Zheng et al. 2025, arXiv:2509.16117; NVlabs/DiffusionNFT `train_nft_sd3.py`):
 * RL on the forward process — no log-probs, any sampler. Per step:
 * 1. rollout with the *old* policy π_old (a slowly moving copy of the model), any sampler step
 *    (the Euler ODE included); rewards on the final images → advantages A (registered estimator),
 *    clipped to ±C, mapped to an optimality weight r = clamp(A/C/2 + ½, 0, 1);
 * 2. for each sample, J = ⌊N·trainFraction⌋ noise levels drawn without replacement from the
 *    sampler's schedule (the code permutes the timesteps per sample), a fresh ε and x_σ = (1−σ)x0 + σε;
 * 3. implicit policies v⁺ = β·v_θ + (1−β)·v_old and v⁻ = (1+β)·v_old − β·v_θ; their clean-image
 *    predictions x̂0^± = x_σ − σ·v^±; each squared error (mean over pixels) divided by the detached
 *    mean |x̂0^± − x0| (clipped ≥ 1e-5: the code's adaptive weighting);
 *    loss = mean over (sample, σ) of C·(r·L⁺ + (1−r)·L⁻)/β, + klCoefficient·mean (v_θ − v_ref)²;
 * 4. one AdamW update, then π_old ← d·π_old + (1−d)·π_θ with d = min(0.001·step, 0.5) (the code's
 *    `decay_type` 1).
 *
 * Is: the loss and one step. Is not: the run loop (flow-run.ts).
 *
 * Legend: B = samples, D = pixels, J = noise levels per sample, R = J·B rows.
 */
import { advantageEstimators } from '../algorithms/index.js';
import { type FlowModel, flowVelocity } from '../model/flow-mlp.js';
import { clipGradNorm } from '../nn/clip.js';
import type { AdamW } from '../nn/optimizer.js';
import { noGrad } from '../tensor/autograd.js';
import { add, mul, square, sub } from '../tensor/elementwise.js';
import { mean } from '../tensor/ops.js';
import type { Random } from '../tensor/random.js';
import { type Tensor, tensor } from '../tensor/tensor.js';
import { promptGroups, type ScoreImagesFn } from './flow-grpo.js';
import { type SamplerOptions, finalImages, sampleTrajectory } from './sample.js';

/** DiffusionNFT's knobs. */
export interface NftOptions {
  groupSize: number;
  /** Any sampler (the ODE included): no log-probs are needed. */
  sampler: SamplerOptions;
  /** J = ⌊N·trainFraction⌋ noise levels per sample (at least 1). */
  trainFraction: number;
  /** β of the implicit policies (the code's `config.beta`; 1.0 with decay type 1). */
  nftBeta: number;
  /** C: advantages clipped to ±C and scaled by it (the code's adv_clip_max, 5). */
  advantageClip: number;
  /** Weight of mean (v_θ − v_ref)² (the code's train.beta, 1e-4); 0 = no reference. */
  klCoefficient: number;
  advantageEstimator: string;
  maxGradNorm: number;
}

/** The training rows of one rollout: a clean image, a noise level, noise and a weight r per row. */
export interface NftBatch {
  /** x0 per row. [R, D] */
  images: Tensor;
  /** ε per row. [R, D] */
  noise: Tensor;
  sigmas: number[];
  classes: number[];
  /** r ∈ [0, 1] per row. */
  optimality: Float32Array;
}

/** r = clamp(clip(A, ±C)/C/2 + ½, 0, 1): the optimality probability of each sample. */
export function optimalityWeights(advantages: ArrayLike<number>, clip: number): Float32Array {
  return Float32Array.from(advantages, (a) =>
    Math.min(1, Math.max(0, Math.max(-clip, Math.min(clip, a)) / clip / 2 + 0.5)),
  );
}

/** mean over pixels of (x̂0 − x0)² divided by the detached mean |x̂0 − x0| (≥ 1e-5). [R] */
function adaptiveError(predicted: Tensor, x0: Tensor): Tensor {
  const D = x0.shape[1];
  const difference = sub(predicted, x0); // [R, D]
  const weights = new Float32Array(x0.shape[0]);
  for (let r = 0; r < weights.length; r++) {
    let total = 0;
    for (let d = 0; d < D; d++) total += Math.abs(difference.data[r * D + d]);
    weights[r] = 1 / Math.max(1e-5, total / D);
  }
  return mul(mean(square(difference), 1), tensor(weights)); // [R]
}

/** The DiffusionNFT loss of a batch under `model`, with the old policy and optional reference. */
export function nftLoss(
  model: FlowModel,
  old: FlowModel,
  reference: FlowModel | null,
  batch: NftBatch,
  options: Pick<NftOptions, 'nftBeta' | 'advantageClip' | 'klCoefficient'>,
): { loss: Tensor; metrics: Record<string, number> } {
  const beta = options.nftBeta;
  const R = batch.sigmas.length;
  const sigmaColumn = tensor(batch.sigmas, [R, 1]);
  const noisy = add(mul(batch.images, sub(1, sigmaColumn)), mul(batch.noise, sigmaColumn)); // x_σ [R, D]
  const oldVelocity = noGrad(() => flowVelocity(old, noisy, batch.sigmas, batch.classes)); // [R, D]
  const velocity = flowVelocity(model, noisy, batch.sigmas, batch.classes); // [R, D]
  const positive = add(mul(velocity, beta), mul(oldVelocity, 1 - beta)); // v⁺ [R, D]
  const negative = sub(mul(oldVelocity, 1 + beta), mul(velocity, beta)); // v⁻ [R, D]
  const positiveError = adaptiveError(sub(noisy, mul(positive, sigmaColumn)), batch.images); // [R]
  const negativeError = adaptiveError(sub(noisy, mul(negative, sigmaColumn)), batch.images); // [R]
  const r = tensor(batch.optimality);
  const perRow = mul(add(mul(positiveError, r), mul(negativeError, sub(1, r))), options.advantageClip / beta); // [R]
  const policy = mean(perRow);
  const metrics: Record<string, number> = { 'loss/policy': policy.item() };
  if (options.klCoefficient === 0) return { loss: policy, metrics };
  if (!reference) throw new Error('nftLoss: klCoefficient > 0 needs a reference model');
  const referenceVelocity = noGrad(() => flowVelocity(reference, noisy, batch.sigmas, batch.classes));
  const kl = mean(square(sub(velocity, referenceVelocity)));
  metrics['loss/kl'] = kl.item();
  return { loss: add(policy, mul(kl, options.klCoefficient)), metrics };
}

/** d = min(0.001·step, 0.5): how much of π_old is kept after `step` (the code's decay type 1). */
export const oldPolicyDecay = (step: number): number => Math.min(0.001 * step, 0.5);

/** One DiffusionNFT step (1-based `step` for the decay): rollout with π_old, one update, π_old moves. */
export function nftStep(
  context: { model: FlowModel; old: FlowModel; reference: FlowModel | null; optimizer: AdamW; score: ScoreImagesFn },
  prompts: readonly number[],
  options: NftOptions,
  random: Random,
  step: number,
): { metrics: Record<string, number>; images: Float32Array[]; classes: number[] } {
  const classes = prompts.flatMap((label) => Array<number>(options.groupSize).fill(label));
  const images = finalImages(sampleTrajectory(context.old, classes, options.sampler, random));
  const rewards = context.score(images, classes, promptGroups(classes.length, options.groupSize));
  const estimate = advantageEstimators.get(options.advantageEstimator)({
    rewards: rewards.total,
    groupSizes: options.groupSize,
  });
  const optimality = optimalityWeights(estimate.advantages, options.advantageClip);
  const N = options.sampler.sigmas.length - 1;
  const J = Math.max(1, Math.floor(N * options.trainFraction));
  const D = images[0].length;
  const rows = {
    images: new Float32Array(J * classes.length * D),
    sigmas: [] as number[],
    classes: [] as number[],
    r: [] as number[],
  };
  classes.forEach((label, b) => {
    const levels = random.shuffle(Array.from({ length: N }, (_, index) => index)).slice(0, J);
    for (const index of levels) {
      rows.images.set(images[b], rows.sigmas.length * D);
      rows.sigmas.push(options.sampler.sigmas[index]);
      rows.classes.push(label);
      rows.r.push(optimality[b]);
    }
  });
  const R = rows.sigmas.length;
  const noise = tensor(
    Float32Array.from({ length: R * D }, () => random.normal()),
    [R, D],
  );
  const batch = {
    images: tensor(rows.images, [R, D]),
    noise,
    sigmas: rows.sigmas,
    classes: rows.classes,
    optimality: Float32Array.from(rows.r),
  };
  const result = nftLoss(context.model, context.old, context.reference, batch, options);
  result.loss.backward();
  const gradNorm = clipGradNorm([...context.model.parameters.values()], options.maxGradNorm);
  context.optimizer.step();
  context.optimizer.zeroGrad();
  const decay = oldPolicyDecay(step);
  for (const [name, value] of context.model.parameters) {
    const target = context.old.parameters.get(name)!.data;
    for (let i = 0; i < target.length; i++) target[i] = decay * target[i] + (1 - decay) * value.data[i];
  }
  const average = (values: ArrayLike<number>) => Array.from(values).reduce((a, b) => a + b, 0) / values.length;
  const metrics: Record<string, number> = { ...result.metrics, 'loss/total': result.loss.item(), gradNorm };
  metrics['reward/mean'] = average(rewards.total);
  for (const [name, values] of Object.entries(rewards.components)) metrics[`reward/${name}/mean`] = average(values);
  return { metrics, images, classes };
}
