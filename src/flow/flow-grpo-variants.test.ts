/**
 * GRPO-Guard and TempFlow-GRPO against the float64 PyTorch reference (scripts/reference/flow_grpo_variants.py
 * → test/fixtures/flow/grpo-variants.json, written from verl-omni's GRPOGuardLoss and TempFlow-GRPO's
 * train_sd3_pr.py): pairObjective + ppo-clip give the per-step loss and its gradient in the velocity; the
 * branch points; a Guard and a TempFlow step through flowGrpoLoss equal the direct per-pair composition; and
 * BranchGRPO's tree advantages (same reference, from the authors' code) and tree rollout.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { flowGrpoSdeStep, flowSigmas, flowSteps } from '../algorithms/flow-steps.js';
import { ppoClipLoss } from '../algorithms/policy-losses.js';
import { type FlowModel, flowVelocity, initFlowModel } from '../model/flow-mlp.js';
import * as T from '../tensor/index.js';
import { testFixture } from '../../test/helpers/fixtures.js';
import { type FlowPolicyObjective, flowGrpoLoss, pairObjective } from './flow-grpo.js';
import { sampleTrajectory } from './sample.js';
import { tempFlowBranchSteps } from './tempflow-grpo.js';
import {
  branchAdvantages,
  branchTreeDefaults,
  checkBranchTree,
  defaultBranchTree,
  growTrees,
  keptEdges,
} from './branch-grpo.js';

interface Result {
  loss: number;
  ratio: number[];
  gradient: number[];
  clipped: number;
}
interface Case {
  index: number;
  x: number[];
  v: number[];
  next: number[];
  oldLogProb: number[];
  oldMean: number[];
  advantages: number[];
  dt: number;
  results: Record<FlowPolicyObjective, Result>;
}
const fixture = JSON.parse(readFileSync(testFixture('flow/grpo-variants.json'), 'utf8')) as {
  B: number;
  D: number;
  noiseLevel: number;
  clipRange: number;
  sigmas: number[];
  cases: Case[];
  branch: {
    parents: number[][];
    trees: number[][];
    leafRewards: number[];
    advantages: number[][];
    edgeLogProbs: number[][];
    probabilityAdvantages: number[][];
    width: { parents: number[][]; advantages: number[][]; perBranch: number[][]; bestWorst: number[][] };
  };
};
const { B, D, clipRange } = fixture;

/** |actual − expected| ≤ 1e-4·max(1, |expected|): float32 arithmetic against float64. */
const close = (actual: number, expected: number, what: string) =>
  expect(Math.abs(actual - expected), what).toBeLessThan(1e-4 * Math.max(1, Math.abs(expected)));

describe('GRPO-Guard and TempFlow-GRPO per-step loss = the PyTorch reference', () => {
  for (const testCase of fixture.cases)
    for (const algorithm of ['flow-grpo', 'grpo-guard', 'tempflow-grpo'] as const) {
      it(`${algorithm}, step ${testCase.index}: loss, ratios and the gradient in the velocity`, () => {
        const expected = testCase.results[algorithm];
        const velocity = T.tensor(testCase.v, [B, D], { requiresGrad: true });
        const step = flowGrpoSdeStep({
          sample: T.tensor(testCase.x, [B, D]),
          velocity,
          sigmas: fixture.sigmas,
          index: testCase.index,
          noiseLevel: fixture.noiseLevel,
          nextSample: T.tensor(testCase.next, [B, D]),
        });
        const old = { logProbs: Float32Array.from(testCase.oldLogProb), mean: T.tensor(testCase.oldMean, [B, D]) };
        const { logRatio, weight } = pairObjective(algorithm, step, old, testCase.dt);
        T.exp(logRatio)
          .toArray()
          .forEach((ratio, b) => close(ratio, expected.ratio[b], `ratio[${b}]`));
        const { loss } = ppoClipLoss(
          {
            logprobs: T.reshape(logRatio, [1, B]),
            oldLogprobs: new Float32Array(B),
            advantages: Float32Array.from(testCase.advantages, (a) => a * weight),
            mask: new Float32Array(B).fill(1),
          },
          { epsilonLow: clipRange, epsilonHigh: clipRange },
        );
        close(loss.item(), expected.loss, 'loss');
        loss.backward();
        velocity.grad!.toArray().forEach((g, i) => close(g, expected.gradient[i], `dLoss/dv[${i}]`));
      });
    }

  it('the three objectives differ on the same step (the variants are not Flow-GRPO renamed)', () => {
    const { results } = fixture.cases[0];
    expect(Math.abs(results['grpo-guard'].loss - results['flow-grpo'].loss)).toBeGreaterThan(0.1);
    expect(Math.abs(results['tempflow-grpo'].loss - results['flow-grpo'].loss)).toBeGreaterThan(0.1);
    expect(fixture.cases.some((c) => c.results['grpo-guard'].clipped > 0)).toBe(true); // the clip binds somewhere
  });
});

describe('TempFlow-GRPO branch points', () => {
  it('the first ⌊N·f⌋ steps, never the last, at least one', () => {
    expect(tempFlowBranchSteps(10, 0.6)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(tempFlowBranchSteps(10, 1)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(tempFlowBranchSteps(4, 0.01)).toEqual([0]);
    expect(() => tempFlowBranchSteps(1, 1)).toThrow(/at least 2 sampler steps/);
  });
});

function randomModel(seed: number): FlowModel {
  const config = { modelType: 'flow-mlp' as const, imageSize: 2, numClasses: 2, hiddenSize: 8, numBlocks: 1, timeFeatures: 4 }; // prettier-ignore
  const model = initFlowModel(config, seed);
  const random = new T.Random(seed + 1);
  for (const value of model.parameters.values())
    for (let i = 0; i < value.size; i++) value.data[i] = random.normal() * 0.4;
  return model;
}

describe('flowGrpoLoss with a variant = the direct per-pair composition', () => {
  for (const algorithm of ['grpo-guard', 'tempflow-grpo'] as const) {
    it(`${algorithm}: loss and every parameter gradient after the rollout policy moved`, () => {
      const sampler = { sigmas: flowSigmas(4, 2), steps: 'sde', noiseLevel: 0.7 };
      const trajectory = sampleTrajectory(randomModel(4), [0, 0, 1, 1], sampler, new T.Random(5)); // π_old ≠ π_θ
      const model = randomModel(3);
      const advantages = Float32Array.from([1.5, -0.5, 0.7, -2]);
      const steps = [0, 1, 2];
      const options = { sampler, clipRange: 0.05, klCoefficient: 0, algorithm };
      const batched = flowGrpoLoss(model, null, { trajectory, steps, advantages }, options);
      batched.loss.backward();
      const fromBatch = new Map([...model.parameters].map(([name, value]) => [name, value.grad!.toArray()]));
      for (const value of model.parameters.values()) value.grad = null;

      let total: T.Tensor = T.scalar(0);
      for (const j of steps)
        for (let b = 0; b < 4; b++) {
          const sample = T.slice(trajectory.states[j], 0, b, b + 1);
          const step = flowSteps.get('sde')({
            sample,
            velocity: flowVelocity(model, sample, [sampler.sigmas[j]], [trajectory.classes[b]]),
            sigmas: sampler.sigmas,
            index: j,
            noiseLevel: 0.7,
            nextSample: T.slice(trajectory.states[j + 1], 0, b, b + 1),
          });
          const s = step.std;
          const dt = sampler.sigmas[j + 1] - sampler.sigmas[j];
          const logRatio = T.sub(step.logProb!, trajectory.logProbs[j]![b]);
          // GRPO-Guard: exp(s·(log ρ + mean (μ − μ_old)²/(2s²))), weight 1/(−dt); TempFlow: ρ, weight 2.25·s.
          const meanDrift = T.mean(T.square(T.sub(step.mean, T.slice(trajectory.means[j], 0, b, b + 1))));
          const ratio =
            algorithm === 'grpo-guard'
              ? T.exp(T.mul(T.add(logRatio, T.mul(meanDrift, 1 / (2 * s * s))), s))
              : T.exp(logRatio);
          const A = advantages[b] * (algorithm === 'grpo-guard' ? -1 / dt : 2.25 * s);
          const surrogate = T.neg(T.minimum(T.mul(ratio, A), T.mul(T.clamp(ratio, 0.95, 1.05), A)));
          total = T.add(total, T.mul(T.sum(surrogate), 1 / 12));
        }
      expect(batched.loss.item()).toBeCloseTo(total.item(), 5);
      expect(batched.metrics.clipFraction).toBeGreaterThan(0); // the clip's branch is exercised
      total.backward();
      for (const [name, value] of model.parameters)
        value
          .grad!.toArray()
          .forEach((g, i) =>
            expect(Math.abs(g - fromBatch.get(name)![i]), `${name}[${i}]`).toBeLessThan(1e-5 + 1e-4 * Math.abs(g)),
          );
    });
  }
});

describe('BranchGRPO', () => {
  it('tree advantages = the reference: leaf means per node, normalised per depth within each tree', () => {
    const { parents, trees, leafRewards, advantages } = fixture.branch;
    const ours = branchAdvantages(Float32Array.from(leafRewards), parents, trees);
    expect(ours[0]).toEqual(new Float32Array(2)); // the roots have no incoming edge
    advantages.forEach((row, k) => row.forEach((a, r) => close(ours[k + 1][r], a, `depth ${k + 1} node ${r}`)));
    // Tree 0, depth 1: nodes with leaves {0.9, 0.1} and {0.4, 0.4} have rewards 0.5 and 0.4 → ±1/√2.
    close(ours[1][0], Math.SQRT1_2, 'hand value');
  });

  it("fusion 'probability' = the reference: softmax of the children's edge log-probs weights their rewards", () => {
    const { parents, trees, leafRewards, edgeLogProbs, probabilityAdvantages } = fixture.branch;
    const logProbs = edgeLogProbs.map((row) => Float32Array.from(row));
    const ours = branchAdvantages(Float32Array.from(leafRewards), parents, trees, logProbs);
    probabilityAdvantages.forEach((row, k) =>
      row.forEach((a, r) => close(ours[k + 1][r], a, `depth ${k + 1} node ${r}`)),
    );
  });

  it('width pruning (per-branch, best-worst) = the reference; depth pruning slides and stops; pruning ends', () => {
    const { parents, advantages, perBranch, bestWorst } = fixture.branch.width;
    const byDepth = [new Float32Array(2), ...advantages.map((row) => Float32Array.from(row))];
    const tree = { ...branchTreeDefaults, splitPoints: [0], prunedDepths: [] };
    const pairs = (kept: number[][]) => kept.flatMap((rows, d) => rows.map((r) => [d, r]));
    const progress = { step: 1, steps: 10 };
    expect(pairs(keptEdges({ ...tree, widthPruning: 'per-branch' }, parents, byDepth, progress))).toEqual(perBranch);
    expect(pairs(keptEdges({ ...tree, widthPruning: 'best-worst' }, parents, byDepth, progress))).toEqual(bestWorst);
    // Depths 3 and 4 pruned, sliding one shallower every 2 steps down to the last split point (step 1 → depth 1).
    const deep = [[], [0], [0], [0], [0], [0]];
    const sliding = { ...branchTreeDefaults, splitPoints: [1], prunedDepths: [3, 4], slideEvery: 2 };
    const prunedAt = (step: number, extra = {}) =>
      keptEdges(
        { ...sliding, ...extra },
        deep,
        deep.map(() => new Float32Array(1)),
        { step, steps: 10 },
      )
        .map((rows, d) => (d > 0 && rows.length === 0 ? d : 0))
        .filter(Boolean);
    expect([1, 2, 4, 9].map((step) => prunedAt(step))).toEqual([
      [3, 4],
      [2, 3],
      [1, 2],
      [1, 2],
    ]);
    expect(prunedAt(9, { slideEvery: 0 })).toEqual([3, 4]); // fixed
    expect(prunedAt(6, { pruningStepFraction: 0.5 })).toEqual([]); // step 6 > ⌊10·0.5⌋: no pruning
  });

  it('grows 2^k leaves per prompt from shared prefixes; split children share their parent and its mean', () => {
    const model = randomModel(3);
    const sampler = { sigmas: flowSigmas(4), steps: 'dance', noiseLevel: 0.3 };
    const tree = { ...branchTreeDefaults, splitPoints: [0, 2], noiseScale: 1e-6, prunedDepths: [] };
    const grown = growTrees(model, [0, 1], sampler, tree, new T.Random(2));
    expect(grown.states.map((state) => state.shape[0])).toEqual([2, 4, 4, 8, 8]);
    expect(grown.parents[1]).toEqual([0, 0, 1, 1]);
    expect(grown.trees[4]).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    const rowOf = (x: T.Tensor, r: number) => Array.from(x.data.slice(r * 4, r * 4 + 4));
    // With the split noise scaled to ~0 the two children of a split are its mean; non-split steps keep full noise.
    rowOf(grown.states[1], 0).forEach((value, i) => close(value, rowOf(grown.means[1], 0)[i], `child ${i}`));
    expect(rowOf(grown.means[1], 0)).toEqual(rowOf(grown.means[1], 1));
    expect(rowOf(grown.states[2], 0)).not.toEqual(rowOf(grown.means[2], 0));
  });

  it('default tree and refusals name the field', () => {
    expect(defaultBranchTree(20).splitPoints).toEqual([0, 5, 10, 15]);
    expect(defaultBranchTree(3).splitPoints).toEqual([0]);
    expect(() =>
      checkBranchTree({ ...branchTreeDefaults, splitPoints: [0, 10], noiseScale: 1, prunedDepths: [] }, 10),
    ).toThrow(/branch\.splitPoints: 10 is not a step/);
    expect(() =>
      checkBranchTree({ ...branchTreeDefaults, splitPoints: [0], noiseScale: 0, prunedDepths: [] }, 10),
    ).toThrow(/branch\.noiseScale/);
    expect(() =>
      checkBranchTree({ ...branchTreeDefaults, splitPoints: [0], noiseScale: 1, prunedDepths: [0] }, 10),
    ).toThrow(/branch\.prunedDepths/);
  });
});
