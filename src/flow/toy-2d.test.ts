/**
 * The 2-D toy, seconds long: a flow pre-trained on four Gaussians in the plane (at (±0.7, ±0.7))
 * puts about a quarter of its samples in the rewarded region (the upper-right quadrant). Flow-GRPO (sde
 * steps, log-probs, ppo-clip), DanceGRPO (its step and per-sample timestep selection), GRPO-Guard (its
 * normalised ratio and step weights), TempFlow-GRPO (branching rollouts, noise-aware weights), BranchGRPO
 * (tree rollouts, tree advantages) and DiffusionNFT (ODE rollouts, no log-probs) each raise that share; the
 * same runs with the advantage sign flipped (an estimator returning −A; for BranchGRPO, whose advantages are
 * its tree's, the reward negated) lower it instead, so the rise comes from following the advantages, not
 * from any drift of training.
 */
import { describe, expect, it } from 'vitest';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { advantageEstimators, grpoAdvantage } from '../algorithms/index.js';
import { type FlowModel, type FlowModelConfig, copyFlowModel, initFlowModel } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import * as T from '../tensor/index.js';
import { nftStep } from './diffusion-nft.js';
import { type FlowPolicyObjective, flowGrpoStep } from './flow-grpo.js';
import { pretrainFlowModel } from './pretrain.js';
import { type SamplerOptions, finalImages, sampleTrajectory } from './sample.js';
import { tempFlowStep } from './tempflow-grpo.js';
import { branchGrpoStep, branchTreeDefaults } from './branch-grpo.js';

// −A of the grpo estimator: a deliberately wrong sign, to show the toy fails with it.
advantageEstimators.register(
  'test-flipped-grpo',
  (input) => {
    const result = grpoAdvantage(input);
    return { ...result, advantages: result.advantages.map((a) => -a) };
  },
  { description: 'test only: −A of grpo', citation: 'none' },
);

const config: FlowModelConfig = {
  modelType: 'flow-mlp',
  imageSize: 1,
  dimensions: 2,
  numClasses: 1,
  hiddenSize: 32,
  numBlocks: 2,
  timeFeatures: 16,
};

const inRegion = (point: Float32Array) => point[0] > 0 && point[1] > 0;
const score = (points: Float32Array[]) => ({
  total: Float32Array.from(points, (point) => (inRegion(point) ? 1 : 0)),
  components: {},
});

/** A flow on four equal Gaussians, pre-trained for a few hundred small steps. */
function pretrainedFourModes(): { model: FlowModel; random: T.Random } {
  const random = new T.Random(21);
  const model = initFlowModel(config, 21);
  const centres = [
    [0.7, 0.7],
    [-0.7, 0.7],
    [-0.7, -0.7],
    [0.7, -0.7],
  ];
  const points = Array.from({ length: 1024 }, (_, i) =>
    Float32Array.from(centres[i % 4], (c) => c + 0.08 * random.normal()),
  );
  pretrainFlowModel(
    model,
    { size: 1, images: points, labels: points.map(() => 0) },
    { steps: 250, batchSize: 64, learningRate: 3e-3 },
    21,
  );
  return { model, random };
}

function regionShare(model: FlowModel, sampler: SamplerOptions, random: T.Random): number {
  const points = finalImages(sampleTrajectory(model, Array<number>(256).fill(0), sampler, random));
  return points.filter(inRegion).length / points.length;
}

const optimizerFor = (model: FlowModel) =>
  new AdamW(
    [...model.parameters].map(([name, tensor]) => ({ name, tensor, decay: false })),
    { learningRate: 3e-3, weightDecay: 0 },
  );

function flowGrpoShares(
  advantageEstimator: string,
  dance = false,
  algorithm: FlowPolicyObjective = 'flow-grpo',
): { before: number; after: number } {
  const { model, random } = pretrainedFourModes();
  // DanceGRPO: its step (η = 0.3 as its code) and its per-sample timestep selection.
  const sampler = { sigmas: flowSigmas(8), steps: dance ? 'dance' : 'sde', noiseLevel: dance ? 0.3 : 0.7 };
  const context = { model, reference: null, optimizer: optimizerFor(model), score };
  const options = {
    groupSize: 16,
    sampler,
    trainFraction: 1,
    clipRange: 0.2,
    advantageClip: 5,
    klCoefficient: 0,
    advantageEstimator,
    innerSteps: 2,
    maxGradNorm: 1,
    timestepSelection: dance ? ('dance' as const) : ('first' as const),
    ...(dance ? { trainFraction: 0.6 } : {}),
    algorithm,
  };
  const before = regionShare(model, sampler, random);
  for (let step = 0; step < 10; step++)
    if (algorithm === 'tempflow-grpo') tempFlowStep(context, [0, 0, 0, 0], options, random);
    else flowGrpoStep(context, [0, 0, 0, 0], options, random);
  return { before, after: regionShare(model, sampler, random) };
}

function branchShares(advantageEstimator: string): { before: number; after: number } {
  const { model, random } = pretrainedFourModes();
  const sampler = { sigmas: flowSigmas(8), steps: 'dance', noiseLevel: 0.3 };
  const sign = advantageEstimator === 'test-flipped-grpo' ? -1 : 1;
  const signedScore = (points: Float32Array[]) => ({
    ...score(points),
    total: score(points).total.map((r) => sign * r),
  });
  const context = { model, reference: null, optimizer: optimizerFor(model), score: signedScore };
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
    branch: { ...branchTreeDefaults, splitPoints: [0, 2, 4, 6], noiseScale: 1, prunedDepths: [] }, // 16 leaves per prompt
  };
  const before = regionShare(model, sampler, random);
  for (let step = 1; step <= 10; step++) branchGrpoStep(context, [0, 0, 0, 0], options, random, { step, steps: 10 });
  return { before, after: regionShare(model, sampler, random) };
}

function nftShares(advantageEstimator: string): { before: number; after: number } {
  const { model, random } = pretrainedFourModes();
  const sampler = { sigmas: flowSigmas(8), steps: 'ode', noiseLevel: 0 };
  const context = { model, old: copyFlowModel(model), reference: null, optimizer: optimizerFor(model), score };
  const options = {
    groupSize: 16,
    sampler,
    trainFraction: 0.5,
    nftBeta: 1,
    advantageClip: 5,
    klCoefficient: 0,
    advantageEstimator,
    maxGradNorm: 1,
  };
  const before = regionShare(model, sampler, random);
  for (let step = 1; step <= 10; step++) nftStep(context, [0, 0, 0, 0], options, random, step);
  return { before, after: regionShare(model, sampler, random) };
}

describe('2-D toy: four Gaussians, a reward on the upper-right quadrant', () => {
  it('the flipped estimator really returns −A (the control below depends on it)', () => {
    const rewards = Float32Array.from([1, 0, 0, 0]);
    const flipped = advantageEstimators.get('test-flipped-grpo')({ rewards, groupSizes: 4 }).advantages;
    const right = grpoAdvantage({ rewards, groupSizes: 4 }).advantages;
    flipped.forEach((a, i) => expect(a).toBeCloseTo(-right[i], 6));
  });

  for (const [name, run] of [
    ['Flow-GRPO (sde)', (estimator: string) => flowGrpoShares(estimator)],
    ['DanceGRPO (dance step and timestep selection)', (estimator: string) => flowGrpoShares(estimator, true)],
    ['GRPO-Guard (sde)', (estimator: string) => flowGrpoShares(estimator, false, 'grpo-guard')],
    ['TempFlow-GRPO (branching, sde)', (estimator: string) => flowGrpoShares(estimator, false, 'tempflow-grpo')],
    ['BranchGRPO (tree, dance)', branchShares],
    ['DiffusionNFT (ode)', nftShares],
  ] as const) {
    it(`${name}: the share in the region rises from about ¼, and falls with the advantage sign flipped`, () => {
      const trained = run('grpo');
      expect(trained.before).toBeGreaterThan(0.1);
      expect(trained.before).toBeLessThan(0.4);
      expect(trained.after).toBeGreaterThan(trained.before + 0.3);
      const flipped = run('test-flipped-grpo');
      expect(flipped.before).toBe(trained.before); // same seed, same start
      expect(flipped.after).toBeLessThan(flipped.before - 0.1);
    });
  }
});
