/**
 * `cerm` (BigCharts-R1's continuous error-magnitude reward): case tables against the authors'
 * grpo_bigcharts.py semantics (Python `float()`, the trailing %, truth 0, NaN and infinity → 0).
 */
import { describe, expect, it } from 'vitest';
import { cerm, cermScore, errorMagnitudeScore, pythonFloat } from './cerm.js';
import { createReward } from './factories.js';
import { makeRewardInput, type RewardFn } from './types.js';

describe('cerm', () => {
  it("pythonFloat: what Python's float() accepts", () => {
    expect(pythonFloat(' 7 ')).toBe(7); // surrounding whitespace
    expect(pythonFloat('1e3')).toBe(1000);
    expect(pythonFloat('1_000')).toBe(1000); // one underscore between digits
    expect(pythonFloat('1.')).toBe(1);
    expect(pythonFloat('.5')).toBe(0.5);
    expect(pythonFloat('-Infinity')).toBe(-Infinity);
    expect(pythonFloat('NaN')).toBeNaN();
    for (const refused of ['', '1__0', '_1', '1_', '0x10', '1,204', '1/2', '5 apples', '.', 'e3'])
      expect(pythonFloat(refused)).toBeNull(); // ValueError
  });

  it('relaxed_correctness_magnitude_no_clipping: 1 / (1 + relative error), text by case-insensitive match', () => {
    expect(errorMagnitudeScore('10', '8')).toBeCloseTo(1 / 1.2, 12);
    expect(errorMagnitudeScore('10', '12.5')).toBeCloseTo(0.8, 12);
    expect(errorMagnitudeScore('-4', '-2')).toBeCloseTo(1 / 1.5, 12); // |−2 − (−4)| / |−4|
    expect(errorMagnitudeScore('0', '0.0')).toBe(1); // truth 0: only 0 scores
    expect(errorMagnitudeScore('0', '0.001')).toBe(0);
    expect(errorMagnitudeScore('17%', '0.17')).toBeCloseTo(1, 12); // a trailing % divides by 100
    expect(errorMagnitudeScore('50', '50%')).toBeCloseTo(1 / (1 + 49.5 / 50), 12);
    expect(errorMagnitudeScore('1_000', '1000')).toBe(1);
    expect(errorMagnitudeScore('Green', ' green ')).toBe(1); // text: stripped, lower-cased
    expect(errorMagnitudeScore('1,204', '1204')).toBe(0); // "1,204" is not a float: text comparison
    expect(errorMagnitudeScore('5', 'inf')).toBe(0); // 1 / (1 + inf)
  });

  it('error_magnitude_reward: the first one-line <answer>, any case; no tag, NaN or infinity → 0', () => {
    expect(cermScore('<thinking>x</thinking> <answer> 8 </answer>', '10')).toBeCloseTo(1 / 1.2, 12);
    expect(cermScore('<thinking>x</thinking> <ANSWER>8</Answer>', '10')).toBeCloseTo(1 / 1.2, 12); // IGNORECASE
    expect(cermScore('<answer>10</answer><answer>8</answer>', '10')).toBe(1); // the first answer counts
    expect(cermScore('<answer>\n10</answer>', '10')).toBe(0); // no DOTALL: no answer
    expect(cermScore('10', '10')).toBe(0); // untagged: no answer
    expect(cermScore('<answer>nan</answer>', '10')).toBe(0); // NaN score → 0
    expect(cermScore('<answer>inf</answer>', 'inf')).toBe(0); // inf − inf: NaN → 0
  });

  it('by name: the row column (a number or text), and a clear error naming a missing one', async () => {
    const reward = createReward('cerm', { answerColumn: 'value' }) as RewardFn;
    expect(await reward(makeRewardInput({ completion: '<answer>8</answer>', row: { value: 10 } }))).toBeCloseTo(
      1 / 1.2,
      12,
    );
    expect(() => cerm()(makeRewardInput({ completion: '<answer>8</answer>', row: {} }))).toThrow(
      /cerm: column "answer" must hold/,
    );
    expect(() => createReward('cerm', { column: 'x' })).toThrow(/reward "cerm": bad options/);
  });
});
