/**
 * Sampling a flow model: start from Gaussian noise at σ = 1 and apply one sampler step per interval
 * of the schedule, keeping the whole trajectory and the log-prob of each stochastic step (what
 * Flow-GRPO stores at rollout time and recomputes under the current policy at training time).
 *
 * Is: the loop of model calls and steps, under noGrad. Is not: the steps' maths
 * (src/algorithms/flow-steps.ts) or any training.
 *
 * Legend: B = samples, D = pixels, N = steps.
 */
import { type FlowStepFn, flowSteps } from '../algorithms/flow-steps.js';
import { type FlowModel, flowDimensions, flowVelocity } from '../model/flow-mlp.js';
import { noGrad } from '../tensor/autograd.js';
import { randomNormal, type Random } from '../tensor/random.js';
import { type Tensor } from '../tensor/tensor.js';

/** How to sample. */
export interface SamplerOptions {
  /** σ_0 = 1 > … > σ_N = 0 (flowSigmas). */
  sigmas: readonly number[];
  /** The step used at each index (a name of `flowSteps`): one name for all, or one per step (MixGRPO). */
  steps: string | readonly string[];
  /** a (sde, cps) or η (dance). */
  noiseLevel: number;
}

/** One sampled batch: every state and each stochastic step's log-prob. */
export interface Trajectory {
  /** N + 1 states x_0 (noise) … x_N (image), each [B, D]. */
  states: Tensor[];
  /** Per step: log p(x_{i+1} | x_i) [B] under the sampling policy, or null for an ODE step. */
  logProbs: (Float32Array | null)[];
  /** Per step: the step's Gaussian mean μ under the sampling policy [B, D] (GRPO-Guard's ratio needs μ_old). */
  means: Tensor[];
  /** The classes sampled for, one per row. */
  classes: number[];
}

/** The step function at each index; throws for an unknown name, naming the known ones. */
export function stepsAt(options: SamplerOptions): FlowStepFn[] {
  const count = options.sigmas.length - 1;
  const names = typeof options.steps === 'string' ? Array<string>(count).fill(options.steps) : options.steps;
  if (names.length !== count) throw new Error(`sampler: ${names.length} step names for ${count} steps`);
  return names.map((name) => flowSteps.get(name));
}

/**
 * Draws B = classes.length samples, one per class entry, from `initialNoise` [B, D] when given (TempFlow-GRPO's
 * branches of one prompt share theirs) or from fresh Gaussian noise.
 */
export function sampleTrajectory(
  model: FlowModel,
  classes: readonly number[],
  options: SamplerOptions,
  random: Random,
  initialNoise?: Tensor,
): Trajectory {
  const stepFns = stepsAt(options);
  const D = flowDimensions(model.config);
  const B = classes.length;
  return noGrad(() => {
    let x = initialNoise ?? randomNormal([B, D], random); // x at σ = 1 [B, D]
    const states = [x];
    const logProbs: (Float32Array | null)[] = [];
    const means: Tensor[] = [];
    stepFns.forEach((step, index) => {
      const velocity = flowVelocity(model, x, Array<number>(B).fill(options.sigmas[index]), classes); // [B, D]
      const noise = randomNormal([B, D], random);
      const result = step({
        sample: x,
        velocity,
        sigmas: options.sigmas,
        index,
        noiseLevel: options.noiseLevel,
        noise,
      });
      x = result.nextSample;
      states.push(x);
      logProbs.push(result.logProb ? result.logProb.data.slice() : null);
      means.push(result.mean);
    });
    return { states, logProbs, means, classes: [...classes] };
  });
}

/** The final images of a trajectory, one Float32Array of D model-space pixels per sample. */
export function finalImages(trajectory: Trajectory): Float32Array[] {
  const last = trajectory.states[trajectory.states.length - 1];
  const D = last.shape[1];
  return trajectory.classes.map((_, i) => last.data.slice(i * D, (i + 1) * D));
}
