/**
 * A small class-conditional rectified-flow model: v_θ(x_σ, σ, class) for flattened grey images,
 * with its own config.json and a safetensors checkpoint in the project's folder layout.
 *
 * Architecture, and why: an MLP with adaLN-Zero conditioning (DiT's conditioning without its
 * attention). On 14×14 MNIST digits (196 pixels) an MLP of ~0.5M parameters learns recognisable
 * digits in a few CPU minutes, while a DiT's patch attention would cost several times more per
 * sample for no gain at this size — and RL needs thousands of model calls per step (G samples ×
 * steps). Choices:
 * - input: x [B, D] → linear → h [B, H];
 * - condition c = MLP(sinusoidal(σ)) + classEmbedding[class], one vector per sample [B, H];
 * - each block: (shift, scale, gate) = linear(silu(c)); h += gate ⊙ W2·silu(W1·(rmsNorm(h)⊙(1+scale)+shift));
 *   the gate and the output layer start at zero (adaLN-Zero), so the untrained model is v = 0;
 * - output: rmsNorm(h)⊙(1+scale)+shift → linear → v [B, D].
 * Every op is an existing tensor op (linear, silu, rmsNorm, embedding, slice), each gradient-checked
 * in src/tensor/gradients.test.ts; flow-mlp.test.ts gradient-checks the whole forward.
 *
 * Is not: a sampler (src/flow/sample.ts) or a trainer. No classifier-free guidance (no null class).
 *
 * Legend: B = batch, D = pixels (imageSize², or `dimensions`), H = hiddenSize, F = timeFeatures.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { add, mul, silu } from '../tensor/elementwise.js';
import { rmsNorm } from '../tensor/fused.js';
import { linear } from '../tensor/ops.js';
import { embedding, slice } from '../tensor/primitives.js';
import { Random } from '../tensor/random.js';
import { Tensor, ones, parameter, tensor } from '../tensor/tensor.js';
import { makeDirectory, writeFileDurably } from './durable-files.js';
import { readJsonObject } from './json-file.js';
import { type StoredTensor, encodeSafetensors, readSafetensors } from './safetensors.js';

/** The model's shape; stored as config.json next to model.safetensors. */
export interface FlowModelConfig {
  /** Always 'flow-mlp': tells this folder from a language-model checkpoint. */
  modelType: 'flow-mlp';
  /** Side of the square grey image (14 = MNIST pooled 2×2: a quarter of the compute of 28). */
  imageSize: number;
  /** Number of classes the model is conditioned on (10 digits). */
  numClasses: number;
  /** Width of the hidden vector; 256 is enough for 14×14 digits. */
  hiddenSize: number;
  /** Residual adaLN blocks; 3 keeps a forward pass cheap for RL sampling. */
  numBlocks: number;
  /** Sinusoidal features of σ (half sines, half cosines). */
  timeFeatures: number;
  /**
   * D for data that is not a square image (a 2-D toy of points: 2); absent = imageSize². Lets the
   * same model and samplers run the seconds-long toys of the tests.
   */
  dimensions?: number;
}

/** D, the numbers in one sample: `dimensions` when given, else imageSize². */
export function flowDimensions(config: FlowModelConfig): number {
  return config.dimensions ?? config.imageSize * config.imageSize;
}

/** Defaults for a digits model. */
export const defaultFlowModelConfig: FlowModelConfig = {
  modelType: 'flow-mlp',
  imageSize: 14,
  numClasses: 10,
  hiddenSize: 256,
  numBlocks: 3,
  timeFeatures: 64,
};

/** A model: its config and its named parameters (the safetensors names). */
export interface FlowModel {
  config: FlowModelConfig;
  parameters: Map<string, Tensor>;
}

/** The parameter names and shapes a config implies, in a stable order. */
export function flowModelShapes(config: FlowModelConfig): Map<string, number[]> {
  const { hiddenSize: H, numClasses, timeFeatures: F } = config;
  const D = flowDimensions(config);
  const shapes = new Map<string, number[]>([
    ['input.weight', [H, D]],
    ['input.bias', [H]],
    ['time.0.weight', [H, F]],
    ['time.0.bias', [H]],
    ['time.1.weight', [H, H]],
    ['time.1.bias', [H]],
    ['class_embedding.weight', [numClasses, H]],
  ]);
  for (let block = 0; block < config.numBlocks; block++) {
    shapes.set(`blocks.${block}.modulation.weight`, [3 * H, H]);
    shapes.set(`blocks.${block}.modulation.bias`, [3 * H]);
    shapes.set(`blocks.${block}.mlp.0.weight`, [2 * H, H]);
    shapes.set(`blocks.${block}.mlp.0.bias`, [2 * H]);
    shapes.set(`blocks.${block}.mlp.1.weight`, [H, 2 * H]);
    shapes.set(`blocks.${block}.mlp.1.bias`, [H]);
  }
  shapes.set('final.modulation.weight', [2 * H, H]);
  shapes.set('final.modulation.bias', [2 * H]);
  shapes.set('output.weight', [D, H]);
  shapes.set('output.bias', [D]);
  return shapes;
}

// Start at v = 0 and identity blocks: the block gates and the output layer (adaLN-Zero, DiT).
const zeroInitialised = (name: string): boolean =>
  name.endsWith('.bias') || name.startsWith('output.') || /modulation\.weight$/.test(name);

/** A freshly initialised model: weights ~ N(0, 1/fanIn), adaLN-Zero gates and output at zero. */
export function initFlowModel(config: FlowModelConfig, seed: number): FlowModel {
  validateFlowModelConfig(config);
  const random = new Random(seed);
  const parameters = new Map<string, Tensor>();
  for (const [name, shape] of flowModelShapes(config)) {
    const size = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(size);
    if (name === 'class_embedding.weight') for (let i = 0; i < size; i++) values[i] = random.normal();
    else if (!zeroInitialised(name)) {
      const scale = 1 / Math.sqrt(shape[1]);
      for (let i = 0; i < size; i++) values[i] = random.normal() * scale;
    }
    parameters.set(name, parameter(values, shape, name));
  }
  return { config, parameters };
}

/** sin/cos features of σ·1000 at geometric frequencies (the DiT/ADM timestep embedding). [B, F] */
export function timeFeatures(sigmas: readonly number[], features: number): Tensor {
  const half = features / 2;
  const values = new Float32Array(sigmas.length * features);
  for (let b = 0; b < sigmas.length; b++) {
    for (let k = 0; k < half; k++) {
      const angle = sigmas[b] * 1000 * Math.exp((-Math.log(10000) * k) / half);
      values[b * features + k] = Math.sin(angle);
      values[b * features + half + k] = Math.cos(angle);
    }
  }
  return tensor(values, [sigmas.length, features]);
}

/** rmsNorm(h)·(1 + scale) + shift. [B, H] */
function modulate(h: Tensor, shift: Tensor, scale: Tensor, unit: Tensor): Tensor {
  return add(mul(rmsNorm(h, unit, 1e-6), add(scale, 1)), shift);
}

/** v_θ(x, σ, class): x [B, D], one σ and one class per row → velocity [B, D]. */
export function flowVelocity(
  model: FlowModel,
  x: Tensor,
  sigmas: readonly number[],
  classes: readonly number[],
): Tensor {
  const { config, parameters } = model;
  const p = (name: string): Tensor => parameters.get(name)!;
  const H = config.hiddenSize;
  const B = x.shape[0];
  if (x.rank !== 2 || x.shape[1] !== flowDimensions(config) || sigmas.length !== B || classes.length !== B) {
    throw new Error(
      `flowVelocity: x must be [B, ${flowDimensions(config)}] with B sigmas and classes; got [${x.shape}], ${sigmas.length} sigmas, ${classes.length} classes`,
    );
  }
  for (const label of classes)
    if (!Number.isInteger(label) || label < 0 || label >= config.numClasses)
      throw new Error(`flowVelocity: class ${label} is outside 0..${config.numClasses - 1}`);
  const unit = ones([H]);
  const time = linear(silu(linear(timeFeatures(sigmas, config.timeFeatures), p('time.0.weight'), p('time.0.bias'))), p('time.1.weight'), p('time.1.bias')); // prettier-ignore
  const condition = silu(add(time, embedding(p('class_embedding.weight'), classes))); // silu(c) [B, H]
  let h = linear(x, p('input.weight'), p('input.bias')); // [B, H]
  for (let block = 0; block < config.numBlocks; block++) {
    const prefix = `blocks.${block}`;
    const modulation = linear(condition, p(`${prefix}.modulation.weight`), p(`${prefix}.modulation.bias`)); // [B, 3H]
    const shift = slice(modulation, 1, 0, H); // [B, H]
    const scale = slice(modulation, 1, H, 2 * H);
    const gate = slice(modulation, 1, 2 * H, 3 * H);
    const inner = silu(linear(modulate(h, shift, scale, unit), p(`${prefix}.mlp.0.weight`), p(`${prefix}.mlp.0.bias`))); // [B, 2H]
    h = add(h, mul(gate, linear(inner, p(`${prefix}.mlp.1.weight`), p(`${prefix}.mlp.1.bias`)))); // [B, H]
  }
  const final = linear(condition, p('final.modulation.weight'), p('final.modulation.bias')); // [B, 2H]
  const out = modulate(h, slice(final, 1, 0, H), slice(final, 1, H, 2 * H), unit);
  return linear(out, p('output.weight'), p('output.bias')); // [B, D]
}

/** Throws, naming the field, when a config cannot describe a model. */
export function validateFlowModelConfig(config: FlowModelConfig): void {
  if (config.modelType !== 'flow-mlp')
    throw new Error(`flow model config: modelType must be "flow-mlp", got "${String(config.modelType)}"`);
  for (const field of ['imageSize', 'numClasses', 'hiddenSize', 'numBlocks', 'timeFeatures'] as const) {
    const value = config[field];
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`flow model config: ${field} must be a positive integer, got ${value}`);
  }
  if (config.dimensions !== undefined && !(Number.isInteger(config.dimensions) && config.dimensions >= 1))
    throw new Error(`flow model config: dimensions must be a positive integer, got ${config.dimensions}`);
  if (config.timeFeatures % 2 !== 0)
    throw new Error(`flow model config: timeFeatures must be even, got ${config.timeFeatures}`);
}

/** Writes config.json and model.safetensors into `directory` (created if needed). */
export function saveFlowModel(model: FlowModel, directory: string): void {
  makeDirectory(directory);
  const tensors = new Map<string, StoredTensor>();
  for (const [name, value] of model.parameters) tensors.set(name, { shape: value.shape, data: value.data });
  writeFileDurably(join(directory, 'model.safetensors'), encodeSafetensors(tensors, { metadata: { format: 'pt' } }));
  writeFileDurably(join(directory, 'config.json'), JSON.stringify(model.config, null, 2) + '\n');
}

/** Reads a folder written by saveFlowModel; every tensor is checked by name and shape. */
export function loadFlowModel(directory: string): FlowModel {
  const configFile = join(directory, 'config.json');
  if (!existsSync(configFile)) throw new Error(`no flow model in ${directory}: config.json is missing`);
  const config = { ...defaultFlowModelConfig, ...readJsonObject(configFile) } as FlowModelConfig;
  validateFlowModelConfig(config);
  const stored = readSafetensors(join(directory, 'model.safetensors'));
  const parameters = new Map<string, Tensor>();
  for (const [name, shape] of flowModelShapes(config)) {
    const found = stored.get(name);
    if (!found) throw new Error(`${directory}/model.safetensors: tensor "${name}" is missing`);
    if (found.shape.join(',') !== shape.join(','))
      throw new Error(
        `${directory}/model.safetensors: "${name}" has shape [${found.shape}], config implies [${shape}]`,
      );
    parameters.set(name, parameter(found.data, shape, name));
  }
  return { config, parameters };
}

/** A frozen copy (the KL reference, the pre-RL snapshot): same values, no gradients. */
export function copyFlowModel(model: FlowModel): FlowModel {
  const parameters = new Map<string, Tensor>();
  for (const [name, value] of model.parameters) parameters.set(name, new Tensor(value.data.slice(), value.shape));
  return { config: { ...model.config }, parameters };
}
