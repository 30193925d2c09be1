/**
 * Numeric assertions and draws the tests share: element-wise closeness, the largest difference
 * between two arrays, and seeded normal tensors.
 *
 * Is not: shipped (it imports vitest), or a gradient check (that is `src/testing/gradcheck.ts`).
 */
import { expect } from 'vitest';
import { type Random, randomNormal } from '../../src/tensor/random.js';
import type { Tensor } from '../../src/tensor/tensor.js';

/** Asserts equal lengths and |actual[i] − expected[i]| ≤ tolerance at every index, naming the index. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance: number): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++)
    expect(Math.abs(actual[i]! - expected[i]!), `index ${i}: ${actual[i]} vs ${expected[i]}`).toBeLessThanOrEqual(
      tolerance,
    );
}

/** {@link expectClose} with a file's usual tolerance, which a call may still override. */
export function expectCloseWithin(
  defaultTolerance: number,
): (actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance?: number) => void {
  return (actual, expected, tolerance = defaultTolerance) => expectClose(actual, expected, tolerance);
}

/** Asserts equal lengths, then returns max |actual[i] − expected[i]| (NaN if any difference is NaN; 0 for empty arrays). */
export function maxDifference(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
  return worst;
}

/** A draw of standard-normal tensors (times `scale`) from one seeded generator, in call order. */
export function normalSampler(random: Random): (shape: number[], scale?: number) => Tensor {
  return (shape, scale = 1) => randomNormal(shape, random, scale);
}
