/**
 * TempFlow-GRPO's trajectory branching (He et al. 2025, arXiv:2508.04324; the authors' code,
 * Shredded-Pork/TempFlow-GRPO `scripts/train_sd3_pr.py` with `sd3_pipeline_with_logprob_perstep.py`): a
 * process reward for each trained step j without an intermediate reward model. Per class prompt, one noise
 * (the code's `latents.repeat_interleave(exploration_k)`) follows the deterministic Euler (ODE) trunk to
 * step j; there G = groupSize branches take one `sde` step each and finish by ODE, and their final images'
 * rewards are the group of step j, so its advantages credit that one stochastic decision. The loss over
 * the pairs (j, branch) is Flow-GRPO's with TempFlow's noise-aware weight 2.25·s_j (flow-grpo.ts
 * pairObjective). Branch points: the first ⌊N·trainFraction⌋ steps, never the last (the code branches at
 * `timesteps[:-1]`). The code branches at every step and trains the first ones; branching only where it
 * trains gives the same loss, since each step's advantages use only that step's rewards.
 *
 * Is: the branching rollout and one step. Is not: the loss (flow-grpo.ts) or the run loop (flow-run.ts).
 *
 * Legend: P = prompts, G = branches per prompt, D = pixels, N = sampler steps.
 */
import { flowDimensions } from '../model/flow-mlp.js';
import { type Random, randomNormal } from '../tensor/random.js';
import { tensor } from '../tensor/tensor.js';
import {
  type FlowGrpoBatch,
  type FlowGrpoContext,
  type FlowGrpoOptions,
  type ScoreImagesFn,
  clippedAdvantages,
  flowGrpoUpdate,
  promptGroups,
  rewardMetrics,
  trainedSteps,
} from './flow-grpo.js';
import { finalImages, sampleTrajectory } from './sample.js';

/** TempFlow-GRPO's branch points: the first ⌊N·fraction⌋ steps, at most N − 1 (never the last), at least one. */
export function tempFlowBranchSteps(stepCount: number, fraction: number): number[] {
  if (stepCount < 2) throw new Error(`tempflow-grpo needs at least 2 sampler steps, got ${stepCount}`);
  return trainedSteps(stepCount, fraction).filter((step) => step < stepCount - 1);
}

/**
 * One TempFlow-GRPO step: for each branch point j, G branches per prompt from the shared ODE trunk (SDE at
 * j only), their rewards and group advantages; then flowGrpoUpdate over all (j, branch) pairs.
 */
export function tempFlowStep(
  context: FlowGrpoContext,
  prompts: readonly number[],
  options: FlowGrpoOptions,
  random: Random,
): { metrics: Record<string, number> } {
  const G = options.groupSize;
  const stepCount = options.sampler.sigmas.length - 1;
  const classes = prompts.flatMap((label) => Array<number>(G).fill(label));
  const D = flowDimensions(context.model.config);
  // One noise per prompt, repeated for its G branches: the trunk to every branch point is shared. [P·G, D]
  const noise = randomNormal([prompts.length, D], random).data;
  const initialNoise = tensor(
    Float32Array.from({ length: classes.length * D }, (_, i) => noise[Math.floor(i / (G * D)) * D + (i % D)]),
    [classes.length, D],
  );
  const batches: FlowGrpoBatch[] = [];
  const scores: ReturnType<ScoreImagesFn>[] = [];
  const stdIsZero: number[] = [];
  for (const j of tempFlowBranchSteps(stepCount, options.trainFraction)) {
    const steps = Array.from({ length: stepCount }, (_, index) => (index === j ? 'sde' : 'ode'));
    const sampler = { ...options.sampler, steps };
    const trajectory = sampleTrajectory(context.model, classes, sampler, random, initialNoise);
    const rewards = context.score(finalImages(trajectory), classes, promptGroups(classes.length, G));
    const estimate = clippedAdvantages(rewards.total, options);
    batches.push({ trajectory, steps: [j], advantages: estimate.advantages });
    scores.push(rewards);
    stdIsZero.push(...Array.from(estimate.stdIsZero, Number));
  }
  const metrics = flowGrpoUpdate(context, batches, { ...options, algorithm: 'tempflow-grpo' });
  const all = (pick: (score: ReturnType<ScoreImagesFn>) => Float32Array) =>
    Float32Array.from(scores.flatMap((score) => Array.from(pick(score))));
  const components = Object.fromEntries(
    Object.keys(scores[0].components).map((name) => [name, all((score) => score.components[name])]),
  );
  return { metrics: { ...metrics, ...rewardMetrics({ total: all((score) => score.total), components }, stdIsZero) } };
}
