/**
 * Pixel rewards for generated grey images: stroke thickness (ink), centredness, left-right
 * symmetry and compressibility (the deflated size, Flow-GRPO's compression reward). Each is a plain function of ink values in [0, 1] (0 = background), row-major size×size,
 * returning a score in [0, 1].
 *
 * Is: number-array maths. Is not: learned rewards (the digit classifier lives in src/flow/, since it
 * needs tensors) nor text rewards (RewardFn in types.ts sees strings; an image is not a string).
 */

import { deflateRawSync } from 'node:zlib';

/** What an image reward sees: the image and the class it was asked for. */
export interface ImageRewardInput {
  /** Ink in [0, 1], row-major, size × size. */
  ink: Float32Array;
  size: number;
  /** The class the image was generated for (a digit). */
  label: number;
}

/** An image reward: a plain function returning a finite score. */
export type ImageRewardFn = (input: ImageRewardInput) => number;

/** Mean ink: thicker (bolder) strokes score higher. An empty image 0, a full one 1. */
export const strokeThickness: ImageRewardFn = ({ ink }) => ink.reduce((total, value) => total + value, 0) / ink.length;

/**
 * 1 − (distance of the ink's centre of mass from the image centre) / (half the diagonal).
 * A centred digit scores near 1; an image without ink scores 0 (nothing to centre).
 */
export const centredness: ImageRewardFn = ({ ink, size }) => {
  let mass = 0;
  let rowMoment = 0;
  let columnMoment = 0;
  for (let row = 0; row < size; row++) {
    for (let column = 0; column < size; column++) {
      const value = ink[row * size + column];
      mass += value;
      rowMoment += value * row;
      columnMoment += value * column;
    }
  }
  if (mass === 0) return 0;
  const centre = (size - 1) / 2;
  const distance = Math.hypot(rowMoment / mass - centre, columnMoment / mass - centre);
  return 1 - distance / (Math.SQRT2 * centre);
};

/** 1 − mean |ink(row, column) − ink(row, size−1−column)|: a mirror-symmetric image scores 1. */
export const leftRightSymmetry: ImageRewardFn = ({ ink, size }) => {
  let difference = 0;
  for (let row = 0; row < size; row++)
    for (let column = 0; column < size; column++)
      difference += Math.abs(ink[row * size + column] - ink[row * size + size - 1 - column]);
  return 1 - difference / ink.length;
};

/**
 * Compressibility, 1 − (deflated bytes / pixels), clamped to [0, 1]: the image as 8-bit grey scanlines,
 * each led by PNG's filter byte 0 (PNG's "None" filter, so this is the size of a PNG's pixel data without
 * its fixed headers), compressed by node's zlib (raw deflate, level 9). Flat or simple images score near
 * 1, noise 0. The counterpart of Flow-GRPO's / DDPO's `jpeg_compressibility` (−JPEG size), with
 * lossless deflate instead of JPEG and normalised by the pixel count so sizes compare across images.
 * Black et al. 2023, DDPO (arXiv:2305.13301); Liu et al. 2025, Flow-GRPO `rewards.py`.
 */
export const compressibility: ImageRewardFn = ({ ink, size }) => {
  const scanlines = Buffer.alloc(size * (size + 1)); // one filter byte (0) per row, then the row's pixels
  for (let row = 0; row < size; row++)
    for (let column = 0; column < size; column++)
      scanlines[row * (size + 1) + 1 + column] = Math.round(255 * Math.min(1, Math.max(0, ink[row * size + column])));
  const compressed = deflateRawSync(scanlines, { level: 9 }).length;
  return Math.min(1, Math.max(0, 1 - compressed / ink.length));
};
