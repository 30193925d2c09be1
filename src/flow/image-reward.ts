/**
 * What one flow image reward is: the batch it scores, its entry (name, description, citation, the recipe
 * fields it reads, whether it needs the digit classifier, its scoring function) and `defineImageReward`,
 * which types an entry for the registry — the built-ins in src/flow/image-rewards/ and a recipe's own
 * (its `parts`, docs/image-models.md).
 *
 * Is: the types and two small helpers. Is not: the registry or the scoring of a run (image-rewards.ts),
 * nor any reward's maths (src/rewards/image.ts, digit-classifier.ts).
 */
import type { ImageRewardFn } from '../rewards/image.js';
import type { DigitClassifier } from './digit-classifier.js';
import { toInk } from './digits.js';

/** What an image reward scores: a batch of generated images [size × size] with the class each was asked for. */
export interface ImageBatch {
  /** The model's pixels, row-major, in its data range (−1 background … 1 ink); `toInk` maps them to [0, 1]. */
  images: readonly Float32Array[];
  labels: readonly number[];
  /**
   * The group each image was drawn in (one prompt's samples share an id): group-relative rewards such
   * as `win-rate` compare only images of one group. Evaluation batches group by class.
   */
  groups: readonly number[];
  size: number;
  /** The run's digit classifier, or null when the recipe has none. */
  classifier: DigitClassifier | null;
}

/** One image reward: its entry (what `grpo list` prints) and its scoring function. */
export interface ImageReward {
  /** Marks it as an image reward among a recipe's `parts` (the algorithm parts carry their own kinds). */
  kind: 'image reward';
  name: string;
  description: string;
  citation: string;
  /** The recipe fields it reads besides its weight. */
  options: readonly string[];
  /** True when it scores with the digit classifier (`flow.classifier`, or one the run trains). */
  needsClassifier: boolean;
  /** [images] one finite score per image. */
  score: (batch: ImageBatch) => Float32Array;
}

/**
 * Types an image reward's entry; `options` defaults to none and `needsClassifier` to false.
 * @example defineImageReward({ name: 'top-heavy', description: '…', citation: '…', score: ({ images }) => … })
 */
export function defineImageReward(
  entry: Omit<ImageReward, 'kind' | 'options' | 'needsClassifier'> &
    Partial<Pick<ImageReward, 'options' | 'needsClassifier'>>,
): ImageReward {
  return { kind: 'image reward', options: [], needsClassifier: false, ...entry };
}

/** An image reward computed from each image's ink alone (a plain function of src/rewards/image.ts). */
export function pixelImageReward(
  entry: Pick<ImageReward, 'name' | 'description' | 'citation'>,
  fn: ImageRewardFn,
): ImageReward {
  return defineImageReward({
    ...entry,
    score: ({ images, labels, size }) =>
      Float32Array.from(images, (image, index) => fn({ ink: toInk(image), size, label: labels[index] })),
  });
}
