/*
 * Unit tests of the dashboard page's pure helpers, run in Node: TensorBoard's debiased EMA
 * smoothing and the log-axis ticks (public/chart.js), and the shared x axis and series of compared
 * runs (public/series.js). The page files are plain browser JavaScript without type declarations,
 * so they are imported by URL and typed here by what the tests use.
 * Not tested here: drawing (SVG paths, legends, notes); dashboard.e2e.test.ts does that in Chromium.
 */
import { describe, expect, it } from 'vitest';

type Point = [number, number];
interface Series {
  name: string;
  run?: string;
  label?: string;
  colour?: string;
  dash?: string;
  points: Point[];
}
interface ChartModule {
  smoothEma(values: number[], weight: number): number[];
  logTicks(low: number, high: number, count?: number): number[];
  palette: string[];
}
interface SeriesModule {
  chartDefinitions: { id: string; names?: string[] }[];
  placeRuns(rowLists: Record<string, unknown>[][]): {
    placed: { x: number; row: Record<string, unknown> }[][];
    phases: { x: number; label: string; offset: number }[];
  };
  chartSeries(definition: unknown, placed: unknown, runIds: string[]): Series[];
}

const importPage = (file: string) => import(new URL(`./public/${file}`, import.meta.url).href);
const chart = (await importPage('chart.js')) as ChartModule;
const series = (await importPage('series.js')) as SeriesModule;

/** The debiased EMA written out as what it is, a weighted mean with weights w^(i−j): an oracle independent of the recurrence. */
function weightedMean(values: number[], weight: number): number[] {
  return values.map((_, i) => {
    let numerator = 0;
    let denominator = 0;
    for (let j = 0; j <= i; j++) {
      numerator += weight ** (i - j) * values[j];
      denominator += weight ** (i - j);
    }
    return numerator / denominator;
  });
}

describe('smoothEma (TensorBoard: last = last·w + (1−w)·y, shown last / (1 − w^n))', () => {
  it('matches hand-computed values', () => {
    // w = 0.5 on [1, 2, 3, 4]: last = 0.5, 1.25, 2.125, 3.0625; debias 0.5, 0.75, 0.875, 0.9375.
    const smoothed = chart.smoothEma([1, 2, 3, 4], 0.5);
    [1, 5 / 3, 17 / 7, 49 / 15].forEach((value, i) => expect(smoothed[i]).toBeCloseTo(value, 12));
    // w = 0.6 on [10, 0, 5]: last = 4, 2.4, 3.44; debias 0.4, 0.64, 0.784.
    const second = chart.smoothEma([10, 0, 5], 0.6);
    [10, 3.75, 3.44 / 0.784].forEach((value, i) => expect(second[i]).toBeCloseTo(value, 12));
  });

  it('equals the weighted mean with weights w^(i−j) on a longer vector', () => {
    const values = [0.3, 0.9, -0.2, 0.4, 1.7, 0.1, 0.5, 0.55, -1, 2];
    for (const weight of [0.1, 0.6, 0.9, 0.99]) {
      const smoothed = chart.smoothEma(values, weight);
      weightedMean(values, weight).forEach((value, i) => expect(smoothed[i]).toBeCloseTo(value, 10));
    }
  });

  it('starts at the first value (debiased, not pulled towards 0) and leaves weight 0 raw', () => {
    expect(chart.smoothEma([5, 7], 0.99)[0]).toBeCloseTo(5, 12);
    expect(chart.smoothEma([5, 7, 1], 0)).toEqual([5, 7, 1]);
  });

  it('passes non-finite values through without counting them, and keeps a constant series as it is', () => {
    // NaN is skipped: the third value is smoothed as if it were the second (n = 2).
    const smoothed = chart.smoothEma([1, NaN, 3], 0.5);
    expect(smoothed[1]).toBeNaN();
    expect(smoothed[2]).toBeCloseTo(weightedMean([1, 3], 0.5)[1], 12);
    expect(chart.smoothEma([0.1, 0.1, 0.1], 0.9)).toEqual([0.1, 0.1, 0.1]); // no 0.09999… from rounding
  });
});

describe('logTicks', () => {
  it('puts ticks on the powers of ten inside the range', () => {
    expect(chart.logTicks(0.0005, 2)).toEqual([0.001, 0.01, 0.1, 1]);
  });

  it('thins out many decades to about `count` ticks', () => {
    const ticks = chart.logTicks(1e-9, 1e3);
    expect(ticks.length).toBeLessThanOrEqual(5);
    expect(ticks[0]).toBe(1e-9);
    for (const tick of ticks) expect(Math.log10(tick) % 1).toBeCloseTo(0, 12);
  });

  it('falls back to linear nice ticks inside one decade, all positive', () => {
    const ticks = chart.logTicks(0.62, 0.97);
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    for (const tick of ticks) {
      expect(tick).toBeGreaterThanOrEqual(0.62);
      expect(tick).toBeLessThanOrEqual(0.97);
    }
  });
});

describe('placeRuns and chartSeries', () => {
  const sftThenGrpo = [
    { step: 1, phase: 'sft', 'loss/sft': 2 },
    { step: 2, phase: 'sft', 'loss/sft': 1 },
    { step: 1, phase: 'grpo', entropy: 1.2 },
    { step: 2, phase: 'grpo', entropy: 1.1 },
  ];
  const grpoOnly = [
    { step: 1, phase: 'grpo', entropy: 0.9 },
    { step: 2, phase: 'grpo', entropy: 0.8 },
    { step: 3, phase: 'grpo', entropy: 0.7 },
  ];

  it('places one run as before: each phase after the steps of the ones before it', () => {
    const { placed, phases } = series.placeRuns([sftThenGrpo]);
    expect(placed[0].map((entry) => entry.x)).toEqual([1, 2, 3, 4]);
    expect(phases).toEqual([
      { x: 1, label: 'sft', offset: 0 },
      { x: 3, label: 'grpo', offset: 2 },
    ]);
  });

  it('lines up the same phase of compared runs even when only one of them had an SFT phase', () => {
    const { placed } = series.placeRuns([sftThenGrpo, grpoOnly]);
    expect(placed[1].map((entry) => entry.x)).toEqual([3, 4, 5]); // GRPO step 1 at x 3 in both runs
  });

  it('gives each compared run its colour and a series per metric, one run: metrics coloured by the chart', () => {
    const entropy = series.chartDefinitions.find((definition) => definition.id === 'entropy')!;
    const one = series.placeRuns([sftThenGrpo]);
    expect(series.chartSeries(entropy, one.placed, ['a'])).toEqual([
      {
        name: 'entropy',
        points: [
          [3, 1.2],
          [4, 1.1],
        ],
      },
    ]);
    const both = series.placeRuns([sftThenGrpo, grpoOnly]);
    const compared = series.chartSeries(entropy, both.placed, ['a', 'b']);
    expect(compared.map((entry) => [entry.run, entry.label, entry.colour, entry.points.length])).toEqual([
      ['a', 'a', chart.palette[0], 2],
      ['b', 'b', chart.palette[1], 3],
    ]);
    // A run without the metric (no SFT loss in run b) adds no empty series.
    const loss = series.chartDefinitions.find((definition) => definition.id === 'loss')!;
    expect(series.chartSeries(loss, both.placed, ['a', 'b']).map((entry) => entry.run)).toEqual(['a']);
  });
});
