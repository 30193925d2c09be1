/**
 * Digits, PNG grids, the classifier and the image-reward combination: pooling by hand, a grid that
 * pngjs reads back with the expected size and pixels, a classifier that learns, weighted scores.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { classifierAccuracy, loadClassifier, saveClassifier, trainClassifier } from './digit-classifier.js';
import { loadDigits, poolDigit, toInk } from './digits.js';
import { scoreImages } from './image-rewards.js';
import { writeImageGrid } from './png.js';

describe('digits', () => {
  it('pools 28×28 ink by 2×2 means into [−1, 1]', () => {
    const ink = new Float32Array(784);
    ink[0] = ink[1] = ink[28] = ink[29] = 1; // the top-left 2×2 block fully inked
    ink[2] = 0.5; // half of one pixel of the next block
    const pooled = poolDigit(ink, 14);
    expect(pooled.length).toBe(196);
    expect(pooled[0]).toBe(1); // mean 1 → +1
    expect(pooled[1]).toBeCloseTo(2 * (0.5 / 4) - 1, 6); // mean 0.125
    expect(pooled[2]).toBe(-1); // empty → −1
    expect(() => poolDigit(ink, 13)).toThrow(/must divide 28/);
    expect(Array.from(toInk([-1, 0, 1, 3]))).toEqual([0, 0.5, 1, 1]);
  });

  it('loads labelled MNIST digits in a fixed order, classes interleaved, splits disjoint', () => {
    const digits = loadDigits(14, 'test', 50);
    expect(digits.images.length).toBe(50);
    expect(digits.labels.slice(0, 10)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]); // round-robin over classes
    expect(loadDigits(14, 'test', 50).images).toEqual(digits.images); // reproducible: no Math.random shuffle
    const training = loadDigits(14, 'training', 10);
    expect(training.labels).toEqual(digits.labels.slice(0, 10));
    for (let i = 0; i < 10; i++) expect(training.images[i]).not.toEqual(digits.images[i]); // different digits of a class
  });
});

describe('image grids, classifier and rewards', () => {
  it('writes a PNG grid pngjs reads back', () => {
    const directory = mkdtempSync(join(tmpdir(), 'flow-png-'));
    try {
      const white = new Float32Array(4).fill(1);
      const black = new Float32Array(4).fill(-1);
      writeImageGrid(join(directory, 'grid.png'), [[white, black], [black]], 2, 3);
      const png = PNG.sync.read(readFileSync(join(directory, 'grid.png')));
      expect([png.width, png.height]).toEqual([2 * 7 + 1, 2 * 7 + 1]); // cells of 2·3 pixels + 1-pixel gaps
      expect(png.data[(1 * png.width + 1) * 4]).toBe(255); // first cell: white ink
      expect(png.data[(1 * png.width + 8) * 4]).toBe(0); // second cell: black
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('trains a classifier that beats chance by far, saves and reloads it', () => {
    const training = loadDigits(14, 'training', 2000);
    const test = loadDigits(14, 'test', 300);
    const classifier = trainClassifier(training, { epochs: 2, batchSize: 50, learningRate: 3e-3, seed: 1 });
    const accuracy = classifierAccuracy(classifier, test);
    expect(accuracy).toBeGreaterThan(0.7); // chance is 0.1
    const directory = mkdtempSync(join(tmpdir(), 'flow-classifier-'));
    try {
      saveClassifier(classifier, directory);
      expect(classifierAccuracy(loadClassifier(directory), test)).toBe(accuracy);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    const scores = scoreImages(
      test.images.slice(0, 20),
      test.labels.slice(0, 20),
      14,
      { confidence: 1, thickness: 0.5 },
      classifier,
    );
    for (let i = 0; i < 20; i++)
      expect(scores.total[i]).toBeCloseTo(scores.components.confidence[i] + 0.5 * scores.components.thickness[i], 6);
    expect(() => scoreImages([], [], 14, { boldness: 1 }, classifier)).toThrow(
      /rewards.boldness: unknown image reward/,
    );
    expect(() => scoreImages([], [], 14, { confidence: 1 }, null)).toThrow(/needs a digit classifier/);
  });
});
