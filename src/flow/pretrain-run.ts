/**
 * The pre-training jobs as runnable units: a flow model by flow matching on the MNIST digits (with a
 * sample grid from the Euler sampler), resumable from the run folder's checkpoints when run by
 * `grpo train`, and the digit classifier used as a reward (with its test accuracy). Each writes its
 * output folder (config.json + model.safetensors) whole, by rename.
 *
 * Is: the loop, orchestration and files. Is not: the losses (pretrain.ts, digit-classifier.ts), the
 * checkpoint format (flow-checkpoint.ts) or CLI parsing.
 */
import { join } from 'node:path';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { defaultFlowModelConfig, initFlowModel, saveFlowModel } from '../model/flow-mlp.js';
import type { TrainerState } from '../run/run-folder.js';
import { stopIfAborted } from '../run/run-status.js';
import { Random } from '../tensor/random.js';
import { classifierAccuracy, saveClassifier, trainClassifier } from './digit-classifier.js';
import { loadDigits } from './digits.js';
import {
  type FlowCheckpointing,
  restoreFlowCheckpoint,
  saveFlowCheckpoint,
  savesCheckpointAt,
  writeFolderAtomically,
} from './flow-checkpoint.js';
import { writeImageGrid } from './png.js';
import { checkDigitSize, flowMatchingStep, pretrainOptimizer, pretrainStepRandom } from './pretrain.js';
import { finalImages, sampleTrajectory } from './sample.js';

/** Options of `runFlowPretrain`. */
export interface FlowPretrainOptions {
  steps: number;
  batchSize: number;
  learningRate: number;
  hiddenSize: number;
  numBlocks: number;
  imageSize: number;
  seed: number;
}

export const defaultFlowPretrainOptions: FlowPretrainOptions = {
  steps: 1500,
  batchSize: 64,
  learningRate: 2e-3,
  hiddenSize: defaultFlowModelConfig.hiddenSize,
  numBlocks: defaultFlowModelConfig.numBlocks,
  imageSize: defaultFlowModelConfig.imageSize,
  seed: 1,
};

function checkPositiveIntegers(options: Record<string, number>, fields: string[]): void {
  for (const field of fields)
    if (!Number.isInteger(options[field]) || options[field] < 1)
      throw new Error(`${field} must be a positive integer, got ${options[field]}`);
}

/** Throws naming the field for an option that cannot run. */
export function validateFlowPretrainOptions(options: FlowPretrainOptions): void {
  checkPositiveIntegers({ ...options }, ['steps', 'batchSize', 'hiddenSize', 'numBlocks', 'imageSize']);
  if (!(options.learningRate > 0)) throw new Error(`learningRate must be positive, got ${options.learningRate}`);
  if (28 % options.imageSize !== 0)
    throw new Error(`imageSize must divide 28 (28, 14 or 7: MNIST average-pooled), got ${options.imageSize}`);
}

/**
 * Pre-trains a flow model on the training digits; writes `out`/ (whole, by rename) with samples.png (8
 * Euler samples per class). With `checkpointing` (a `grpo train` run): one metrics.jsonl line {step,
 * phase, loss/flowMatching} per 10 steps, checkpoints, resume and a stop between steps on the signal.
 * Step k draws from pretrainStepRandom(seed, k) alone, so a resumed run replays exactly.
 */
export async function runFlowPretrain(
  out: string,
  options: FlowPretrainOptions,
  log: (line: string) => void = () => {},
  checkpointing: FlowCheckpointing | null = null,
): Promise<{ loss: number; minutes: number }> {
  validateFlowPretrainOptions(options);
  const started = Date.now();
  const digits = loadDigits(options.imageSize, 'training');
  const model = initFlowModel(
    {
      ...defaultFlowModelConfig,
      imageSize: options.imageSize,
      hiddenSize: options.hiddenSize,
      numBlocks: options.numBlocks,
    },
    options.seed,
  );
  checkDigitSize(model, digits);
  const optimizer = pretrainOptimizer(model, options.learningRate);
  let state: TrainerState = {
    step: 0,
    phase: 'pretrain',
    phaseStep: 0,
    consecutiveSkips: 0,
    evalBefore: null,
    extra: {},
  };
  if (checkpointing?.resume)
    state =
      restoreFlowCheckpoint(
        checkpointing.folder,
        { model, optimizer },
        { warn: checkpointing.warn, message: log },
        checkpointing,
      ) ?? state;
  // The losses of the last 10% of steps, whose mean is the result: carried in the checkpoint.
  const tail = state.extra.tail ?? [];
  if (!Array.isArray(tail) || tail.some((value) => typeof value !== 'number'))
    throw new Error(`trainer-state.json of step-${state.step}: extra.tail must be a list of numbers`);
  for (let step = state.step; step < options.steps; step++) {
    const value = flowMatchingStep(model, optimizer, digits, options.batchSize, pretrainStepRandom(options.seed, step));
    if (step >= options.steps * 0.9) tail.push(value);
    if (step % 100 === 0) log(`step ${step}: flow-matching loss ${value.toFixed(4)}`);
    state = { ...state, step: step + 1, phaseStep: step + 1, extra: { tail } };
    if (!checkpointing) continue;
    if (step % 10 === 0 || step === options.steps - 1)
      checkpointing.folder.logMetrics({ step: step + 1, phase: 'pretrain', 'loss/flowMatching': value });
    if (savesCheckpointAt(checkpointing, state.step, options.steps))
      saveFlowCheckpoint(checkpointing.folder, { model, optimizer }, state, checkpointing.keepLast);
    await stopIfAborted(checkpointing.signal, state.step);
  }
  const classes = Array.from({ length: 10 }, (_, label) => Array<number>(8).fill(label)).flat();
  const images = finalImages(
    sampleTrajectory(
      model,
      classes,
      { sigmas: flowSigmas(20), steps: 'ode', noiseLevel: 0 },
      new Random(options.seed + 1),
    ),
  );
  writeFolderAtomically(out, (folder) => {
    saveFlowModel(model, folder);
    writeImageGrid(
      join(folder, 'samples.png'),
      Array.from({ length: 10 }, (_, label) => images.slice(label * 8, label * 8 + 8)),
      options.imageSize,
      2,
    );
  });
  const loss = tail.reduce((a: number, b: number) => a + b, 0) / Math.max(1, tail.length);
  return { loss, minutes: (Date.now() - started) / 60000 };
}

/** Trains the digit classifier; writes `out`/ and returns its accuracy on the held-out digits. */
export function runClassifierTraining(
  out: string,
  options: { imageSize: number; epochs: number; seed: number },
): { accuracy: number } {
  checkPositiveIntegers({ ...options }, ['imageSize', 'epochs']);
  const classifier = trainClassifier(loadDigits(options.imageSize, 'training'), {
    epochs: options.epochs,
    batchSize: 64,
    learningRate: 2e-3,
    seed: options.seed,
  });
  writeFolderAtomically(out, (folder) => saveClassifier(classifier, folder));
  return { accuracy: classifierAccuracy(classifier, loadDigits(options.imageSize, 'test')) };
}
