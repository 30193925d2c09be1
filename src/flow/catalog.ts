/**
 * What `grpo list` prints about the image generators: the flow trainers a recipe can pick (under
 * `flow.rl`), the options each one reads, the options of each sampler step and the image rewards.
 * Every option named here is a field of a flow recipe's `flow.rl` (catalog.test.ts checks it against
 * the schema), so what the list offers is what `grpo train` runs.
 *
 * Is: descriptions (the image rewards' come from their registry). Is not: the algorithms (flow-grpo.ts, mix-grpo.ts, tempflow-grpo.ts, branch-grpo.ts, diffusion-nft.ts, flow-steps.ts).
 */
import { imageRewards } from './image-rewards.js';

/** One listed part: its name, one line, its source and the `flow.rl` fields it reads. */
export interface FlowCatalogEntry {
  name: string;
  description: string;
  citation: string;
  options: readonly string[];
}

const common = ['steps', 'promptsPerStep', 'groupSize', 'samplingSteps', 'shift', 'advantageEstimator', 'learningRate', 'maxGradNorm', 'rewards', 'seed', 'evalEvery', 'evalPerClass']; // prettier-ignore

/** The trainers of flow recipes (`flow.rl.algorithm`, and the settings that make MixGRPO and DanceGRPO). */
export const flowTrainers: readonly FlowCatalogEntry[] = [
  {
    name: 'flow-grpo',
    description:
      'algorithm "flow-grpo": SDE rollouts with per-step log-probs; ppo-clip per (step, sample), advantages clipped, β·step-mean KL to the start model',
    citation: 'Liu et al. 2025, Flow-GRPO (arXiv:2505.05470)',
    options: [
      'sampler',
      'noiseLevel',
      'trainFraction',
      'clipRange',
      'advantageClip',
      'klCoefficient',
      'innerSteps',
      ...common,
    ],
  },
  {
    name: 'mix-grpo',
    description:
      'flow-grpo with window set: SDE steps and training only inside a sliding window of steps, Euler (ODE) elsewhere',
    citation: 'Li et al. 2025, MixGRPO (arXiv:2507.21802), progressive sliding window',
    options: ['window.size', 'window.shiftEvery', 'window.stride', 'window.rollBack'],
  },
  {
    name: 'dance-grpo',
    description:
      'flow-grpo with sampler "dance" (η·√Δσ step) and timestepSelection "dance": per sample a random ⌊(N−1)·f⌋ of the steps, never the last',
    citation: 'Xue et al. 2025, DanceGRPO (arXiv:2505.07818), train_grpo_flux.py',
    options: ['sampler', 'noiseLevel', 'timestepSelection', 'trainFraction'],
  },
  {
    name: 'grpo-guard',
    description:
      'algorithm "grpo-guard" (sampler sde): ratio exp(s·(log ρ + mean (μ_θ−μ_old)²/(2s²))) without its negative bias, each step\'s surrogate × 1/(−dt)',
    citation: 'Wang et al. 2025, GRPO-Guard (arXiv:2510.22319); verl-omni GRPOGuardLoss',
    options: ['algorithm', 'sampler', 'clipRange', 'innerSteps'],
  },
  {
    name: 'tempflow-grpo',
    description:
      'algorithm "tempflow-grpo" (sampler sde): per step j, G branches from one ODE trunk (SDE at j only) give step j its own rewards; surrogate × 2.25·s_j',
    citation: 'He et al. 2025, TempFlow-GRPO (arXiv:2508.04324), train_sd3_pr.py',
    options: ['algorithm', 'sampler', 'groupSize', 'trainFraction'],
  },
  {
    name: 'branch-grpo',
    description:
      'algorithm "branch-grpo" (sampler dance): trees split in two at branch.splitPoints; node reward = mean of its leaves (or probability-weighted), normalised per depth within a tree; depth and width pruning',
    citation: 'Li et al. 2025, BranchGRPO (arXiv:2509.06040), train_branchgrpo_flux.py',
    options: ['algorithm', 'sampler', 'noiseLevel', 'branch.splitPoints', 'branch.noiseScale', 'branch.fusion', 'branch.prunedDepths', 'branch.slideEvery', 'branch.slideStopDepth', 'branch.widthPruning', 'branch.widthRatio', 'branch.pruningStepFraction'], // prettier-ignore
  },
  {
    name: 'nft',
    description:
      'algorithm "nft", DiffusionNFT: no log-probs, any sampler (ode included); flow-matching loss on final samples under v⁺ = βv_θ + (1−β)v_old and v⁻ = (1+β)v_old − βv_θ',
    citation: 'Zheng et al. 2025, DiffusionNFT (arXiv:2509.16117), train_nft_sd3.py',
    options: ['sampler', 'nftBeta', 'trainFraction', 'advantageClip', 'klCoefficient', ...common],
  },
];

/** The `flow.rl` fields each sampler step reads (all steps read samplingSteps and shift). */
export const flowStepOptions: Record<string, readonly string[]> = {
  sde: ['noiseLevel'],
  cps: ['noiseLevel'],
  dance: ['noiseLevel'],
  ode: [],
};

/**
 * The image rewards a flow recipe may weight (`flow.rl.rewards: { name: weight }`): the registry's entries
 * now, so a recipe's own (its `parts`, registered by `grpo list --recipe`) are listed too.
 */
export function imageRewardCatalog(): FlowCatalogEntry[] {
  return imageRewards
    .list()
    .map(({ name, description, citation, options }) => ({ name, description, citation, options }));
}
