/**
 * A Flow-GRPO (or DiffusionNFT) run from a pre-trained flow model: validate every option (before any compute), load
 * the model, classifier and frozen reference, loop `flowGrpoStep` or `nftStep`, evaluate with the deterministic
 * Euler sampler on fixed noise, and write the run folder (run/run-folder.ts):
 *   metrics.jsonl (one line per step, and eval lines), samples-step-N.png (one row per class),
 *   checkpoints/step-N/ (when run by `grpo train`: resumable, flow-checkpoint.ts), model/ (the tuned
 *   model, same layout as the input).
 *
 * Is: the loop, orchestration and files. Is not: the loss (flow-grpo.ts), config.json and
 * summary.json (recipe.ts, cli/flow-command.ts) or the CLI parsing (cli/flow-command.ts).
 */
import { join } from 'node:path';
import { flowSigmas, flowSteps } from '../algorithms/flow-steps.js';
import { advantageEstimators } from '../algorithms/index.js';
import { type FlowModel, copyFlowModel, loadFlowModel, saveFlowModel } from '../model/flow-mlp.js';
import { AdamW } from '../nn/optimizer.js';
import type { RunFolder, TrainerState } from '../run/run-folder.js';
import { stopIfAborted } from '../run/run-status.js';
import { Random } from '../tensor/random.js';
import { type DigitClassifier, loadClassifier } from './digit-classifier.js';
import { nftStep } from './diffusion-nft.js';
import {
  type FlowCheckpointing,
  restoreFlowCheckpoint,
  saveFlowCheckpoint,
  savesCheckpointAt,
  writeFolderAtomically,
} from './flow-checkpoint.js';
import { type BranchTree, branchGrpoStep, checkBranchTree, defaultBranchTree } from './branch-grpo.js';
import { type FlowGrpoContext, type FlowGrpoOptions, type FlowPolicyObjective, flowGrpoStep } from './flow-grpo.js';
import { checkRewardWeights, scoreImages } from './image-rewards.js';
import { type SlidingWindow, checkSlidingWindow, slidingWindowAt } from './mix-grpo.js';
import { writeImageGrid } from './png.js';
import { finalImages, sampleTrajectory } from './sample.js';
import { tempFlowStep } from './tempflow-grpo.js';

/** What the loop hands one RL step; each algorithm's entry in `flowRlSteps` reads what it needs. */
interface FlowStepInputs {
  context: FlowGrpoContext;
  /** DiffusionNFT's sampling policy (nft only). */
  old: FlowModel | null;
  prompts: readonly number[];
  grpoOptions: FlowGrpoOptions;
  /** `grpoOptions` with this step's MixGRPO window, and the window's trained steps. */
  stepOptions: FlowGrpoOptions;
  trained: number[] | undefined;
  random: Random;
  progress: { step: number; steps: number };
  branch: BranchTree;
  nftBeta: number;
}

/** One RL step of each `flow.rl.algorithm`: the loop looks its algorithm up here, never compares names. */
const flowRlSteps: Record<
  FlowRunOptions['algorithm'],
  (inputs: FlowStepInputs) => { metrics: Record<string, number> }
> = {
  'flow-grpo': (inputs) =>
    flowGrpoStep(inputs.context, inputs.prompts, inputs.stepOptions, inputs.random, inputs.trained),
  'grpo-guard': (inputs) =>
    flowGrpoStep(inputs.context, inputs.prompts, inputs.stepOptions, inputs.random, inputs.trained),
  'tempflow-grpo': (inputs) => tempFlowStep(inputs.context, inputs.prompts, inputs.grpoOptions, inputs.random),
  'branch-grpo': (inputs) =>
    branchGrpoStep(
      inputs.context,
      inputs.prompts,
      { ...inputs.grpoOptions, branch: inputs.branch },
      inputs.random,
      inputs.progress,
    ),
  nft: (inputs) =>
    nftStep(
      { ...inputs.context, old: inputs.old! },
      inputs.prompts,
      { ...inputs.grpoOptions, nftBeta: inputs.nftBeta },
      inputs.random,
      inputs.progress.step,
    ),
};

/** Everything a run needs besides the folders. */
export interface FlowRunOptions {
  /**
   * 'flow-grpo' (per-step log-probs, ppo-clip), its variants 'grpo-guard' (normalised ratio, steps reweighted)
   * and 'tempflow-grpo' (branching rollouts, noise-aware weights; tempflow-grpo.ts), 'branch-grpo' (tree
   * rollouts, depth-wise tree advantages; branch-grpo.ts), or 'nft' (DiffusionNFT).
   */
  algorithm: FlowPolicyObjective | 'branch-grpo' | 'nft';
  /** DiffusionNFT's β of the implicit policies v± (the reference code's 1.0). */
  nftBeta: number;
  /** RL steps (rollout + update each). */
  steps: number;
  /** Class prompts drawn per step (without replacement from 0..numClasses−1). */
  promptsPerStep: number;
  groupSize: number;
  /** Stochastic sampler step for rollouts: 'sde', 'cps' or 'dance'. */
  sampler: string;
  noiseLevel: number;
  /** Sampler steps N (σ from 1 to 0). */
  samplingSteps: number;
  /** SD3 time shift of the schedule (1 = uniform). */
  shift: number;
  trainFraction: number;
  /** 'first' (Flow-GRPO: the first ⌊N·f⌋ steps) or 'dance' (DanceGRPO: a random ⌊(N−1)·f⌋ per sample). */
  timestepSelection: 'first' | 'dance';
  clipRange: number;
  advantageClip: number;
  klCoefficient: number;
  advantageEstimator: string;
  innerSteps: number;
  maxGradNorm: number;
  learningRate: number;
  /** Reward name → weight (confidence, thickness, centredness, symmetry). */
  rewards: Record<string, number>;
  seed: number;
  /** Evaluate (Euler sampler, fixed noise) every this many steps, and at the start and end. */
  evalEvery: number;
  /** Evaluation samples per class. */
  evalPerClass: number;
  /** MixGRPO: SDE and training only inside this sliding window of steps, ODE elsewhere; null = Flow-GRPO. */
  window: SlidingWindow | null;
  /** BranchGRPO's tree (algorithm 'branch-grpo'); null = its default, defaultBranchTree(samplingSteps). */
  branch: BranchTree | null;
}

/** Flow-GRPO's published choices where they apply; sizes small enough for minutes on a CPU. */
export const defaultFlowRunOptions: FlowRunOptions = {
  algorithm: 'flow-grpo',
  nftBeta: 1,
  steps: 40,
  promptsPerStep: 4,
  groupSize: 8,
  sampler: 'sde',
  noiseLevel: 0.7,
  samplingSteps: 10,
  shift: 1,
  trainFraction: 0.6,
  timestepSelection: 'first',
  clipRange: 1e-4,
  advantageClip: 5,
  klCoefficient: 0,
  advantageEstimator: 'grpo',
  innerSteps: 1,
  maxGradNorm: 1,
  learningRate: 3e-4,
  rewards: { confidence: 1 },
  seed: 1,
  evalEvery: 10,
  evalPerClass: 8,
  window: null,
  branch: null,
};

const positiveIntegers = [
  'steps',
  'promptsPerStep',
  'samplingSteps',
  'innerSteps',
  'evalEvery',
  'evalPerClass',
] as const;
const positiveNumbers = ['clipRange', 'advantageClip', 'maxGradNorm', 'learningRate', 'shift', 'noiseLevel'] as const;

/** Throws naming the field for any option that cannot run, before anything is loaded. */
export function validateFlowRunOptions(options: FlowRunOptions, numClasses = 10): void {
  for (const field of positiveIntegers)
    if (!Number.isInteger(options[field]) || options[field] < 1)
      throw new Error(`${field} must be a positive integer, got ${options[field]}`);
  for (const field of positiveNumbers)
    if (!(options[field] > 0 && Number.isFinite(options[field])))
      throw new Error(`${field} must be a positive number, got ${options[field]}`);
  if (!Number.isInteger(options.groupSize) || options.groupSize < 2)
    throw new Error(`groupSize must be an integer ≥ 2 (a group needs a spread), got ${options.groupSize}`);
  if (options.promptsPerStep > numClasses)
    throw new Error(`promptsPerStep must be at most the ${numClasses} classes, got ${options.promptsPerStep}`);
  if (!['flow-grpo', 'grpo-guard', 'tempflow-grpo', 'branch-grpo', 'nft'].includes(options.algorithm))
    throw new Error(
      `algorithm must be "flow-grpo" or "nft" (or a Flow-GRPO variant: "grpo-guard", "tempflow-grpo", "branch-grpo"), got "${String(options.algorithm)}"`,
    );
  if (options.algorithm === 'nft') {
    if (!flowSteps.has(options.sampler))
      throw new Error(`sampler must be one of ${flowSteps.names().join(', ')}, got "${options.sampler}"`);
    if (options.window) throw new Error('window (MixGRPO) applies to flow-grpo only, not to nft');
    if (!(options.nftBeta > 0)) throw new Error(`nftBeta must be positive, got ${options.nftBeta}`);
  } else if (!flowSteps.has(options.sampler) || options.sampler === 'ode')
    throw new Error(`sampler must be a stochastic step with log-probs (sde, cps, dance), got "${options.sampler}"`);
  if (options.timestepSelection !== 'first' && options.timestepSelection !== 'dance')
    throw new Error(`timestepSelection must be "first" or "dance", got "${String(options.timestepSelection)}"`);
  if (options.timestepSelection === 'dance') {
    if (options.algorithm === 'nft')
      throw new Error('timestepSelection "dance" applies to flow-grpo only (nft draws its own noise levels)');
    if (options.window)
      throw new Error('timestepSelection "dance" and window (MixGRPO) both choose the steps: give one');
    if (options.samplingSteps < 2)
      throw new Error(
        `timestepSelection "dance" needs samplingSteps ≥ 2 (it never trains the last), got ${options.samplingSteps}`,
      );
  }
  checkVariant(options);
  if (!(options.trainFraction > 0 && options.trainFraction <= 1))
    throw new Error(`trainFraction must be in (0, 1], got ${options.trainFraction}`);
  if (!(options.klCoefficient >= 0)) throw new Error(`klCoefficient must be ≥ 0, got ${options.klCoefficient}`);
  checkFlowAdvantageEstimator(options.advantageEstimator);
  if (options.window) checkSlidingWindow(options.window, options.samplingSteps);
}

/**
 * GRPO-Guard and TempFlow-GRPO: their weights (and Guard's ratio) are defined for Flow-GRPO's `sde` step;
 * BranchGRPO grows DanceGRPO (`dance`) trees and chooses its own steps.
 */
function checkVariant(options: FlowRunOptions): void {
  const variant = options.algorithm;
  if (options.branch && variant !== 'branch-grpo')
    throw new Error(`branch applies to algorithm "branch-grpo" only, this run is "${variant}"`);
  if (variant === 'branch-grpo') {
    if (options.sampler !== 'dance')
      throw new Error(
        `sampler must be "dance" for algorithm "branch-grpo" (its tree grows with DanceGRPO's step), got "${options.sampler}"`,
      );
    if (options.window || options.timestepSelection !== 'first')
      throw new Error(
        'window and timestepSelection "dance" do not apply to algorithm "branch-grpo" (it trains every tree edge)',
      );
    if (options.advantageEstimator !== 'grpo')
      throw new Error(
        `advantageEstimator does not apply to algorithm "branch-grpo" (its advantages are the tree's), got "${options.advantageEstimator}"`,
      );
    checkBranchTree(options.branch ?? defaultBranchTree(options.samplingSteps), options.samplingSteps);
    return;
  }
  if (variant !== 'grpo-guard' && variant !== 'tempflow-grpo') return;
  if (options.sampler !== 'sde')
    throw new Error(
      `sampler must be "sde" for algorithm "${variant}" (its formulas are the sde step's), got "${options.sampler}"`,
    );
  if (variant !== 'tempflow-grpo') return;
  if (options.window)
    throw new Error('window (MixGRPO) and algorithm "tempflow-grpo" both choose the SDE steps: give one');
  if (options.timestepSelection !== 'first')
    throw new Error(
      'timestepSelection "dance" does not apply to algorithm "tempflow-grpo" (it branches at the first steps)',
    );
  if (options.samplingSteps < 2)
    throw new Error(
      `samplingSteps must be ≥ 2 for algorithm "tempflow-grpo" (it never branches at the last), got ${options.samplingSteps}`,
    );
}

/**
 * A flow step gives its estimator the rewards and group sizes only: an estimator that needs more (token
 * ids, clusters, baselines, serial exits, per-reward scores) is refused here, before any compute.
 */
function checkFlowAdvantageEstimator(name: string): void {
  const needs = advantageEstimators.entry(name).needs ?? []; // entry() throws listing the known names
  if (needs.length === 0) return;
  const usable = advantageEstimators
    .list()
    .filter((candidate) => (candidate.needs ?? []).length === 0)
    .map((candidate) => candidate.name);
  throw new Error(
    `advantageEstimator: "${name}" needs ${needs.join(', ')}, which a flow run does not supply (it has one reward per image); use one of ${usable.join(', ')}`,
  );
}

/** A flow model for images: refuses a toy model whose config sets `dimensions` (its samples are no pictures). */
export function loadImageFlowModel(folder: string): FlowModel {
  const model = loadFlowModel(folder);
  if (model.config.dimensions !== undefined)
    throw new Error(`${folder}/config.json: dimensions is set (a toy model of points); image jobs need an image model`);
  return model;
}

/** The mean reward of the Euler (ODE) sampler on fixed noise, `perClass` samples per class, and the images. */
export function evaluateFlowModel(
  model: FlowModel,
  classifier: DigitClassifier | null,
  options: FlowRunOptions,
): { reward: number; components: Record<string, number>; rows: Float32Array[][] } {
  const classes = Array.from({ length: model.config.numClasses }, (_, label) =>
    Array<number>(options.evalPerClass).fill(label),
  ).flat();
  const sampler = { sigmas: flowSigmas(options.samplingSteps, options.shift), steps: 'ode', noiseLevel: 0 };
  const images = finalImages(sampleTrajectory(model, classes, sampler, new Random(options.seed + 1_000_003)));
  const scores = scoreImages(images, classes, model.config.imageSize, options.rewards, classifier);
  const average = (values: Float32Array) => values.reduce((a, b) => a + b, 0) / values.length;
  const components = Object.fromEntries(
    Object.entries(scores.components).map(([name, values]) => [name, average(values)]),
  );
  const rows = Array.from({ length: model.config.numClasses }, (_, label) =>
    images.slice(label * options.evalPerClass, (label + 1) * options.evalPerClass),
  );
  return { reward: average(scores.total), components, rows };
}

/**
 * Runs Flow-GRPO (or DiffusionNFT) into `folder`: metrics.jsonl, the sample grids and model/ (written
 * whole, by rename). With `checkpointing` it saves checkpoints, resumes from the newest sound one and
 * stops between steps on the signal. Step k draws its prompts and noise from a Random seeded by
 * (seed, k) alone, so a resumed run replays exactly. Returns the evaluation reward before and after.
 */
export async function runFlowGrpo(
  folders: { model: string; classifier: string | null },
  folder: RunFolder,
  options: FlowRunOptions,
  log: (line: string) => void = () => {},
  checkpointing: FlowCheckpointing | null = null,
): Promise<{ before: number; after: number; minutes: number }> {
  validateFlowRunOptions(options);
  checkRewardWeights(options.rewards, folders.classifier !== null);
  const started = Date.now();
  const model = loadImageFlowModel(folders.model);
  const classifier = folders.classifier ? loadClassifier(folders.classifier) : null;
  // Copies of the starting weights, taken before a resume restores the checkpoint's.
  const reference = options.klCoefficient > 0 ? copyFlowModel(model) : null;
  const old = options.algorithm === 'nft' ? copyFlowModel(model) : null; // DiffusionNFT's sampling policy
  const evaluate = (step: number) => {
    const result = evaluateFlowModel(model, classifier, options);
    writeImageGrid(join(folder.directory, `samples-step-${step}.png`), result.rows, model.config.imageSize, 2);
    folder.logMetrics({
      step,
      'eval/reward/mean': result.reward,
      ...Object.fromEntries(
        Object.entries(result.components).map(([name, value]) => [`eval/reward/${name}/mean`, value]),
      ),
    });
    log(`eval step ${step}: reward ${result.reward.toFixed(4)} ${JSON.stringify(result.components)}`);
    return result.reward;
  };
  const branch = options.branch ?? defaultBranchTree(options.samplingSteps);
  const grpoOptions: FlowGrpoOptions = {
    ...options,
    algorithm: options.algorithm === 'nft' || options.algorithm === 'branch-grpo' ? 'flow-grpo' : options.algorithm,
    sampler: {
      sigmas: flowSigmas(options.samplingSteps, options.shift),
      steps: options.sampler,
      noiseLevel: options.noiseLevel,
    },
  };
  const optimizer = new AdamW(
    [...model.parameters].map(([name, tensor]) => ({ name, tensor, decay: false })),
    { learningRate: options.learningRate, weightDecay: 0 },
  );
  const training = { model, optimizer, companions: old ? { 'old-policy': old } : undefined };
  const score = (images: Float32Array[], classes: number[], groups: number[]) =>
    scoreImages(images, classes, model.config.imageSize, options.rewards, classifier, groups);
  const restored = checkpointing?.resume
    ? restoreFlowCheckpoint(checkpointing.folder, training, { warn: checkpointing.warn, message: log }, checkpointing)
    : null;
  let state: TrainerState;
  let before: number;
  let after: number;
  if (restored) {
    state = restored;
    before = evaluationReward(restored.evalBefore?.['eval/reward/mean'], 'evalBefore', restored.step);
    after = evaluationReward(restored.extra.evalAfter, 'extra.evalAfter', restored.step);
  } else {
    before = after = evaluate(0);
    const evalBefore = { 'eval/reward/mean': before };
    state = { step: 0, phase: 'rl', phaseStep: 0, consecutiveSkips: 0, evalBefore, extra: {} };
  }
  for (let step = state.step + 1; step <= options.steps; step++) {
    const random = new Random(options.seed * 100003 + 7 * step + 1);
    const prompts = random
      .shuffle(Array.from({ length: model.config.numClasses }, (_, label) => label))
      .slice(0, options.promptsPerStep);
    let stepOptions = grpoOptions;
    let trained: number[] | undefined;
    if (options.window) {
      const window = slidingWindowAt(options.window, options.samplingSteps, step - 1, options.sampler);
      stepOptions = { ...grpoOptions, sampler: { ...grpoOptions.sampler, steps: window.steps } };
      trained = window.trained;
    }
    const { metrics } = flowRlSteps[options.algorithm]({
      context: { model, reference, optimizer, score },
      old,
      prompts,
      grpoOptions,
      stepOptions,
      trained,
      random,
      progress: { step, steps: options.steps },
      branch,
      nftBeta: options.nftBeta,
    });
    folder.logMetrics({ step, ...metrics });
    log(`step ${step}: reward ${metrics['reward/mean'].toFixed(4)} loss ${metrics['loss/total'].toExponential(3)}`);
    if (step % options.evalEvery === 0 || step === options.steps) after = evaluate(step);
    state = { ...state, step, phaseStep: step, extra: { evalAfter: after } };
    if (!checkpointing) continue;
    // After the step's evaluation, so the checkpoint's log lengths include it and a resume does not repeat it.
    if (savesCheckpointAt(checkpointing, step, options.steps))
      saveFlowCheckpoint(checkpointing.folder, training, state, checkpointing.keepLast);
    await stopIfAborted(checkpointing.signal, step);
  }
  writeFolderAtomically(join(folder.directory, 'model'), (directory) => saveFlowModel(model, directory));
  return { before, after, minutes: (Date.now() - started) / 60000 };
}

/** An evaluation reward a checkpoint recorded; a missing one is an error naming the field. */
function evaluationReward(value: unknown, field: string, step: number): number {
  if (typeof value !== 'number')
    throw new Error(`trainer-state.json of step-${step}: ${field} must be a number (the evaluation reward)`);
  return value;
}
