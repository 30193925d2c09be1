/**
 * DiffusionNFT: the loss equals its formula written out per row in plain numbers; r and the old
 * policy's decay by hand; and the 1-D two-mode toy moves onto the rewarded mode.
 */
import { describe, expect, it } from 'vitest';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { type FlowModelConfig, copyFlowModel, flowVelocity, initFlowModel } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import * as T from '../tensor/index.js';
import { nftLoss, nftStep, oldPolicyDecay, optimalityWeights } from './diffusion-nft.js';
import { pretrainFlowModel } from './pretrain.js';
import { sampleTrajectory } from './sample.js';

const tiny: FlowModelConfig = {
  modelType: 'flow-mlp',
  imageSize: 2,
  numClasses: 2,
  hiddenSize: 8,
  numBlocks: 1,
  timeFeatures: 4,
};

function randomModel(seed: number) {
  const model = initFlowModel(tiny, seed);
  const random = new T.Random(seed + 1);
  for (const value of model.parameters.values())
    for (let i = 0; i < value.size; i++) value.data[i] = random.normal() * 0.4;
  return model;
}

describe('DiffusionNFT parts', () => {
  it('r = clamp(clip(A, ±C)/C/2 + ½, 0, 1) and d = min(0.001·step, 0.5)', () => {
    expect(Array.from(optimalityWeights([0, 5, -5, 10, 2.5], 5))).toEqual([0.5, 1, 0, 1, 0.75]);
    expect([0, 100, 700].map(oldPolicyDecay)).toEqual([0, 0.1, 0.5]);
  });

  it('the loss is C·mean (r·L⁺ + (1−r)·L⁻)/β + k·mean (v − v_ref)², written out per row', () => {
    const model = randomModel(1);
    const old = copyFlowModel(randomModel(2));
    const reference = copyFlowModel(randomModel(3));
    const random = new T.Random(4);
    const R = 3;
    const batch = {
      images: T.randomNormal([R, 4], random),
      noise: T.randomNormal([R, 4], random),
      sigmas: [0.9, 0.5, 0.2],
      classes: [0, 1, 1],
      optimality: Float32Array.from([1, 0.25, 0]),
    };
    const options = { nftBeta: 0.5, advantageClip: 5, klCoefficient: 0.1 };
    const { loss } = nftLoss(model, old, reference, batch, options);
    let expected = 0;
    let kl = 0;
    for (let r = 0; r < R; r++) {
      const s = batch.sigmas[r];
      const x0 = batch.images.toArray().slice(r * 4, r * 4 + 4);
      const xs = x0.map((x, d) => (1 - s) * x + s * batch.noise.data[r * 4 + d]);
      const at = (m: typeof model) => flowVelocity(m, T.tensor(xs, [1, 4]), [s], [batch.classes[r]]).toArray();
      const [v, vOld, vRef] = [at(model), at(old), at(reference)];
      const error = (vi: number[]) => {
        const diff = vi.map((value, d) => xs[d] - s * value - x0[d]);
        const weight = Math.max(1e-5, diff.reduce((a, b) => a + Math.abs(b), 0) / 4);
        return diff.reduce((a, b) => a + b * b, 0) / 4 / weight;
      };
      const positive = error(v.map((value, d) => 0.5 * value + 0.5 * vOld[d]));
      const negative = error(v.map((value, d) => 1.5 * vOld[d] - 0.5 * value));
      const q = batch.optimality[r];
      expected += (5 * (q * positive + (1 - q) * negative)) / 0.5 / R;
      kl += v.reduce((a, value, d) => a + (value - vRef[d]) ** 2, 0) / 4 / R;
    }
    expect(loss.item()).toBeCloseTo(expected + 0.1 * kl, 4);
    expect(() => nftLoss(model, old, null, batch, options)).toThrow(/reference model/);
  });
});

describe('DiffusionNFT learns on a 1-D toy', () => {
  it('moves samples of a two-mode flow onto the rewarded mode with the ODE sampler', () => {
    const config: FlowModelConfig = {
      modelType: 'flow-mlp',
      imageSize: 1,
      numClasses: 1,
      hiddenSize: 32,
      numBlocks: 2,
      timeFeatures: 16,
    };
    const random = new T.Random(11);
    const model = initFlowModel(config, 11);
    const data = Array.from({ length: 512 }, (_, i) => Float32Array.of((i % 2 ? 0.8 : -0.8) + 0.05 * random.normal()));
    pretrainFlowModel(
      model,
      { size: 1, images: data, labels: data.map(() => 0) },
      { steps: 150, batchSize: 64, learningRate: 3e-3 },
      11,
    );
    const sampler = { sigmas: flowSigmas(8), steps: 'ode', noiseLevel: 0 };
    const measure = () => {
      const x = sampleTrajectory(model, Array<number>(128).fill(0), sampler, random).states[8].toArray();
      return x.filter((value) => value > 0).length / x.length;
    };
    const score = (images: Float32Array[]) => ({
      total: Float32Array.from(images, (image) => (image[0] > 0 ? 1 : 0)),
      components: {},
    });
    const context = {
      model,
      old: copyFlowModel(model),
      reference: null,
      optimizer: new AdamW(
        [...model.parameters].map(([name, tensor]) => ({ name, tensor, decay: false })),
        { learningRate: 3e-3, weightDecay: 0 },
      ),
      score,
    };
    const options = {
      groupSize: 16,
      sampler,
      trainFraction: 0.5,
      nftBeta: 1,
      advantageClip: 5,
      klCoefficient: 0,
      advantageEstimator: 'grpo',
      maxGradNorm: 1,
    };
    const before = measure();
    for (let step = 1; step <= 8; step++) nftStep(context, [0, 0, 0, 0], options, random, step);
    const after = measure();
    expect(before).toBeGreaterThan(0.25);
    expect(before).toBeLessThan(0.75);
    expect(after).toBeGreaterThan(before + 0.3);
  });
});
