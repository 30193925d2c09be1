/**
 * The pre-training jobs as runnable units: a flow model by flow matching on the MNIST digits (with a
 * sample grid from the Euler sampler), and the digit classifier used as a reward (with its test
 * accuracy). Each writes a checkpoint folder (config.json + model.safetensors).
 *
 * Is: orchestration and files. Is not: the losses (pretrain.ts, digit-classifier.ts) or CLI parsing.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { flowSigmas } from '../algorithms/flow-steps.js';
import { defaultFlowModelConfig, initFlowModel, saveFlowModel } from '../model/flow-mlp.js';
import { Random } from '../tensor/random.js';
import { classifierAccuracy, saveClassifier, trainClassifier } from './digit-classifier.js';
import { loadDigits } from './digits.js';
import { writeImageGrid } from './png.js';
import { pretrainFlowModel } from './pretrain.js';
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
 * Pre-trains a flow model on the training digits; writes `out`/ and `out`/samples.png (8 Euler samples per
 * class), and with `metricsFile` one line {step, phase, loss/flowMatching} per 10 steps there.
 */
export function runFlowPretrain(
  out: string,
  options: FlowPretrainOptions,
  log: (line: string) => void = () => {},
  metricsFile?: string,
): { loss: number; minutes: number } {
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
  const loss = pretrainFlowModel(model, digits, { steps: options.steps, batchSize: options.batchSize, learningRate: options.learningRate, onStep: (step, value) => {
    if (step % 100 === 0) log(`step ${step}: flow-matching loss ${value.toFixed(4)}`);
    if (metricsFile && (step % 10 === 0 || step === options.steps - 1))
      appendFileSync(metricsFile, JSON.stringify({ step: step + 1, phase: 'pretrain', 'loss/flowMatching': value }) + '\n');
  } }, new Random(options.seed)); // prettier-ignore
  saveFlowModel(model, out);
  const classes = Array.from({ length: 10 }, (_, label) => Array<number>(8).fill(label)).flat();
  const images = finalImages(
    sampleTrajectory(
      model,
      classes,
      { sigmas: flowSigmas(20), steps: 'ode', noiseLevel: 0 },
      new Random(options.seed + 1),
    ),
  );
  writeImageGrid(
    join(out, 'samples.png'),
    Array.from({ length: 10 }, (_, label) => images.slice(label * 8, label * 8 + 8)),
    options.imageSize,
    2,
  );
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
  saveClassifier(classifier, out);
  return { accuracy: classifierAccuracy(classifier, loadDigits(options.imageSize, 'test')) };
}
