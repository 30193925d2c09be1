/**
 * AdamW (Loshchilov & Hutter, decoupled weight decay) with bias correction, matching
 * torch.optim.AdamW step for step, plus a serialisable state for checkpoints and resume.
 *
 * Is not: a general optimiser framework. Parameters are named tensors; each may opt out of weight
 * decay (norm weights and biases usually do), decided by the caller when it builds the groups.
 * The loop in `step` is the spec; a backend with the optional `adamwUpdate` kernel runs that instead.
 */
import { getBackend, type Tensor } from '../tensor/index.js';

export interface AdamWOptions {
  learningRate: number;
  beta1?: number;
  beta2?: number;
  epsilon?: number;
  weightDecay?: number;
}

export interface OptimizedParameter {
  name: string;
  tensor: Tensor;
  /** False for parameters exempt from weight decay. */
  decay: boolean;
}

export interface AdamWState {
  step: number;
  /** First and second moments per parameter name. */
  moments: Record<string, { first: Float32Array; second: Float32Array }>;
}

export class AdamW {
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
  learningRate: number;
  stepCount = 0;
  private readonly first = new Map<string, Float32Array>();
  private readonly second = new Map<string, Float32Array>();

  constructor(
    readonly parameters: OptimizedParameter[],
    options: AdamWOptions,
  ) {
    this.learningRate = options.learningRate;
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.epsilon = options.epsilon ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0.01;
    const names = new Set<string>();
    for (const { name, tensor } of parameters) {
      if (names.has(name)) throw new Error(`AdamW: parameter name "${name}" appears twice`);
      names.add(name);
      this.first.set(name, new Float32Array(tensor.size));
      this.second.set(name, new Float32Array(tensor.size));
    }
  }

  /** One update from the parameters' accumulated `.grad` (parameters without a gradient are skipped). */
  step(): void {
    this.stepCount++;
    const t = this.stepCount;
    const lr = this.learningRate;
    const biasCorrection1 = 1 - Math.pow(this.beta1, t);
    const biasCorrection2Sqrt = Math.sqrt(1 - Math.pow(this.beta2, t));
    const stepSize = lr / biasCorrection1;
    const backend = getBackend();
    for (const { name, tensor, decay } of this.parameters) {
      if (!tensor.grad) continue;
      const p = tensor.data;
      const g = tensor.grad.data;
      const m = this.first.get(name)!;
      const v = this.second.get(name)!;
      const decayFactor = decay ? 1 - lr * this.weightDecay : 1;
      if (backend.adamwUpdate) {
        const scalars = {
          beta1: this.beta1,
          beta2: this.beta2,
          epsilon: this.epsilon,
          stepSize,
          biasCorrection2Sqrt,
          decayFactor,
        };
        backend.adamwUpdate(p, g, m, v, scalars);
        continue;
      }
      for (let i = 0; i < p.length; i++) {
        const gi = g[i];
        m[i] = this.beta1 * m[i] + (1 - this.beta1) * gi;
        v[i] = this.beta2 * v[i] + (1 - this.beta2) * gi * gi;
        const denominator = Math.sqrt(v[i]) / biasCorrection2Sqrt + this.epsilon;
        p[i] = p[i] * decayFactor - (stepSize * m[i]) / denominator;
      }
    }
  }

  zeroGrad(): void {
    for (const { tensor } of this.parameters) tensor.grad = null;
  }

  getState(): AdamWState {
    const moments: AdamWState['moments'] = {};
    for (const { name } of this.parameters)
      moments[name] = { first: this.first.get(name)!.slice(), second: this.second.get(name)!.slice() };
    return { step: this.stepCount, moments };
  }

  setState(state: AdamWState): void {
    for (const { name, tensor } of this.parameters) {
      const saved = state.moments[name];
      if (!saved) throw new Error(`AdamW.setState: no saved moments for parameter "${name}"`);
      if (saved.first.length !== tensor.size || saved.second.length !== tensor.size) {
        throw new Error(
          `AdamW.setState: saved moments for "${name}" have ${saved.first.length} elements, the parameter has ${tensor.size}`,
        );
      }
      this.first.get(name)!.set(saved.first);
      this.second.get(name)!.set(saved.second);
    }
    this.stepCount = state.step;
  }
}
