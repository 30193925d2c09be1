/**
 * Image grids as PNG files (pngjs): one row per class, one column per sample, grey on black.
 * Is not: an image reader for training data (the digits come from the `mnist` package).
 */
import { PNG } from 'pngjs';
import { writeFileDurably } from '../model/durable-files.js';
import { toInk } from './digits.js';

/** Writes `rows` of images (model-space pixels, size² each) as one grid, `scale` screen pixels per image pixel. */
export function writeImageGrid(
  file: string,
  rows: readonly (readonly Float32Array[])[],
  size: number,
  scale = 2,
): void {
  const columns = Math.max(1, ...rows.map((row) => row.length));
  const gap = 1;
  const cell = size * scale + gap;
  const png = new PNG({ width: columns * cell + gap, height: rows.length * cell + gap });
  png.data.fill(255); // opaque white: the gaps between cells stay visible around black backgrounds
  rows.forEach((row, r) => {
    row.forEach((image, c) => {
      const ink = toInk(image);
      for (let y = 0; y < size * scale; y++) {
        for (let x = 0; x < size * scale; x++) {
          const value = Math.round(255 * ink[Math.floor(y / scale) * size + Math.floor(x / scale)]);
          const offset = ((r * cell + gap + y) * png.width + c * cell + gap + x) * 4;
          png.data[offset] = png.data[offset + 1] = png.data[offset + 2] = value;
        }
      }
    });
  });
  writeFileDurably(file, PNG.sync.write(png));
}
