/**
 * Pre-training a flow model by (rectified) flow matching: x_σ = (1−σ)·x0 + σ·ε with σ ~ U(0, 1),
 * loss = mean ‖v_θ(x_σ, σ, class) − (ε − x0)‖² over pixels and the batch (Lipman et al. 2023;
 * Liu et al. 2022). σ is uniform, not SD3's logit-normal: at this size the extremes are cheap to learn.
 *
 * Is: the loss and a plain AdamW loop over the digits. Is not: RL (grpo.ts).
 *
 * Legend: B = batch, D = pixels.
 */
import { type FlowModel, flowDimensions, flowVelocity } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import { add, mul, square, sub } from '../tensor/elementwise.js';
import { mean } from '../tensor/ops.js';
import { type Random } from '../tensor/random.js';
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

/** Options of `pretrainFlowModel`. */
export interface PretrainOptions {
  steps: number;
  batchSize: number;
  learningRate: number;
  /** Called after each step with the loss (for logs). */
  onStep?: (step: number, loss: number) => void;
}

/** Trains `model` in place on `digits`; returns the mean loss of the last 10% of steps. */
export function pretrainFlowModel(
  model: FlowModel,
  digits: DigitSet,
  options: PretrainOptions,
  random: Random,
): number {
  const parameters = [...model.parameters].map(([name, value]) => ({ name, tensor: value, decay: false }));
  const optimizer = new AdamW(parameters, { learningRate: options.learningRate, weightDecay: 0 });
  const D = flowDimensions(model.config);
  if (digits.images.some((image) => image.length !== D))
    throw new Error(`pretrainFlowModel: every image must hold the model's ${D} numbers`);
  const tail: number[] = [];
  for (let step = 0; step < options.steps; step++) {
    const indices = Array.from({ length: options.batchSize }, () => random.integer(digits.images.length));
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
    const value = loss.item();
    if (step >= options.steps * 0.9) tail.push(value);
    options.onStep?.(step, value);
  }
  return tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
}
