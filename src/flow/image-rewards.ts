/**
 * The image rewards a Flow-GRPO run can name: the digit classifier's probability of the asked-for
 * class (`confidence`) and the pixel rewards of src/rewards/image.ts, combined as a weighted sum
 * (weight 0 = logged only, as for text rewards).
 *
 * Is: scoring a batch of generated images. Is not: the rewards' maths (rewards/image.ts, digit-classifier.ts).
 */
import {
  centredness,
  compressibility,
  type ImageRewardFn,
  leftRightSymmetry,
  strokeThickness,
} from '../rewards/image.js';
import { type DigitClassifier, classProbabilities } from './digit-classifier.js';
import { toInk } from './digits.js';

/** The reward names a config may weight. */
export const imageRewardNames = ['confidence', 'thickness', 'centredness', 'symmetry', 'compressibility'] as const;
export type ImageRewardName = (typeof imageRewardNames)[number];

const pixelRewards: Record<Exclude<ImageRewardName, 'confidence'>, ImageRewardFn> = {
  thickness: strokeThickness,
  centredness,
  symmetry: leftRightSymmetry,
  compressibility,
};

/** Throws naming the field when a weight names no reward or a needed classifier is absent. */
export function checkRewardWeights(weights: Record<string, number>, hasClassifier: boolean): void {
  const names = Object.keys(weights);
  if (names.length === 0) throw new Error(`rewards: give at least one of ${imageRewardNames.join(', ')}`);
  for (const name of names) {
    if (!(imageRewardNames as readonly string[]).includes(name))
      throw new Error(`rewards.${name}: unknown image reward; known: ${imageRewardNames.join(', ')}`);
    if (!Number.isFinite(weights[name])) throw new Error(`rewards.${name}: weight must be a finite number`);
  }
  if ('confidence' in weights && !hasClassifier)
    throw new Error('rewards.confidence: needs a digit classifier (--classifier)');
}

/** Per-image total (weighted sum) and each named reward's scores. */
export function scoreImages(
  images: readonly Float32Array[],
  labels: readonly number[],
  size: number,
  weights: Record<string, number>,
  classifier: DigitClassifier | null,
): { total: Float32Array; components: Record<string, Float32Array> } {
  checkRewardWeights(weights, classifier !== null);
  const components: Record<string, Float32Array> = {};
  for (const name of Object.keys(weights) as ImageRewardName[]) {
    if (name === 'confidence') {
      const probabilities = classProbabilities(classifier!, images);
      components[name] = Float32Array.from(probabilities, (row, i) => row[labels[i]]);
    } else {
      const fn = pixelRewards[name];
      components[name] = Float32Array.from(images, (image, i) => fn({ ink: toInk(image), size, label: labels[i] }));
    }
  }
  const total = new Float32Array(images.length);
  for (const [name, scores] of Object.entries(components))
    for (let i = 0; i < total.length; i++) total[i] += weights[name] * scores[i];
  return { total, components };
}
