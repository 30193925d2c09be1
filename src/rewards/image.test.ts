/** Pixel rewards from case tables: each case says why it scores what it scores. */
import { describe, expect, it } from 'vitest';
import { centredness, leftRightSymmetry, strokeThickness } from './image.js';

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
});
