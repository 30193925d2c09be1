/**
 * LoRA adapters (Hu et al. 2021) on the transformer's linear layers: y = W x + b + s·B(A x) with
 * A [r, in], B [out, r] and s = alpha / r (rsLoRA: alpha / √r). A starts as PEFT's
 * kaiming_uniform_(a=√5), which is uniform(±1/√in) since gain √(2/(1+5)) · √3 / √in = 1/√in; B
 * starts at zero, so a fresh adapter leaves the model's output unchanged.
 *
 * Is not: file I/O (adapter-files.ts writes and reads PEFT's adapter_config.json and
 * adapter_model.safetensors) or the transformer (which looks up an adapter per linear here).
 */
import {
  HalfMatrix,
  linear,
  lowRankLinear,
  Random,
  swigluLowRankLinear,
  tensor,
  type LowRankUpdate,
  type RecomputedInput,
  type Tensor,
} from '../tensor/index.js';
import type { ModelConfig } from './config.js';
import type { StoredTensor } from './safetensors.js';

/** The linear layers of a decoder layer by PEFT's short name, and the HF module that holds each. */
export const LORA_MODULES = {
  q_proj: 'self_attn',
  k_proj: 'self_attn',
  v_proj: 'self_attn',
  o_proj: 'self_attn',
  gate_proj: 'mlp',
  up_proj: 'mlp',
  down_proj: 'mlp',
} as const;
export type LoraModuleName = keyof typeof LORA_MODULES;

export interface LoraSettings {
  rank: number;
  alpha: number;
  /** Short module names (q_proj, ...); 'all-linear' is expanded by resolveTargetModules. */
  targetModules: LoraModuleName[];
  /** rsLoRA scaling alpha/√rank instead of alpha/rank. */
  rsLora: boolean;
}

/** One adapted linear: A [r, in], B [out, r]. */
export interface LoraPair {
  a: Tensor;
  b: Tensor;
}

/** 'all-linear' (as PEFT, every projection but lm_head) or an explicit list, in a stable order. */
export function resolveTargetModules(targetModules: string | readonly string[]): LoraModuleName[] {
  const all = Object.keys(LORA_MODULES) as LoraModuleName[];
  if (targetModules === 'all-linear') return all;
  if (typeof targetModules === 'string')
    throw new Error(`lora.targetModules: "${targetModules}" is neither 'all-linear' nor a list of module names`);
  for (const name of targetModules)
    if (!all.includes(name as LoraModuleName))
      throw new Error(`lora.targetModules: unknown module "${name}"; known: all-linear, ${all.join(', ')}`);
  return all.filter((name) => targetModules.includes(name));
}

/** The [out, in] shape of a module's base weight in a model of this config. */
function moduleShape(config: ModelConfig, module: LoraModuleName): [number, number] {
  const { hiddenSize: H, intermediateSize: I, headDim: D, numHeads, numKeyValueHeads } = config;
  const shapes: Record<LoraModuleName, [number, number]> = {
    q_proj: [numHeads * D, H],
    k_proj: [numKeyValueHeads * D, H],
    v_proj: [numKeyValueHeads * D, H],
    o_proj: [H, numHeads * D],
    gate_proj: [I, H],
    up_proj: [I, H],
    down_proj: [H, I],
  };
  return shapes[module];
}

/** The adapters of a whole model, keyed by the HF module path (model.layers.0.self_attn.q_proj). */
export class LoraAdapters {
  readonly scaling: number;

  constructor(
    readonly settings: LoraSettings,
    readonly pairs: Map<string, LoraPair>,
  ) {
    this.scaling = settings.rsLora ? settings.alpha / Math.sqrt(settings.rank) : settings.alpha / settings.rank;
  }

  /** Every adapted module of every layer, A and B shaped for this config. */
  static modulePaths(config: ModelConfig, settings: LoraSettings): Map<string, { A: number[]; B: number[] }> {
    const paths = new Map<string, { A: number[]; B: number[] }>();
    for (let layer = 0; layer < config.numLayers; layer++) {
      for (const module of settings.targetModules) {
        const [out, inputs] = moduleShape(config, module);
        paths.set(`model.layers.${layer}.${LORA_MODULES[module]}.${module}`, {
          A: [settings.rank, inputs],
          B: [out, settings.rank],
        });
      }
    }
    return paths;
  }

  /** Fresh adapters: A ~ uniform(±1/√in) drawn in module order from `seed`, B = 0. */
  static create(config: ModelConfig, settings: LoraSettings, seed: number): LoraAdapters {
    const random = new Random(seed);
    const pairs = new Map<string, LoraPair>();
    for (const [path, shapes] of LoraAdapters.modulePaths(config, settings)) {
      const bound = 1 / Math.sqrt(shapes.A[1]);
      const a = new Float32Array(shapes.A[0] * shapes.A[1]);
      for (let i = 0; i < a.length; i++) a[i] = (random.uniform() * 2 - 1) * bound;
      pairs.set(path, {
        a: tensor(a, shapes.A, { requiresGrad: true }),
        b: tensor(new Float32Array(shapes.B[0] * shapes.B[1]), shapes.B, { requiresGrad: true }),
      });
    }
    const adapters = new LoraAdapters(settings, pairs);
    for (const [name, parameter] of adapters.namedParameters()) parameter.name = name;
    return adapters;
  }

  /** [PEFT tensor name, tensor] of every A and B: base_model.model.<module path>.lora_A.weight. */
  namedParameters(): [string, Tensor][] {
    return [...this.pairs].flatMap(([path, { a, b }]): [string, Tensor][] => [
      [peftTensorName(path, 'A'), a],
      [peftTensorName(path, 'B'), b],
    ]);
  }

  /** The tensors as adapter_model.safetensors stores them (shares memory). */
  toStoredTensors(): Map<string, StoredTensor> {
    return new Map(
      this.namedParameters().map(([name, parameter]) => [name, { shape: [...parameter.shape], data: parameter.data }]),
    );
  }

  /** Copies saved tensors (PEFT names) into these adapters, checking that each is present with its shape. */
  load(tensors: Map<string, StoredTensor>, source: string): void {
    for (const [name, parameter] of this.namedParameters()) {
      const stored = tensors.get(name);
      if (!stored) throw new Error(`${source}: missing adapter tensor "${name}"`);
      if (stored.shape.join(',') !== parameter.shape.join(','))
        throw new Error(
          `${source}: adapter tensor "${name}" has shape [${stored.shape.join(', ')}], expected [${parameter.shape.join(', ')}]`,
        );
      parameter.data.set(stored.data);
    }
  }

  /** Base tensors with W + s·B·A for every adapted module (float64 sums; new arrays, the input is untouched). */
  mergeInto(base: Map<string, StoredTensor>): Map<string, StoredTensor> {
    const merged = new Map(base);
    for (const [path, { a, b }] of this.pairs) {
      const name = `${path}.weight`;
      const weight = base.get(name);
      if (!weight) throw new Error(`merge: the base model has no "${name}"`);
      const [out, inputs] = weight.shape;
      const rank = a.shape[0];
      const data = new Float32Array(weight.data);
      for (let row = 0; row < out; row++)
        for (let column = 0; column < inputs; column++) {
          let update = 0;
          for (let k = 0; k < rank; k++) update += b.data[row * rank + k] * a.data[k * inputs + column];
          data[row * inputs + column] = weight.data[row * inputs + column] + this.scaling * update;
        }
      merged.set(name, { shape: [out, inputs], data });
    }
    return merged;
  }
}

/** PEFT's name of a module's A or B tensor in adapter_model.safetensors. */
export function peftTensorName(path: string, which: 'A' | 'B'): string {
  return `base_model.model.${path}.lora_${which}.weight`;
}

/**
 * x Wᵀ + b, plus (s·x Aᵀ) Bᵀ when the linear has an adapter, as the fused lowRankLinear: the low-rank
 * path never forms B·A, and backward keeps only x and the rank-wide s·x Aᵀ, not the out-wide update.
 * A bfloat16 base weight (HalfMatrix), or an input recomputed in backward (`recomputed`, a selective
 * forward's RMSNorm output, with or without an adapter), goes through lowRankLinear too.
 */
export function linearWithAdapter(
  x: Tensor,
  weight: Tensor | HalfMatrix,
  bias: Tensor | null,
  adapter: LoraPair | null,
  scaling: number,
  dropout?: LowRankUpdate['dropout'],
  recomputed?: RecomputedInput,
): Tensor {
  if (!adapter && !(weight instanceof HalfMatrix) && !recomputed) return linear(x, weight, bias);
  const update = adapter ? { a: adapter.a, b: adapter.b, scaling, dropout } : null;
  return lowRankLinear(x, weight, bias, update, recomputed);
}

/**
 * linearWithAdapter(swiglu(gate, up), ...) for the MLP's down_proj in a selective forward:
 * swigluLowRankLinear, which does not keep swiglu(gate, up) for backward but recomputes it (same
 * values and gradients), with or without an adapter, over a float32 (trained) or bfloat16 (frozen) W.
 */
export function swigluLinearWithAdapter(
  gate: Tensor,
  up: Tensor,
  weight: Tensor | HalfMatrix,
  bias: Tensor | null,
  adapter: LoraPair | null,
  scaling: number,
  dropout?: LowRankUpdate['dropout'],
): Tensor {
  return swigluLowRankLinear(gate, up, weight, bias, adapter ? { a: adapter.a, b: adapter.b, scaling, dropout } : null);
}

/** A 32-bit hash (FNV-1a) of a module path, so each layer's each module gets its own dropout mask. */
export function moduleSeed(path: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) hash = Math.imul(hash ^ path.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}
