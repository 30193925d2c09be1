/**
 * Pre-training a flow model by (rectified) flow matching: x_σ = (1−σ)·x0 + σ·ε with σ ~ U(0, 1),
 * loss = mean ‖v_θ(x_σ, σ, class) − (ε − x0)‖² over pixels and the batch (Lipman et al. 2023;
 * Liu et al. 2022). σ is uniform, not SD3's logit-normal: at this size the extremes are cheap to learn.
 *
 * Is: the loss, one step, and a plain AdamW loop over the digits. Is not: RL (flow-grpo.ts) or the
 * resumable run with checkpoints (pretrain-run.ts).
 *
 * Legend: B = batch, D = pixels.
 */
import { type FlowModel, flowDimensions, flowVelocity } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import { add, mul, square, sub } from '../tensor/elementwise.js';
import { mean } from '../tensor/ops.js';
import { Random } from '../tensor/random.js';
import { type Tensor, tensor } from '../tensor/tensor.js';
import type { DigitSet } from './digits.js';

/** The flow-matching loss of clean images x0 [B, D] at noise levels σ [B] with noise ε [B, D]. */
export function flowMatchingLoss(
  model: FlowModel,
  x0: Tensor,
  classes: readonly number[],
  sigmas: readonly number[],
  noise: Tensor,
): Tensor {
  const B = x0.shape[0];
  const sigmaColumn = tensor(sigmas, [B, 1]);
  const noisy = add(mul(x0, sub(1, sigmaColumn)), mul(noise, sigmaColumn)); // x_σ [B, D]
  const target = sub(noise, x0); // ε − x0 [B, D]
  return mean(square(sub(flowVelocity(model, noisy, sigmas, classes), target)));
}

/**
 * The Random of pre-training step `step` (0-based): every random choice of a step (its batch, noise
 * levels and noise) comes from (seed, step) alone, so a resumed run replays exactly the steps an
 * uninterrupted one takes, with no generator state carried between steps.
 */
export const pretrainStepRandom = (seed: number, step: number): Random => new Random(seed * 1_000_003 + step + 17);

/** One flow-matching step on a random batch of `digits`: loss, backward, AdamW update. Returns the loss. */
export function flowMatchingStep(
  model: FlowModel,
  optimizer: AdamW,
  digits: DigitSet,
  batchSize: number,
  random: Random,
): number {
  const D = flowDimensions(model.config);
  const indices = Array.from({ length: batchSize }, () => random.integer(digits.images.length));
  const x0 = new Float32Array(indices.length * D);
  indices.forEach((index, i) => x0.set(digits.images[index], i * D));
  const noise = new Float32Array(x0.length).map(() => random.normal());
  const sigmas = indices.map(() => random.uniform());
  const classes = indices.map((index) => digits.labels[index]);
  const loss = flowMatchingLoss(
    model,
    tensor(x0, [indices.length, D]),
    classes,
    sigmas,
    tensor(noise, [indices.length, D]),
  );
  loss.backward();
  optimizer.step();
  optimizer.zeroGrad();
  return loss.item();
}

/** The AdamW of flow-matching pre-training (no weight decay). */
export function pretrainOptimizer(model: FlowModel, learningRate: number): AdamW {
  const parameters = [...model.parameters].map(([name, value]) => ({ name, tensor: value, decay: false }));
  return new AdamW(parameters, { learningRate, weightDecay: 0 });
}

/** Throws unless every image of `digits` holds the model's D numbers. */
export function checkDigitSize(model: FlowModel, digits: DigitSet): void {
  const D = flowDimensions(model.config);
  if (digits.images.some((image) => image.length !== D))
    throw new Error(`pretrainFlowModel: every image must hold the model's ${D} numbers`);
}

/** Options of `pretrainFlowModel`. */
export interface PretrainOptions {
  steps: number;
  batchSize: number;
  learningRate: number;
}

/**
 * Trains `model` in place on `digits` (step k drawing from pretrainStepRandom(seed, k)); returns the
 * mean loss of the last 10% of steps. The resumable loop with checkpoints is pretrain-run.ts's.
 */
export function pretrainFlowModel(model: FlowModel, digits: DigitSet, options: PretrainOptions, seed: number): number {
  checkDigitSize(model, digits);
  const optimizer = pretrainOptimizer(model, options.learningRate);
  const tail: number[] = [];
  for (let step = 0; step < options.steps; step++) {
    const value = flowMatchingStep(model, optimizer, digits, options.batchSize, pretrainStepRandom(seed, step));
    if (step >= options.steps * 0.9) tail.push(value);
  }
  return tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
}
