/** Pixel rewards from case tables: each case says why it scores what it scores. */
import { describe, expect, it } from 'vitest';
import { deflateRawSync } from 'node:zlib';
import { centredness, compressibility, leftRightSymmetry, strokeThickness } from './image.js';

const image = (rows: number[][]) => ({ ink: Float32Array.from(rows.flat()), size: rows.length, label: 0 });

describe('image rewards', () => {
  it('stroke thickness is the mean ink', () => {
    expect(
      strokeThickness(
        image([
          [0, 0],
          [0, 0],
        ]),
      ),
    ).toBe(0); // empty
    expect(
      strokeThickness(
        image([
          [1, 0],
          [0, 1],
        ]),
      ),
    ).toBe(0.5); // half inked
    expect(
      strokeThickness(
        image([
          [1, 1],
          [1, 1],
        ]),
      ),
    ).toBe(1); // full
  });
  it('centredness: 1 at the centre, 0 in a corner, 0 without ink', () => {
    expect(
      centredness(
        image([
          [0, 0, 0],
          [0, 1, 0],
          [0, 0, 0],
        ]),
      ),
    ).toBeCloseTo(1, 6); // ink at the centre
    expect(
      centredness(
        image([
          [1, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ]),
      ),
    ).toBeCloseTo(0, 6); // a corner: distance = half diagonal
    expect(
      centredness(
        image([
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ]),
      ),
    ).toBe(0); // nothing to centre
    expect(
      centredness(
        image([
          [0, 1, 0],
          [0, 0, 0],
          [0, 0, 0],
        ]),
      ),
    ).toBeCloseTo(1 - 1 / Math.SQRT2, 6); // one row up
  });
  it('left-right symmetry: 1 for a mirror image, lower for a one-sided one', () => {
    expect(
      leftRightSymmetry(
        image([
          [1, 0, 1],
          [0, 1, 0],
          [1, 0, 1],
        ]),
      ),
    ).toBe(1); // mirror-symmetric
    expect(
      leftRightSymmetry(
        image([
          [1, 0],
          [1, 0],
        ]),
      ),
    ).toBe(0); // all ink on the left: every pair differs by 1
  });

  it('compressibility: 1 − deflated PNG scanline bytes / pixels; blank > a stroke > noise (0)', () => {
    const side = 14;
    const blank = Array.from({ length: side }, () => Array<number>(side).fill(0));
    const bar = blank.map((row) => row.map((_, column) => (column === 6 || column === 7 ? 1 : 0)));
    let state = 12345; // a fixed LCG: noise that deflate cannot shrink
    const noise = blank.map((row) =>
      row.map(() => ((state = (state * 1103515245 + 12345) % 2 ** 31), state / 2 ** 31)),
    );
    const [blankScore, barScore, noiseScore] = [blank, bar, noise].map((rows) => compressibility(image(rows)));
    // The bar's scanlines written out: filter byte 0, then 6 zeros, two 255s, 6 zeros per row.
    const barBytes = Buffer.from(
      Array.from({ length: side }, () => [0, ...Array(6).fill(0), 255, 255, ...Array(6).fill(0)]).flat(),
    );
    expect(barScore).toBeCloseTo(1 - deflateRawSync(barBytes, { level: 9 }).length / (side * side), 10);
    expect(blankScore).toBeGreaterThan(0.9); // a few bytes of deflate for 210 zeros
    expect(blankScore).toBeGreaterThan(barScore); // a stroke costs bytes
    expect(barScore).toBeGreaterThan(0.5);
    expect(noiseScore).toBe(0); // random bytes do not compress: clamped at 0
    const speckled = bar.map((row, r) => row.map((value, c) => ((r * 7 + c * 3) % 5 === 0 ? 0.5 : value)));
    expect(compressibility(image(speckled))).toBeLessThan(barScore); // speckle in the background costs bytes
  });
});
