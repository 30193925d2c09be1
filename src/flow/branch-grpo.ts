/**
 * BranchGRPO's tree rollout and tree advantages (Li et al. 2025, arXiv:2509.06040; the authors' code,
 * Fredreic1849/BranchGRPO `fastvideo/train_branchgrpo_flux.py`, as its published script runs it: no pruning,
 * mean fusion). Per class prompt one root noise; every sampler step is DanceGRPO's SDE step (`dance`), and at
 * each split point every node splits in two, its children's noise scaled by `noiseScale`
 * (`tree_split_noise_scale`; the log-prob keeps the step's std, as the code), so the prefixes before a split
 * are shared and a tree with k split points has 2^k leaves. Rewards score the leaves; a node's reward is the
 * mean of its leaves' (`compute_node_rewards_from_leaves`); at each depth the nodes of one tree are
 * normalised, (r − mean)/(std + 1e-8) with the unbiased std, 0 when std < 1e-6 or the depth has one node
 * (`compute_hierarchical_advantages_by_depth`); every edge parent → child is trained with the child's
 * advantage (clipped to ±advantageClip) in Flow-GRPO's ppo-clip, the mean over all edges (the code divides
 * the sum by the edges per tree, the same up to the number of trees). Edges into `prunedDepths` are left out
 * (the code's fixed `depth_pruning`); its sliding depth window, width pruning and log-prob-weighted fusion
 * are not built.
 *
 * Is: the tree rollout, the tree advantages and one step. Is not: the loss (flow-grpo.ts).
 *
 * Legend: P = prompts (trees), R_d = nodes at depth d (all trees), D = pixels, N = sampler steps.
 */
import { flowSteps } from '../algorithms/flow-steps.js';
import { type FlowModel, flowDimensions, flowVelocity } from '../model/flow-mlp.js';
import { noGrad } from '../tensor/autograd.js';
import { mul } from '../tensor/elementwise.js';
import { type Random, randomNormal } from '../tensor/random.js';
import type { Tensor } from '../tensor/tensor.js';
import {
  type FlowGrpoBatch,
  type FlowGrpoContext,
  type FlowGrpoOptions,
  flowGrpoUpdate,
  rewardMetrics,
  takeRows,
} from './flow-grpo.js';
import type { SamplerOptions } from './sample.js';

/** Where the tree splits and how. */
export interface BranchTree {
  /** Steps at which every node splits in two (BranchGRPO's `tree_split_points`). */
  splitPoints: number[];
  /** Scale of the split children's noise (`tree_split_noise_scale`: 0.3 by default, 4.0 in the published script). */
  noiseScale: number;
  /** Depths (1..N) whose incoming edges are not trained (`depth_pruning`, fixed). */
  prunedDepths: number[];
}

/** BranchGRPO's default tree: 4 rounds at 0, N/4, 2N/4, 3N/4 (integer division), noise scale 0.3, no pruning. */
export function defaultBranchTree(stepCount: number): BranchTree {
  const interval = Math.floor(stepCount / 4);
  // With N < 4 the points repeat; the code's `i in split_points` splits once at each: keep them distinct.
  const splitPoints = [...new Set([0, 1, 2, 3].map((round) => round * interval))];
  return { splitPoints, noiseScale: 0.3, prunedDepths: [] };
}

/** Throws naming the field when the tree cannot be grown over `stepCount` steps. */
export function checkBranchTree(tree: BranchTree, stepCount: number): void {
  const points = tree.splitPoints;
  if (points.length === 0 || new Set(points).size !== points.length)
    throw new Error(`branch.splitPoints must be distinct steps, at least one, got [${points.join(', ')}]`);
  for (const point of points)
    if (!Number.isInteger(point) || point < 0 || point >= stepCount)
      throw new Error(`branch.splitPoints: ${point} is not a step of 0…${stepCount - 1}`);
  if (points.length > 8)
    throw new Error(`branch.splitPoints: ${points.length} splits make 2^${points.length} leaves per prompt; at most 8`);
  if (!(tree.noiseScale > 0)) throw new Error(`branch.noiseScale must be positive, got ${tree.noiseScale}`);
  for (const depth of tree.prunedDepths)
    if (!Number.isInteger(depth) || depth < 1 || depth > stepCount)
      throw new Error(`branch.prunedDepths: ${depth} is not a depth of 1…${stepCount}`);
}

/** A grown tree: depth d holds the states after d steps; parents[d][r] is node r's parent at depth d − 1. */
interface GrownTree {
  states: Tensor[];
  parents: number[][];
  /** trees[d][r]: the prompt (tree) of node r at depth d. */
  trees: number[][];
  /** Per depth d ≥ 1: the log-prob and the step mean of the edge into each node. */
  logProbs: Float32Array[];
  means: Tensor[];
}

/** Grows one tree per prompt with the `dance` step (SDE at every step), splitting every node at the split points. */
export function growTrees(
  model: FlowModel,
  prompts: readonly number[],
  sampler: SamplerOptions,
  tree: BranchTree,
  random: Random,
): GrownTree {
  const step = flowSteps.get('dance');
  const D = flowDimensions(model.config);
  return noGrad(() => {
    const grown: GrownTree = {
      states: [randomNormal([prompts.length, D], random)],
      parents: [[]],
      trees: [prompts.map((_, p) => p)],
      logProbs: [new Float32Array(0)],
      means: [],
    };
    for (let i = 0; i + 1 < sampler.sigmas.length; i++) {
      const x = grown.states[i]; // [R_i, D]
      const classes = grown.trees[i].map((p) => prompts[p]);
      const velocity = flowVelocity(model, x, Array<number>(classes.length).fill(sampler.sigmas[i]), classes);
      const split = tree.splitPoints.includes(i);
      const parents = grown.trees[i].flatMap((_, r) => (split ? [r, r] : [r]));
      const noise = randomNormal([parents.length, D], random);
      const result = step({
        sample: takeRows(x, parents),
        velocity: takeRows(velocity, parents),
        sigmas: sampler.sigmas,
        index: i,
        noiseLevel: sampler.noiseLevel,
        noise: split ? mul(noise, tree.noiseScale) : noise,
      });
      grown.states.push(result.nextSample);
      grown.parents.push(parents);
      grown.trees.push(parents.map((r) => grown.trees[i][r]));
      grown.logProbs.push(result.logProb!.data.slice());
      grown.means[i + 1] = result.mean;
    }
    return grown;
  });
}

/**
 * The tree advantages of depths 1…N (index d): node rewards are the mean of their leaves' rewards; within
 * one tree and depth, (r − mean)/(std + 1e-8), unbiased std; 0 when std < 1e-6 or the depth has one node.
 */
export function branchAdvantages(
  leafRewards: Float32Array,
  parents: readonly (readonly number[])[],
  trees: readonly (readonly number[])[],
): Float32Array[] {
  const N = parents.length - 1;
  const sums: Float64Array[] = [Float64Array.from(leafRewards)];
  const counts: Float64Array[] = [new Float64Array(leafRewards.length).fill(1)];
  for (let d = N; d >= 1; d--) {
    const sum = new Float64Array(trees[d - 1].length);
    const count = new Float64Array(trees[d - 1].length);
    parents[d].forEach((parent, r) => {
      sum[parent] += sums[0][r];
      count[parent] += counts[0][r];
    });
    sums.unshift(sum);
    counts.unshift(count);
  }
  const advantages: Float32Array[] = [new Float32Array(trees[0].length)];
  for (let d = 1; d <= N; d++) {
    const rewards = Array.from(sums[d], (sum, r) => sum / counts[d][r]);
    const out = new Float32Array(rewards.length);
    for (const tree of new Set(trees[d])) {
      const rows = trees[d].flatMap((t, r) => (t === tree ? [r] : []));
      if (rows.length <= 1) continue;
      const mean = rows.reduce((total, r) => total + rewards[r], 0) / rows.length;
      const std = Math.sqrt(rows.reduce((total, r) => total + (rewards[r] - mean) ** 2, 0) / (rows.length - 1));
      if (std >= 1e-6) for (const r of rows) out[r] = (rewards[r] - mean) / (std + 1e-8);
    }
    advantages.push(out);
  }
  return advantages;
}

/** One BranchGRPO step: grow the trees, score the leaves, tree advantages, then flowGrpoUpdate over the kept edges. */
export function branchGrpoStep(
  context: FlowGrpoContext,
  prompts: readonly number[],
  options: FlowGrpoOptions & { branch: BranchTree },
  random: Random,
): { metrics: Record<string, number> } {
  const grown = growTrees(context.model, prompts, options.sampler, options.branch, random);
  const N = grown.states.length - 1;
  const leafClasses = grown.trees[N].map((p) => prompts[p]);
  const leaves = grown.states[N];
  const images = leafClasses.map((_, r) => leaves.data.slice(r * leaves.shape[1], (r + 1) * leaves.shape[1]));
  const rewards = context.score(images, leafClasses);
  const advantages = branchAdvantages(rewards.total, grown.parents, grown.trees);
  const batches: FlowGrpoBatch[] = [];
  for (let d = 1; d <= N; d++) {
    if (options.branch.prunedDepths.includes(d)) continue;
    // A one-edge-per-node trajectory: only steps d − 1 (the parents) and d (the nodes) are set.
    const states: Tensor[] = [];
    states[d - 1] = takeRows(grown.states[d - 1], grown.parents[d]);
    states[d] = grown.states[d];
    const logProbs: (Float32Array | null)[] = [];
    logProbs[d - 1] = grown.logProbs[d];
    const means: Tensor[] = [];
    means[d - 1] = grown.means[d];
    const clip = options.advantageClip;
    batches.push({
      trajectory: { states, logProbs, means, classes: grown.trees[d].map((p) => prompts[p]) },
      steps: [d - 1],
      advantages: Float32Array.from(advantages[d], (a) => Math.max(-clip, Math.min(clip, a))),
    });
  }
  const metrics = flowGrpoUpdate(context, batches, { ...options, algorithm: 'flow-grpo' });
  const stdIsZero = prompts.map((_, p) => {
    const values = Array.from(rewards.total).filter((_, r) => grown.trees[N][r] === p);
    return Number(values.every((value) => value === values[0]));
  });
  return { metrics: { ...metrics, ...rewardMetrics(rewards, stdIsZero) } };
}
