/**
 * Tests of the DCPO advantage estimator (#198): per-token advantages against the float64 torch
 * reference written from the authors' fit (scripts/reference/dcpo.py → test/fixtures/dcpo.json) at
 * both target temperatures, a hand-computed case, the temperature rule, the edges (no marked sample,
 * unscored rewards) and the field checks.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators } from './index.js';
import { dcpoAdvantage, dcpoAdvantagePart, dcpoTargetTemperature } from './advantages-dcpo.js';
import { grpoAdvantage } from './advantages.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/dcpo.json', import.meta.url), 'utf8')) as {
  rewards: number[];
  groupSizes: number[];
  oldLogprobs: number[][];
  cases: { previousEntropy: number; temperature: number; targetLogprobs: number[][]; tokenAdvantages: number[][] }[];
};

describe('dcpo advantages against the torch reference of the authors’ DCPO branch', () => {
  it.each(fixture.cases)('previous entropy $previousEntropy (T = $temperature)', (referenceCase) => {
    expect(dcpoTargetTemperature({}, referenceCase.previousEntropy)).toBe(referenceCase.temperature);
    const result = dcpoAdvantage({
      rewards: fixture.rewards,
      groupSizes: fixture.groupSizes,
      oldLogprobs: fixture.oldLogprobs,
      temperatureLogprobs: referenceCase.targetLogprobs,
      previousEntropy: referenceCase.previousEntropy,
    });
    referenceCase.tokenAdvantages.forEach((row, i) => {
      row.forEach((value, t) => expect(result.tokenAdvantages![i][t], `sample ${i} token ${t}`).toBeCloseTo(value, 5));
      expect(result.advantages[i]).toBeCloseTo(row.reduce((a, b) => a + b, 0) / row.length, 5);
    });
  });
});

describe('dcpo advantages', () => {
  it('by hand: r = [1, 0, 1, 0], E = 0.3, one token at π_old^T/π_old = e^0.2', () => {
    // a = min(|0.5 − 0.3|, 0.1)/(2/4) = 0.2, α = 0.2/1.2 = 1/6; A_grpo = ±0.8660 (sample std).
    const result = dcpoAdvantage({
      rewards: [1, 0, 1, 0],
      groupSizes: 4,
      oldLogprobs: [[-1], [-1], [-1], [-1]],
      temperatureLogprobs: [[-0.8], [-0.8], [-1], [-0.8]],
      previousEntropy: 0.3,
    });
    const a = 0.8660246;
    expect(result.tokenAdvantages![0][0]).toBeCloseTo((5 / 6) * a + Math.exp(0.2) / 6, 5);
    expect(result.tokenAdvantages![1][0]).toBeCloseTo(-(5 / 6) * a, 5); // wrong: no target term
    expect(result.tokenAdvantages![2][0]).toBeCloseTo((5 / 6) * a + 1 / 6, 5);
    expect(result.tokenAdvantages![3][0]).toBeCloseTo(-(5 / 6) * a, 5);
  });

  it('an all-correct group, zero for GRPO, still gets the target term; no marked sample leaves GRPO as is', () => {
    const input = {
      rewards: [1, 1, 0, 0],
      groupSizes: 2,
      oldLogprobs: [[-1], [-2], [-1], [-1]],
      temperatureLogprobs: [[-1.1], [-1.5], [-1], [-1]],
      previousEntropy: Number.NaN, // before the first update: the authors' 0, so a = 0.1/0.5
    };
    const result = dcpoAdvantage(input);
    const alpha = 0.2 / 1.2;
    expect(result.tokenAdvantages![0][0]).toBeCloseTo(alpha * Math.exp(-0.1), 6);
    expect(result.tokenAdvantages![1][0]).toBeCloseTo(alpha * Math.exp(0.5), 6);
    expect(result.tokenAdvantages![2][0]).toBe(0);
    const none = dcpoAdvantage({ ...input, rewards: [0, 0.04, 0.02, 0] }); // all ≤ 0.05: none marked
    const grpo = grpoAdvantage({ rewards: [0, 0.04, 0.02, 0], groupSizes: 2 });
    expect(none.tokenAdvantages![0][0]).toBeCloseTo(grpo.advantages[0], 6); // no division by zero: α = 0
    expect(none.tokenAdvantages![1][0]).toBeCloseTo(grpo.advantages[1], 6);
    expect(Number.isNaN(none.tokenAdvantages![2][0])).toBe(false);
  });

  it('an unscored sample gets no signal and keep = 0', () => {
    const result = dcpoAdvantage({
      rewards: [1, null, 0, 1],
      groupSizes: 4,
      oldLogprobs: [[-1, -1], [-1], [-1], [-1]],
      temperatureLogprobs: [[-1, -1], [-1], [-1], [-1]],
      previousEntropy: 1,
    });
    expect(Array.from(result.keep)).toEqual([1, 0, 1, 1]);
    expect(Array.from(result.tokenAdvantages![1])).toEqual([0]);
    expect(result.tokenAdvantages![0]).toHaveLength(2);
  });

  it('the target temperature: 1.2 at or below H, 0.8 above, from the options', () => {
    expect(dcpoTargetTemperature({}, 0.5)).toBe(1.2);
    expect(dcpoTargetTemperature({}, 0.51)).toBe(0.8);
    expect(dcpoTargetTemperature({ entropyTarget: 1, temperatureHigh: 1.5 }, 0.9)).toBe(1.5);
    expect(dcpoAdvantagePart.logprobTemperature!({ temperatureLow: 0.7 }, 2)).toBe(0.7);
  });

  it('names a missing or mis-sized field', () => {
    const base = { rewards: [1, 0], groupSizes: 2, oldLogprobs: [[-1], [-1]], temperatureLogprobs: [[-1], [-1]] };
    expect(() => dcpoAdvantage({ ...base, temperatureLogprobs: undefined })).toThrow(/input\.temperatureLogprobs/);
    expect(() => dcpoAdvantage({ ...base, oldLogprobs: [[-1]] })).toThrow(/input\.oldLogprobs has 1/);
    expect(() => dcpoAdvantage({ ...base, temperatureLogprobs: [[-1, -2], [-1]] })).toThrow(/temperatureLogprobs\[0\]/);
  });

  it('is registered as dcpo, with its needs', () => {
    expect(advantageEstimators.get('dcpo')).toBe(dcpoAdvantage);
    expect(advantageEstimators.entry('dcpo').needs).toEqual(['temperatureLogprobs', 'previousEntropy']);
  });
});
