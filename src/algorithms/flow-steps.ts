/**
 * One denoising step of a rectified-flow sampler, with the Gaussian log-probability of the step
 * that Flow-GRPO-style training needs: Flow-GRPO's `sde` and `cps` steps, DanceGRPO's step and the
 * deterministic Euler (ODE) step, plus the closed-form KL between two steps' Gaussians.
 *
 * Conventions (those of the reference code): σ runs from 1 (noise) down to 0 (data), x_σ =
 * (1−σ)·x0 + σ·ε, the model predicts the velocity v ≈ ε − x0, and a step goes from σ = sigmas[i]
 * to σ' = sigmas[i+1] < σ with dt = σ' − σ < 0. Each log-prob is averaged over the D dimensions of a
 * sample (not summed), exactly as the reference code does, so it is comparable across image sizes.
 * Checked against scripts/reference/flow_sde_reference.py (float64 PyTorch) in flow-steps.test.ts.
 *
 * Is: tensor maths on [B, D] rows, differentiable in the velocity (the policy's output).
 * Is not: a model, a schedule of model calls or a training loop (src/flow/).
 *
 * Legend: B = samples, D = dimensions of one sample (pixels), σ = noise level, a = noise level knob.
 */
import { add, mul, square, sub } from '../tensor/elementwise.js';
import { mean as meanOver } from '../tensor/ops.js';
import type { Tensor } from '../tensor/tensor.js';
import { type Registry, createRegistry } from './registry.js';

/** The inputs of one step. */
export interface FlowStepInput {
  /** x_σ, the current samples. [B, D] */
  sample: Tensor;
  /** v(x_σ, σ, c), the model's velocity prediction. [B, D] */
  velocity: Tensor;
  /** The whole schedule σ_0 = 1 > σ_1 > … > σ_N = 0 (σ_0 < 1 is allowed). */
  sigmas: readonly number[];
  /** Which step: from sigmas[index] to sigmas[index + 1]. */
  index: number;
  /** a for `sde`/`cps` (Flow-GRPO uses 0.7), η for `dance` (DanceGRPO uses 0.3); ignored by `ode`. */
  noiseLevel: number;
  /** A given next sample x' (training recomputes the log-prob of a stored step); detached. [B, D] */
  nextSample?: Tensor;
  /** ε ~ N(0, I) for drawing x' = mean + std·ε when `nextSample` is absent. [B, D] */
  noise?: Tensor;
}

/** What a step returns. */
export interface FlowStepResult {
  /** x', given or drawn. [B, D] */
  nextSample: Tensor;
  /** The Gaussian's mean μ(x_σ, v). [B, D] */
  mean: Tensor;
  /** The Gaussian's standard deviation per dimension (0 for the ODE step). */
  std: number;
  /** log p(x' | x_σ) averaged over D, as the reference code defines it; null for the ODE step. [B] */
  logProb: Tensor | null;
}

/** One sampler step; every registered step shares this signature. */
export type FlowStepFn = (input: FlowStepInput) => FlowStepResult;

const logSqrtTwoPi = 0.5 * Math.log(2 * Math.PI);

function stepSigmas(input: FlowStepInput): { sigma: number; sigmaNext: number; dt: number } {
  const { sigmas, index } = input;
  if (!Number.isInteger(index) || index < 0 || index + 1 >= sigmas.length) {
    throw new Error(`flow step: index ${index} is outside the schedule of ${sigmas.length - 1} steps`);
  }
  const sigma = sigmas[index];
  const sigmaNext = sigmas[index + 1];
  if (!(sigmaNext < sigma) || sigma > 1 || sigmaNext < 0) {
    throw new Error(`flow step: needs 1 ≥ σ > σ' ≥ 0, got σ = ${sigma}, σ' = ${sigmaNext} at step ${index}`);
  }
  return { sigma, sigmaNext, dt: sigmaNext - sigma };
}

/** x' = mean + std·ε, or the given x' (detached: the log-prob's gradient flows through the mean only). */
function nextFrom(input: FlowStepInput, mean: Tensor, std: number): Tensor {
  if (input.nextSample) return input.nextSample.detach();
  if (!input.noise) throw new Error('flow step: give either nextSample or noise');
  return add(mean, mul(input.noise, std)); // [B, D]
}

/** mean over D of −(x' − μ)²·scale + offset. [B] */
function squaredErrorLogProb(next: Tensor, mean: Tensor, scale: number, offset: number): Tensor {
  const error = square(sub(next, mean)); // [B, D]
  const perSample = meanOver(error, 1); // [B]
  return offset === 0 ? mul(perSample, -scale) : add(mul(perSample, -scale), offset);
}

/**
 * Flow-GRPO `sde` (Liu et al. 2025, `sde_step_with_logprob`): std_t = a·√(σ/(1−σ)) (with σ_1 in the
 * denominator at σ = 1, as the code does), μ = x·(1 + std_t²·dt/(2σ)) + v·(1 + std_t²·(1−σ)/(2σ))·dt,
 * x' = μ + std_t·√(−dt)·ε; log-prob is the full Gaussian log-density (constants kept), averaged.
 */
export const flowGrpoSdeStep: FlowStepFn = (input) => {
  const { sigma, dt } = stepSigmas(input);
  const a = input.noiseLevel;
  // The code replaces σ by σ_1 in 1 − σ when σ = 1, to keep the std finite at the first step.
  const denominatorSigma = sigma === 1 ? input.sigmas[1] : sigma;
  const stdT = a * Math.sqrt(sigma / (1 - denominatorSigma));
  const sampleScale = 1 + ((stdT * stdT) / (2 * sigma)) * dt;
  const velocityScale = (1 + (stdT * stdT * (1 - sigma)) / (2 * sigma)) * dt;
  const mean = add(mul(input.sample, sampleScale), mul(input.velocity, velocityScale)); // [B, D]
  const std = stdT * Math.sqrt(-dt);
  const next = nextFrom(input, mean, std);
  const logProb = squaredErrorLogProb(next, mean, 1 / (2 * std * std), -Math.log(std) - logSqrtTwoPi);
  return { nextSample: next, mean, std, logProb };
};

/**
 * Flow-GRPO `cps`, Coefficients-Preserving Sampling (Wang & Yu 2025, arXiv:2509.05952; the `cps`
 * branch of `sde_step_with_logprob`): std = σ'·sin(aπ/2), x̂0 = x − σv, x̂1 = x + (1−σ)v,
 * μ = x̂0·(1−σ') + x̂1·√(σ'² − std²), x' = μ + std·ε; log-prob = −mean (x' − μ)² (the code drops
 * every constant and the 1/(2std²) factor).
 */
export const flowGrpoCpsStep: FlowStepFn = (input) => {
  const { sigma, sigmaNext } = stepSigmas(input);
  const std = sigmaNext * Math.sin((input.noiseLevel * Math.PI) / 2);
  const predictedData = sub(input.sample, mul(input.velocity, sigma)); // x̂0 [B, D]
  const predictedNoise = add(input.sample, mul(input.velocity, 1 - sigma)); // x̂1 [B, D]
  const noiseScale = Math.sqrt(Math.max(0, sigmaNext * sigmaNext - std * std));
  const mean = add(mul(predictedData, 1 - sigmaNext), mul(predictedNoise, noiseScale)); // [B, D]
  const next = nextFrom(input, mean, std);
  return { nextSample: next, mean, std, logProb: squaredErrorLogProb(next, mean, 1, 0) };
};

/**
 * DanceGRPO's `flux_step` with `sde_solver` (Xue et al. 2025): μ = x + (σ'−σ)·v, x̂0 = x − σv,
 * score = −(x − (1−σ)·x̂0)/σ², μ += −½η²·score·(σ'−σ), std = η·√(σ−σ'), x' = μ + std·ε.
 * Log-prob = −mean (x' − μ)²/(2std²): the code's `− log std − log √(2π)` sits on a separate line
 * and is never added, so the effective log-prob has no constants; we reproduce that.
 */
export const danceGrpoStep: FlowStepFn = (input) => {
  const { sigma, dt } = stepSigmas(input);
  const eta = input.noiseLevel;
  const predictedData = sub(input.sample, mul(input.velocity, sigma)); // x̂0 [B, D]
  const score = mul(sub(input.sample, mul(predictedData, 1 - sigma)), -1 / (sigma * sigma)); // [B, D]
  const eulerMean = add(input.sample, mul(input.velocity, dt)); // [B, D]
  const mean = add(eulerMean, mul(score, -0.5 * eta * eta * dt)); // [B, D]
  const std = eta * Math.sqrt(-dt);
  const next = nextFrom(input, mean, std);
  return { nextSample: next, mean, std, logProb: squaredErrorLogProb(next, mean, 1 / (2 * std * std), 0) };
};

/** The Euler ODE step x' = x + v·dt: deterministic, so no log-prob (sampling and evaluation only). */
export const eulerOdeStep: FlowStepFn = (input) => {
  const { dt } = stepSigmas(input);
  const mean = add(input.sample, mul(input.velocity, dt)); // [B, D]
  return { nextSample: input.nextSample ? input.nextSample.detach() : mean, mean, std: 0, logProb: null };
};

/**
 * Closed-form KL(N(μ, s²I) ‖ N(μ_ref, s²I)) of two steps with the same std, averaged over D:
 * mean (μ − μ_ref)²/(2s²). [B]. Flow-GRPO's code divides by std_t² (without the √(−dt) of the `sde`
 * step), which is this value times −dt; we use the true KL of the step's Gaussians.
 */
export function flowStepKl(mean: Tensor, referenceMean: Tensor, std: number): Tensor {
  if (!(std > 0)) throw new Error(`flowStepKl: needs a positive std, got ${std} (the ODE step has none)`);
  return squaredErrorLogProb(mean, referenceMean, -1 / (2 * std * std), 0);
}

/**
 * The σ schedule of N steps: s_i = 1 − i/N, σ_i = shift·s/(1 + (shift − 1)·s) (SD3's time shift;
 * shift = 1 is the uniform schedule). σ_0 = 1, σ_N = 0.
 */
export function flowSigmas(steps: number, shift = 1): number[] {
  if (!Number.isInteger(steps) || steps < 1)
    throw new Error(`flowSigmas: steps must be a positive integer, got ${steps}`);
  if (!(shift > 0)) throw new Error(`flowSigmas: shift must be positive, got ${shift}`);
  return Array.from({ length: steps + 1 }, (_, i) => {
    const s = 1 - i / steps;
    return (shift * s) / (1 + (shift - 1) * s);
  });
}

/** The sampler steps by name (`ode` has no log-prob and cannot be trained with a policy loss). */
export const flowSteps: Registry<FlowStepFn> = createRegistry<FlowStepFn>('flow sampler step');
flowSteps.register('sde', flowGrpoSdeStep, {
  description:
    'Flow-GRPO SDE step: std = a·√(σ/(1−σ))·√(−dt), score-corrected mean; Gaussian log-prob averaged over pixels',
  citation: 'Liu et al. 2025, Flow-GRPO (arXiv:2505.05470), sde_step_with_logprob',
});
flowSteps.register('cps', flowGrpoCpsStep, {
  description: 'Coefficients-preserving step: std = σ′·sin(aπ/2); log-prob = −mean (x′−μ)²',
  citation: 'Wang & Yu 2025, Flow-CPS (arXiv:2509.05952); Flow-GRPO sde_type="cps"',
});
flowSteps.register('dance', danceGrpoStep, {
  description: 'DanceGRPO step: std = η·√Δσ with the score correction; log-prob = −mean (x′−μ)²/(2std²)',
  citation: 'Xue et al. 2025, DanceGRPO (arXiv:2505.07818), flux_step',
});
flowSteps.register('ode', eulerOdeStep, {
  description: 'Euler ODE step x′ = x + v·dt: deterministic, no log-prob (sampling only)',
  citation: 'Liu et al. 2022, rectified flow (arXiv:2209.03003)',
});
