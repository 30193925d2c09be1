/**
 * `grpo flow pretrain|classifier|train|sample`: the image-generator jobs (docs/image-models.md).
 * Flags map 1:1 to the options of src/flow/ (pretrain-run.ts, flow-run.ts); every value is checked
 * there, naming the field, before any compute. These are one-shot jobs: `grpo flow train` writes
 * config.json, metrics.jsonl, the sample grids and model/, but no checkpoints; a resumable run is
 * `grpo train <flow recipe>` (cli/train-flow.ts).
 * Is not: any training logic.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { join } from 'node:path';
import {
  runFlowGrpo,
  defaultFlowRunOptions,
  type FlowRunOptions,
  loadImageFlowModel,
  validateFlowRunOptions,
} from '../flow/flow-run.js';
import { checkRewardWeights, imageRewards } from '../flow/image-rewards.js';
import { writeImageGrid } from '../flow/png.js';
import { defaultFlowPretrainOptions, runClassifierTraining, runFlowPretrain } from '../flow/pretrain-run.js';
import { finalImages, sampleTrajectory, stepsAt } from '../flow/sample.js';
import { RunFolder, writeJsonAtomically } from '../run/run-folder.js';
import { Random } from '../tensor/random.js';

const number = (value: string): number => {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new InvalidArgumentError(`"${value}" is not a number`);
  return parsed;
};
const rewardWeight = (value: string, previous: Record<string, number> | undefined): Record<string, number> => {
  const [name, weight] = value.split(':');
  return { ...previous, [name]: weight === undefined ? 1 : number(weight) };
};
const print = (line: string) => process.stdout.write(`${line}\n`);

/** Adds `grpo flow ...` to the program. */
export function addFlowCommands(program: Command): void {
  const flow = program
    .command('flow')
    .description('image generators: a rectified-flow model on MNIST digits and Flow-GRPO');
  const p = defaultFlowPretrainOptions;
  flow
    .command('pretrain')
    .description('pre-train a class-conditional flow model on the MNIST digits by flow matching')
    .requiredOption('--out <directory>', 'checkpoint folder to write (config.json, model.safetensors, samples.png)')
    .option('--steps <n>', 'optimiser steps', number, p.steps)
    .option('--batch-size <n>', 'digits per step', number, p.batchSize)
    .option('--learning-rate <x>', 'AdamW learning rate', number, p.learningRate)
    .option('--hidden-size <n>', 'model width', number, p.hiddenSize)
    .option('--blocks <n>', 'adaLN blocks', number, p.numBlocks)
    .option('--image-size <n>', 'image side: 28, or 14 / 7 (average-pooled)', number, p.imageSize)
    .option('--seed <n>', 'seed', number, p.seed)
    .action(async (options) => {
      const result = await runFlowPretrain(options.out, { ...options, numBlocks: options.blocks }, print);
      print(
        `final flow-matching loss ${result.loss.toFixed(4)} in ${result.minutes.toFixed(1)} min; wrote ${options.out}`,
      );
    });
  flow
    .command('classifier')
    .description('train the digit classifier used as the `confidence` reward')
    .requiredOption('--out <directory>', 'checkpoint folder to write')
    .option('--epochs <n>', 'passes over the training digits', number, 5)
    .option('--image-size <n>', 'image side (must match the flow model)', number, p.imageSize)
    .option('--seed <n>', 'seed', number, 1)
    .action((options) => {
      const { accuracy } = runClassifierTraining(options.out, options);
      print(`held-out accuracy ${accuracy.toFixed(4)}; wrote ${options.out}`);
    });
  const d = defaultFlowRunOptions;
  flow
    .command('train')
    .description(
      'Flow-GRPO or DiffusionNFT from a pre-trained flow model; writes the run folder (metrics.jsonl, sample grids, model/)',
    )
    .requiredOption('--model <directory>', 'pre-trained flow model (grpo flow pretrain)')
    .option('--classifier <directory>', 'digit classifier (grpo flow classifier), needed by the confidence reward')
    .requiredOption('--out <directory>', 'run folder to write')
    .option('--steps <n>', 'RL steps', number, d.steps)
    .option('--prompts-per-step <n>', 'class prompts per step', number, d.promptsPerStep)
    .option('--group-size <n>', 'samples per prompt (G)', number, d.groupSize)
    .option('--sampler <name>', 'stochastic step: sde, cps or dance', d.sampler)
    .option('--noise-level <x>', 'a (sde, cps) or η (dance)', number, d.noiseLevel)
    .option('--sampling-steps <n>', 'sampler steps N', number, d.samplingSteps)
    .option('--shift <x>', 'time shift of the σ schedule (1 = uniform)', number, d.shift)
    .option('--train-fraction <x>', 'fraction of the steps trained (the first ones)', number, d.trainFraction)
    .option(
      '--timestep-selection <name>',
      'first (Flow-GRPO: the first steps) or dance (DanceGRPO: a random subset per sample, never the last)',
      d.timestepSelection,
    )
    .option('--clip-range <x>', 'PPO clip range ε', number, d.clipRange)
    .option('--advantage-clip <x>', 'advantages clipped to ±this', number, d.advantageClip)
    .option('--kl <x>', 'β of the step-mean KL to the frozen start model', number, d.klCoefficient)
    .option('--advantage <name>', 'advantage estimator (grpo list)', d.advantageEstimator)
    .option('--inner-steps <n>', 'AdamW updates per rollout', number, d.innerSteps)
    .option('--learning-rate <x>', 'AdamW learning rate', number, d.learningRate)
    .option(
      '--reward <name[:weight]>',
      `${imageRewards.names().join(', ')} (repeatable; default confidence)`,
      rewardWeight,
    )
    .option('--seed <n>', 'seed', number, d.seed)
    .option('--eval-every <n>', 'evaluate (Euler sampler, fixed noise) every n steps', number, d.evalEvery)
    .option('--eval-per-class <n>', 'evaluation samples per class', number, d.evalPerClass)
    .option(
      '--algorithm <name>',
      'flow-grpo, grpo-guard or tempflow-grpo (Flow-GRPO variants, sampler sde), or nft (DiffusionNFT: no log-probs, any sampler incl. ode)',
      d.algorithm,
    )
    .option('--nft-beta <x>', 'DiffusionNFT: β of the implicit policies', number, d.nftBeta)
    .option('--window <size>', 'MixGRPO: SDE and training only in a sliding window of this many steps', number)
    .option('--window-shift-every <n>', 'MixGRPO: RL steps between window moves', number, 25)
    .option('--window-stride <n>', 'MixGRPO: steps the window moves each time', number, 1)
    .option('--window-roll-back', 'MixGRPO: restart the window at step 0 after the end')
    .action(async (options) => {
      const {
        model,
        classifier,
        out,
        kl,
        advantage,
        reward,
        window,
        windowShiftEvery,
        windowStride,
        windowRollBack,
        ...rest
      } = options;
      const runOptions: FlowRunOptions = {
        ...d,
        ...rest,
        klCoefficient: kl,
        advantageEstimator: advantage,
        rewards: reward ?? d.rewards,
        window:
          window === undefined
            ? null
            : { size: window, shiftEvery: windowShiftEvery, stride: windowStride, rollBack: windowRollBack === true },
      };
      const folders = { model, classifier: classifier ?? null };
      validateFlowRunOptions(runOptions); // before the folder is made, as runFlowGrpo checks them again
      checkRewardWeights(runOptions.rewards, folders.classifier !== null);
      const folder = new RunFolder(out);
      writeJsonAtomically(join(out, 'config.json'), { ...folders, run: out, ...runOptions });
      const result = await runFlowGrpo(folders, folder, runOptions, print);
      print(
        `eval reward ${result.before.toFixed(4)} → ${result.after.toFixed(4)} in ${result.minutes.toFixed(1)} min; wrote ${out}`,
      );
    });
  flow
    .command('sample')
    .description('draw a grid of samples (one row per class) from a flow model')
    .requiredOption('--model <directory>', 'flow model folder')
    .requiredOption('--out <file>', 'PNG file to write')
    .option('--sampler <name>', 'ode, sde, cps or dance', 'ode')
    .option('--sampling-steps <n>', 'sampler steps N', number, 20)
    .option('--noise-level <x>', 'a (sde, cps) or η (dance)', number, 0.7)
    .option('--per-class <n>', 'samples per class', number, 8)
    .option('--seed <n>', 'seed', number, 1)
    .action((options) => {
      const model = loadImageFlowModel(options.model);
      const sampler = {
        sigmas: flowSigmas(options.samplingSteps),
        steps: options.sampler,
        noiseLevel: options.noiseLevel,
      };
      stepsAt(sampler); // refuses an unknown sampler name before sampling
      const perClass: number = options.perClass;
      if (!Number.isInteger(perClass) || perClass < 1)
        throw new Error(`--per-class must be a positive integer, got ${perClass}`);
      const classes = Array.from({ length: model.config.numClasses }, (_, label) =>
        Array<number>(perClass).fill(label),
      ).flat();
      const images = finalImages(sampleTrajectory(model, classes, sampler, new Random(options.seed)));
      const rows = Array.from({ length: model.config.numClasses }, (_, label) =>
        images.slice(label * perClass, (label + 1) * perClass),
      );
      writeImageGrid(options.out, rows, model.config.imageSize, 2);
      print(`wrote ${options.out}`);
    });
}
