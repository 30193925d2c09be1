/**
 * SPO's per-prompt value tracker (step-signal.ts) against hand-computed vectors: a first visit
 * starts from the authors' ½ prior (so G = 1 gives a non-zero advantage), later visits discount by ρ.
 * Is not: the estimator's batch normalisation (algorithms/advantages-structured.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { trackedBaseline, trackerDiscount, updateTrackedValue } from './step-signal.js';

const completion = { promptIds: [1], completionIds: [2], logprobs: [-0.5] };

describe('single-stream value tracker', () => {
  it('a first visit with one sample has a non-zero advantage r − v̂', () => {
    expect(1 - trackedBaseline(undefined, [1])).toBeCloseTo(0.25, 12); // v̂ = (1 + ½)/(1 + 1)
    expect(0 - trackedBaseline(undefined, [0])).toBeCloseTo(-0.25, 12);
    expect(trackedBaseline(undefined, [])).toBe(0.5); // the authors' α = β = ½ without offline samples
    expect(trackedBaseline(undefined, [1, 1, 0, Number.NaN])).toBeCloseTo(2.5 / 4, 12);
  });

  it('the entry keeps the prior half-counts, then discounts by ρ', () => {
    const first = updateTrackedValue(undefined, 0.9, [1], completion);
    expect(first).toMatchObject({ sum: 1.5, weight: 2, completionIds: [2] });
    expect(trackedBaseline(first, [0])).toBeCloseTo(0.75, 12);
    const second = updateTrackedValue(first, 0.9, [0], null);
    expect(second.sum).toBeCloseTo(0.9 * 1.5, 12);
    expect(second.weight).toBeCloseTo(0.9 * 2 + 1, 12);
    expect(second.completionIds).toEqual([2]);
  });

  it('ρ = clip(2^(−D/D_half), ρ_min, ρ_max)', () => {
    const options = { halfLifeKl: 0.06, minDiscount: 0.875, maxDiscount: 0.96 };
    expect(trackerDiscount(0, options)).toBe(0.96);
    expect(trackerDiscount(0.06 * Math.log2(1 / 0.9), options)).toBeCloseTo(0.9, 12);
    expect(trackerDiscount(1, options)).toBe(0.875);
  });
});
