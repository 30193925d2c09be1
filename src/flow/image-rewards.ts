/**
 * The image rewards a Flow-GRPO run can name: the digit classifier's probability of the asked-for
 * class (`confidence`) and the pixel rewards of src/rewards/image.ts, combined as a weighted sum
 * (weight 0 = logged only, as for text rewards).
 *
 * Is: the registry of image rewards (each an entry with its scoring function, on the shared named
 * registry) and scoring a batch of generated images.
 * Is not: the rewards' maths (rewards/image.ts, digit-classifier.ts).
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
import { createNamedRegistry } from '../registry/registry.js';

/** What an image reward scores: a batch of generated images [size × size] with the class each was asked for. */
export interface ImageBatch {
  images: readonly Float32Array[];
  labels: readonly number[];
  size: number;
  /** The run's digit classifier, or null when the recipe has none. */
  classifier: DigitClassifier | null;
}

/** One image reward: its entry (what `grpo list` prints) and its scoring function. */
export interface ImageReward {
  name: string;
  description: string;
  citation: string;
  /** The recipe fields it reads besides its weight. */
  options: readonly string[];
  /** True when it scores with the digit classifier (`flow.classifier` must be set). */
  needsClassifier: boolean;
  /** [images] one score per image. */
  score: (batch: ImageBatch) => Float32Array;
}

/** A reward computed from each image's ink alone (src/rewards/image.ts). */
function pixelReward(
  entry: Omit<ImageReward, 'score' | 'needsClassifier' | 'options'>,
  fn: ImageRewardFn,
): ImageReward {
  return {
    ...entry,
    options: [],
    needsClassifier: false,
    score: ({ images, labels, size }) =>
      Float32Array.from(images, (image, i) => fn({ ink: toInk(image), size, label: labels[i] })),
  };
}

/** The image rewards a flow recipe may weight (`flow.rl.rewards: { name: weight }`), in `grpo list` order. */
export const imageRewards = createNamedRegistry<ImageReward>('image reward');
for (const reward of [
  {
    name: 'confidence',
    description: "the digit classifier's probability of the class asked for (needs a classifier)",
    citation: 'src/flow/digit-classifier.ts',
    options: ['flow.classifier'],
    needsClassifier: true,
    score: ({ images, labels, classifier }: ImageBatch) =>
      Float32Array.from(classProbabilities(classifier!, images), (row, i) => row[labels[i]]),
  },
  pixelReward(
    {
      name: 'thickness',
      description: 'mean ink: thicker (bolder) strokes score higher',
      citation: 'src/rewards/image.ts',
    },
    strokeThickness,
  ),
  pixelReward(
    {
      name: 'centredness',
      description: 'how close the ink centre is to the image centre',
      citation: 'src/rewards/image.ts',
    },
    centredness,
  ),
  pixelReward(
    { name: 'symmetry', description: 'left-right mirror similarity of the ink', citation: 'src/rewards/image.ts' },
    leftRightSymmetry,
  ),
  pixelReward(
    {
      name: 'compressibility',
      description: '1 − deflated bytes / pixels (PNG scanlines, zlib level 9): simpler images score higher',
      citation: 'DDPO / Flow-GRPO jpeg_compressibility, lossless here',
    },
    compressibility,
  ),
])
  // prettier-ignore
  imageRewards.add(reward);

/** Throws naming the field when a weight names no reward or a needed classifier is absent. */
export function checkRewardWeights(weights: Record<string, number>, hasClassifier: boolean): void {
  const names = Object.keys(weights);
  const known = imageRewards.names().join(', ');
  if (names.length === 0) throw new Error(`rewards: give at least one of ${known}`);
  for (const name of names) {
    if (!imageRewards.has(name)) throw new Error(`rewards.${name}: unknown image reward; known: ${known}`);
    if (!Number.isFinite(weights[name])) throw new Error(`rewards.${name}: weight must be a finite number`);
  }
  for (const name of names)
    if (imageRewards.entry(name).needsClassifier && !hasClassifier)
      throw new Error(`rewards.${name}: needs a digit classifier (--classifier)`);
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
  for (const name of Object.keys(weights))
    components[name] = imageRewards.entry(name).score({ images, labels, size, classifier });
  const total = new Float32Array(images.length);
  for (const [name, scores] of Object.entries(components))
    for (let i = 0; i < total.length; i++) total[i] += weights[name] * scores[i];
  return { total, components };
}
