/**
 * The image rewards a flow recipe can weight (`flow.rl.rewards: { name: weight }`): a registry on the
 * shared named registry (src/registry/) holding the built-ins of src/flow/image-rewards/ (one file each)
 * and any a recipe adds through its `parts`; scoring a batch as their weighted sum (weight 0 = logged
 * only, as for text rewards).
 *
 * Is: the registry, its checks and the weighted sum. Is not: an entry's type (image-reward.ts) nor any
 * reward's maths (src/rewards/image.ts, digit-classifier.ts).
 */
import { createNamedRegistry } from '../registry/registry.js';
import type { DigitClassifier } from './digit-classifier.js';
import type { ImageReward } from './image-reward.js';
import { centrednessReward } from './image-rewards/centredness.js';
import { compressibilityReward } from './image-rewards/compressibility.js';
import { confidenceReward } from './image-rewards/confidence.js';
import { symmetryReward } from './image-rewards/symmetry.js';
import { thicknessReward } from './image-rewards/thickness.js';
import { winRateImageReward } from './image-rewards/win-rate.js';

/** The image rewards by name, in `grpo list` order (re-adding the same scoring function is a no-op). */
export const imageRewards = createNamedRegistry<ImageReward>('image reward', {
  sameEntry: (existing, added) => existing.score === added.score,
  what: 'scoring function',
});
for (const reward of [
  confidenceReward,
  thicknessReward,
  centrednessReward,
  symmetryReward,
  compressibilityReward,
  winRateImageReward,
])
  imageRewards.add(reward);

/**
 * Adds one image reward defined outside this library (a recipe's `parts` entry, `defineImageReward`),
 * so `flow.rl.rewards` can weight it like a built-in; throws naming `where` for a malformed entry.
 */
export function registerImageReward(reward: ImageReward, where = 'image reward'): void {
  if (typeof reward.score !== 'function')
    throw new Error(`${where}: an image reward needs score(batch) returning one number per image (defineImageReward)`);
  if (typeof reward.description !== 'string' || typeof reward.citation !== 'string')
    throw new Error(
      `${where}: an image reward needs a description and a citation (both strings), printed by grpo list`,
    );
  if (typeof reward.needsClassifier !== 'boolean' || !Array.isArray(reward.options))
    throw new Error(
      `${where}: needsClassifier (boolean) and options (array) are missing; build it with defineImageReward`,
    );
  try {
    imageRewards.add(reward);
  } catch (error) {
    throw new Error(`${where}: ${(error as Error).message}`);
  }
}

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

/** Whether any weighted reward scores with the digit classifier (so a run must have or train one). */
export function rewardsNeedClassifier(weights: Record<string, number>): boolean {
  return Object.keys(weights).some((name) => imageRewards.has(name) && imageRewards.entry(name).needsClassifier);
}

/**
 * Per-image total (weighted sum) and each named reward's scores; a reward's non-finite or missing score
 * throws. `groups` (one id per image, images of one prompt share it) defaults to the labels.
 */
export function scoreImages(
  images: readonly Float32Array[],
  labels: readonly number[],
  size: number,
  weights: Record<string, number>,
  classifier: DigitClassifier | null,
  groups: readonly number[] = labels,
): { total: Float32Array; components: Record<string, Float32Array> } {
  checkRewardWeights(weights, classifier !== null);
  if (groups.length !== images.length)
    throw new Error(`scoreImages: ${groups.length} group ids for ${images.length} images`);
  const components: Record<string, Float32Array> = {};
  for (const name of Object.keys(weights)) {
    const scores = imageRewards.entry(name).score({ images, labels, groups, size, classifier });
    // A recipe's own reward is code we did not write: a wrong length or a NaN would corrupt every advantage.
    if (scores.length !== images.length)
      throw new Error(`image reward "${name}": returned ${scores.length} scores for ${images.length} images`);
    const bad = scores.findIndex((value) => !Number.isFinite(value));
    if (bad >= 0) throw new Error(`image reward "${name}": score ${scores[bad]} for image ${bad} is not finite`);
    components[name] = scores;
  }
  const total = new Float32Array(images.length);
  for (const [name, scores] of Object.entries(components))
    for (let i = 0; i < total.length; i++) total[i] += weights[name] * scores[i];
  return { total, components };
}
