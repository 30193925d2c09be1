/**
 * Flow-GRPO: the batched loss and its parameter gradients equal the direct composition of the parts
 * (one model call and one sampler step per (step, sample), the ppo-clip surrogate −min(ρA, clip(ρ)A),
 * the token mean, β·KL of step means); the trained steps; refusals; and a seconds-long 1-D toy whose
 * reward (the fraction of samples landing on the right-hand mode) rises under Flow-GRPO.
 */
import { describe, expect, it } from 'vitest';
import { flowSigmas, flowStepKl, flowSteps } from '../algorithms/flow-steps.js';
import { type FlowModel, type FlowModelConfig, copyFlowModel, flowVelocity, initFlowModel } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import * as T from '../tensor/index.js';
import { danceTimestepSelection, flowGrpoLoss, flowGrpoStep, trainedSteps } from './flow-grpo.js';
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

function randomModel(seed: number): FlowModel {
  const model = initFlowModel(tiny, seed);
  const random = new T.Random(seed + 1);
  for (const value of model.parameters.values())
    for (let i = 0; i < value.size; i++) value.data[i] = random.normal() * 0.4;
  return model;
}

const row = (x: T.Tensor, b: number) => T.slice(x, 0, b, b + 1); // [1, D]

describe('Flow-GRPO loss = the direct composition of its parts', () => {
  // Every sample at steps 0–2 (Flow-GRPO), or a subset of samples per step (DanceGRPO's selection).
  const cases: { stepName: string; steps: number[]; samples?: number[][] }[] = [
    ...['sde', 'cps', 'dance'].map((stepName) => ({ stepName, steps: [0, 1, 2] })),
    {
      stepName: 'dance',
      steps: [0, 2],
      samples: [
        [0, 3],
        [1, 2, 3],
      ],
    },
  ];
  for (const { stepName, steps, samples } of cases) {
    it(`${stepName}${samples ? ', samples chosen per step' : ''}: loss and every parameter gradient`, () => {
      const model = randomModel(3);
      const reference = copyFlowModel(randomModel(4));
      const sampler = { sigmas: flowSigmas(4, 2), steps: stepName, noiseLevel: 0.7 };
      const trajectory = sampleTrajectory(model, [0, 0, 1, 1], sampler, new T.Random(5));
      // Shift the stored log-probs so ratios spread around 1 and the clip (ε = 0.05) binds for some pairs.
      trajectory.logProbs = trajectory.logProbs.map(
        (values, j) => values && values.map((v, b) => v + 0.04 * (b - 1.5) + 0.02 * j),
      );
      const advantages = Float32Array.from([1.5, -0.5, 0.7, -2]);
      const options = { sampler, clipRange: 0.05, klCoefficient: 0.3 };
      const batched = flowGrpoLoss(model, reference, { trajectory, steps, samples, advantages }, options);
      batched.loss.backward();
      const batchedGradients = new Map([...model.parameters].map(([name, value]) => [name, value.grad!.toArray()]));
      for (const value of model.parameters.values()) value.grad = null;

      const step = flowSteps.get(stepName);
      let total: T.Tensor = T.scalar(0);
      const rowsAt = steps.map((_, k) => samples?.[k] ?? [0, 1, 2, 3]);
      const pairs = rowsAt.flat().length;
      for (const [k, j] of steps.entries()) {
        for (const b of rowsAt[k]) {
          const input = {
            sample: row(trajectory.states[j], b),
            sigmas: sampler.sigmas,
            index: j,
            noiseLevel: 0.7,
            nextSample: row(trajectory.states[j + 1], b),
          };
          const classes = [trajectory.classes[b]];
          const result = step({ ...input, velocity: flowVelocity(model, input.sample, [sampler.sigmas[j]], classes) });
          const ratio = T.exp(T.sub(result.logProb!, trajectory.logProbs[j]![b]));
          const A = advantages[b];
          const surrogate = T.neg(T.minimum(T.mul(ratio, A), T.mul(T.clamp(ratio, 0.95, 1.05), A)));
          const referenceMean = T.noGrad(
            () =>
              step({ ...input, velocity: flowVelocity(reference, input.sample, [sampler.sigmas[j]], classes) }).mean,
          );
          const kl = flowStepKl(result.mean, referenceMean, result.std);
          total = T.add(total, T.add(T.mul(T.sum(surrogate), 1 / pairs), T.mul(T.sum(kl), 0.3 / pairs)));
        }
      }
      expect(batched.loss.item()).toBeCloseTo(total.item(), 5);
      if (!samples) expect(batched.metrics.clipFraction).toBeGreaterThan(0); // the clip binds somewhere: its branch is exercised
      total.backward();
      for (const [name, value] of model.parameters) {
        const direct = value.grad!.toArray();
        const fromBatch = batchedGradients.get(name)!;
        direct.forEach((g, i) =>
          expect(Math.abs(g - fromBatch[i]), `${name}[${i}]`).toBeLessThan(1e-5 + 1e-4 * Math.abs(g)),
        );
      }
    });
  }
});

describe('Flow-GRPO parts', () => {
  it('trains the first ⌊N·fraction⌋ steps, at least one', () => {
    expect(trainedSteps(10, 0.6)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(trainedSteps(10, 0.01)).toEqual([0]);
    expect(() => trainedSteps(10, 0)).toThrow(/trainFraction/);
  });
  it("DanceGRPO's selection: per sample its own ⌊(N−1)·f⌋ distinct steps, never the last, uniform over the rest", () => {
    const random = new T.Random(7);
    const B = 900;
    const { steps, samples } = danceTimestepSelection(10, B, 0.6, random);
    expect(steps).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]); // step 9 (the last) is never trained
    const perSample = new Map<number, number[]>();
    steps.forEach((step, k) => samples[k].forEach((b) => perSample.set(b, [...(perSample.get(b) ?? []), step])));
    expect([...perSample.values()].every((chosen) => chosen.length === 5)).toBe(true); // ⌊9·0.6⌋
    expect(new Set([...perSample.values()].map((chosen) => chosen.join())).size).toBeGreaterThan(50); // not one shared set
    for (const rows of samples) expect(Math.abs(rows.length - (B * 5) / 9)).toBeLessThan(60); // ≈ 500 each (σ ≈ 15)
    expect(danceTimestepSelection(10, 3, 0.01, random).samples.flat().length).toBe(3); // at least one step each
    expect(() => danceTimestepSelection(1, 3, 1, random)).toThrow(/at least 2 sampler steps/);
  });

  it('refuses to train an ODE step and KL without a reference', () => {
    const model = randomModel(1);
    const sampler = { sigmas: flowSigmas(2), steps: 'ode', noiseLevel: 0.7 };
    const trajectory = sampleTrajectory(model, [0], sampler, new T.Random(1));
    const batch = { trajectory, steps: [0], advantages: Float32Array.from([1]) };
    expect(() => flowGrpoLoss(model, null, batch, { sampler, clipRange: 0.1, klCoefficient: 0 })).toThrow(
      /no log-prob/,
    );
    const sde = { ...sampler, steps: 'sde' };
    const sdeBatch = { ...batch, trajectory: sampleTrajectory(model, [0], sde, new T.Random(1)) };
    expect(() => flowGrpoLoss(model, null, sdeBatch, { sampler: sde, clipRange: 0.1, klCoefficient: 0.1 })).toThrow(
      /reference model/,
    );
  });
});

describe('Flow-GRPO learns on a 1-D toy', () => {
  it('moves samples of a two-mode flow onto the rewarded mode', () => {
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
    // Two equal modes at ±0.8: a pre-trained flow puts about half its samples on each.
    const data = Array.from({ length: 512 }, (_, i) => Float32Array.of((i % 2 ? 0.8 : -0.8) + 0.05 * random.normal()));
    pretrainFlowModel(
      model,
      { size: 1, images: data, labels: data.map(() => 0) },
      { steps: 150, batchSize: 64, learningRate: 3e-3 },
      11,
    );
    const sampler = { sigmas: flowSigmas(8), steps: 'sde', noiseLevel: 0.7 };
    const rightShare = (images: Float32Array[]) => images.filter((image) => image[0] > 0).length / images.length;
    const score = (images: Float32Array[]) => ({
      total: Float32Array.from(images, (image) => (image[0] > 0 ? 1 : 0)),
      components: {},
    });
    const context = {
      model,
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
      trainFraction: 1,
      clipRange: 0.2,
      advantageClip: 5,
      klCoefficient: 0,
      advantageEstimator: 'grpo',
      innerSteps: 2,
      maxGradNorm: 1,
    };
    const measure = () =>
      rightShare(
        sampleTrajectory(model, Array<number>(128).fill(0), sampler, random)
          .states[8].toArray()
          .map((v) => Float32Array.of(v)),
      );
    const before = measure();
    for (let step = 0; step < 8; step++) flowGrpoStep(context, [0, 0, 0, 0], options, random);
    const after = measure();
    expect(before).toBeGreaterThan(0.25);
    expect(before).toBeLessThan(0.75);
    expect(after).toBeGreaterThan(before + 0.3);
  });
});
