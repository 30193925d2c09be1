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
 * the sum by the edges per tree, the same up to the number of trees). Options as the code's: `fusion`
 * 'probability' (a node's reward = Σ softmax(children's edge log-probs)·children's rewards,
 * `tree_prob_weighted`), depth pruning (`prunedDepths`, optionally sliding shallower every `slideEvery` RL
 * steps down to `slideStopDepth`), width pruning of the edges after the last split ('per-branch' = mode 1,
 * 'best-worst' = mode 2, keeping `widthRatio`), and pruning only in the first `pruningStepFraction` of the run.
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
  /** Depths (1..N) whose incoming edges are not trained (`depth_pruning`). */
  prunedDepths: number[];
  /** Node rewards: 'mean' of the leaves (the code's default) or 'probability'-weighted children (`tree_prob_weighted`). */
  fusion: 'mean' | 'probability';
  /** Slide the pruned depths one shallower every this many RL steps (`depth_pruning_slide_interval`); 0 = fixed. */
  slideEvery: number;
  /** The shallowest depth the slide reaches (`depth_pruning_stop_depth`); null = the last split point. */
  slideStopDepth: number | null;
  /** Width pruning of the edges after the last split (`width_pruning_mode` 0, 1, 2). */
  widthPruning: 'none' | 'per-branch' | 'best-worst';
  /** Share of those edges kept (`width_pruning_ratio`). */
  widthRatio: number;
  /** Prune only while step ≤ ⌊steps·this⌋ (`pruning_step_ratio`). */
  pruningStepFraction: number;
}

/** The code's defaults for everything but the split points. */
export const branchTreeDefaults = {
  noiseScale: 0.3,
  prunedDepths: [],
  fusion: 'mean',
  slideEvery: 0,
  slideStopDepth: null,
  widthPruning: 'none',
  widthRatio: 0.5,
  pruningStepFraction: 1,
} as const satisfies Omit<BranchTree, 'splitPoints'>;

/** BranchGRPO's default tree: 4 rounds at 0, N/4, 2N/4, 3N/4 (integer division), noise scale 0.3, no pruning. */
export function defaultBranchTree(stepCount: number): BranchTree {
  const interval = Math.floor(stepCount / 4);
  // With N < 4 the points repeat; the code's `i in split_points` splits once at each: keep them distinct.
  const splitPoints = [...new Set([0, 1, 2, 3].map((round) => round * interval))];
  return { ...branchTreeDefaults, prunedDepths: [], splitPoints };
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
  if (!['mean', 'probability'].includes(tree.fusion))
    throw new Error(`branch.fusion must be "mean" or "probability", got "${tree.fusion}"`);
  if (!['none', 'per-branch', 'best-worst'].includes(tree.widthPruning))
    throw new Error(`branch.widthPruning must be "none", "per-branch" or "best-worst", got "${tree.widthPruning}"`);
  if (!Number.isInteger(tree.slideEvery) || tree.slideEvery < 0)
    throw new Error(`branch.slideEvery must be a whole number ≥ 0, got ${tree.slideEvery}`);
  for (const field of ['widthRatio', 'pruningStepFraction'] as const)
    if (!(tree[field] > 0 && tree[field] <= 1))
      throw new Error(`branch.${field} must be in (0, 1], got ${tree[field]}`);
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
 * The tree advantages of depths 1…N (index d). Node rewards: the mean of their leaves' rewards, or with
 * `edgeLogProbs` (fusion 'probability') Σ softmax(children's edge log-probs)·children's rewards. Within one
 * tree and depth, (r − mean)/(std + 1e-8), unbiased std; 0 when std < 1e-6 or the depth has one node.
 */
export function branchAdvantages(
  leafRewards: Float32Array,
  parents: readonly (readonly number[])[],
  trees: readonly (readonly number[])[],
  edgeLogProbs?: readonly Float32Array[],
): Float32Array[] {
  const N = parents.length - 1;
  const rewards: number[][] = [];
  rewards[N] = Array.from(leafRewards);
  let leafSums = Array.from(leafRewards);
  let leafCounts = leafSums.map(() => 1);
  for (let d = N; d >= 1; d--) {
    const size = trees[d - 1].length;
    const sums = Array<number>(size).fill(0);
    const counts = Array<number>(size).fill(0);
    const weights = Array<number>(size).fill(0); // Σ exp(log-prob − max) of the children, for the softmax
    const weighted = Array<number>(size).fill(0);
    const top = Math.max(...(edgeLogProbs?.[d] ?? [0]));
    parents[d].forEach((parent, r) => {
      sums[parent] += leafSums[r];
      counts[parent] += leafCounts[r];
      const weight = edgeLogProbs ? Math.exp(edgeLogProbs[d][r] - top) : 1;
      weights[parent] += weight;
      weighted[parent] += weight * rewards[d][r];
    });
    rewards[d - 1] = edgeLogProbs ? weighted.map((w, r) => w / weights[r]) : sums.map((sum, r) => sum / counts[r]);
    [leafSums, leafCounts] = [sums, counts];
  }
  const advantages: Float32Array[] = [new Float32Array(trees[0].length)];
  for (let d = 1; d <= N; d++) {
    const out = new Float32Array(rewards[d].length);
    for (const tree of new Set(trees[d])) {
      const rows = trees[d].flatMap((t, r) => (t === tree ? [r] : []));
      if (rows.length <= 1) continue;
      const mean = rows.reduce((total, r) => total + rewards[d][r], 0) / rows.length;
      const std = Math.sqrt(rows.reduce((total, r) => total + (rewards[d][r] - mean) ** 2, 0) / (rows.length - 1));
      if (std >= 1e-6) for (const r of rows) out[r] = (rewards[d][r] - mean) / (std + 1e-8);
    }
    advantages.push(out);
  }
  return advantages;
}

/**
 * Which edges are trained, per child depth d (index d, rows of depth d), at RL step `step` of `steps`: all,
 * less the (sliding) pruned depths and the width-pruned edges after the last split, as the code's order
 * (depth pruning, then width pruning), while step ≤ ⌊steps·pruningStepFraction⌋.
 */
export function keptEdges(
  tree: BranchTree,
  parents: readonly (readonly number[])[],
  advantages: readonly Float32Array[],
  progress: { step: number; steps: number },
): number[][] {
  const N = parents.length - 1;
  const kept = parents.map((rows, d) => (d === 0 ? [] : rows.map((_, r) => r)));
  if (progress.step > Math.floor(progress.steps * tree.pruningStepFraction)) return kept;
  const lastSplit = Math.max(...tree.splitPoints);
  const base = [...tree.prunedDepths].sort((a, b) => a - b);
  let shift = 0;
  if (tree.slideEvery > 0 && base.length > 0)
    shift = Math.min(
      Math.floor(progress.step / tree.slideEvery),
      Math.max(0, base[0] - (tree.slideStopDepth ?? lastSplit)),
    );
  for (const depth of base) if (depth - shift >= 1) kept[depth - shift] = [];
  if (tree.widthPruning === 'none') return kept;
  // The edges after the last split: parent depth > lastSplit, i.e. child depths lastSplit + 2 … N.
  const late = kept.flatMap((rows, d) => (d >= lastSplit + 2 ? rows.map((r) => ({ d, r, a: advantages[d][r] })) : []));
  const byAdvantage = (list: typeof late) => [...list].sort((x, y) => y.a - x.a);
  let keep: typeof late;
  if (tree.widthPruning === 'best-worst') {
    const sorted = byAdvantage(late);
    const count = Math.max(2, Math.floor(late.length * tree.widthRatio));
    const best = Math.floor(count / 2);
    keep = [...sorted.slice(0, best), ...sorted.slice(sorted.length - (count - best))];
  } else {
    // Mode 1: group by the branch the last split made (the ancestor at depth lastSplit + 1), keep its best share.
    const ancestor = (d: number, r: number): number => (d === lastSplit + 1 ? r : ancestor(d - 1, parents[d][r]));
    const groups = new Map<number, typeof late>();
    for (const edge of late)
      groups.set(ancestor(edge.d, edge.r), [...(groups.get(ancestor(edge.d, edge.r)) ?? []), edge]);
    keep = [...groups.values()].flatMap((group) =>
      byAdvantage(group).slice(0, Math.max(1, Math.floor(group.length * tree.widthRatio))),
    );
  }
  for (let d = lastSplit + 2; d <= N; d++)
    kept[d] = keep
      .filter((edge) => edge.d === d)
      .map((edge) => edge.r)
      .sort((x, y) => x - y);
  return kept;
}

/** One BranchGRPO step: grow the trees, score the leaves, tree advantages, then flowGrpoUpdate over the kept edges. */
export function branchGrpoStep(
  context: FlowGrpoContext,
  prompts: readonly number[],
  options: FlowGrpoOptions & { branch: BranchTree },
  random: Random,
  progress: { step: number; steps: number },
): { metrics: Record<string, number> } {
  const grown = growTrees(context.model, prompts, options.sampler, options.branch, random);
  const N = grown.states.length - 1;
  const leafClasses = grown.trees[N].map((p) => prompts[p]);
  const leaves = grown.states[N];
  const images = leafClasses.map((_, r) => leaves.data.slice(r * leaves.shape[1], (r + 1) * leaves.shape[1]));
  const rewards = context.score(images, leafClasses, grown.trees[N]); // a tree's leaves are one group
  const fusion = options.branch.fusion === 'probability' ? grown.logProbs : undefined;
  const advantages = branchAdvantages(rewards.total, grown.parents, grown.trees, fusion);
  const kept = keptEdges(options.branch, grown.parents, advantages, progress);
  const batches: FlowGrpoBatch[] = [];
  for (let d = 1; d <= N; d++) {
    if (kept[d].length === 0) continue;
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
      samples: [kept[d]],
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
