/**
 * Tests of PROF's filter and advantage (#126): the kept responses and advantages against the float64
 * port of the authors' prof_ray_trainer.py (scripts/reference/prof.py → test/fixtures/prof.json: eight
 * groups, five filter settings, step scores as a PRM would give them), the split of the paper's Figure 1
 * (README of Chenluye99/PROF), small hand-worked groups, the Correct variant, the
 * process reward's weight taken out of the outcome, unscored responses, and the errors and refusals
 * that name what is missing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { advantageEstimators, grpoAdvantage } from './index.js';
import type { RunSettings } from './registry.js';
import { profAdvantage, profAdvantagePart, profSelection } from './advantages-prof.js';

const fixture = JSON.parse(readFileSync(new URL('../../test/fixtures/prof.json', import.meta.url), 'utf8')) as {
  groupSizes: number[];
  outcomes: number[];
  steps: number[][];
  cases: { removePerGroup: number; lengthPenalty: number; keep: number[]; advantages: number[] }[];
};

/** The run's rewards: the outcome (weight 1), the PRM's mean step score and the step count (weight 0). */
function input(outcomes: (number | null)[], prm: (number | null)[], groupSizes: number[], steps?: number[]) {
  return {
    rewards: outcomes,
    groupSizes,
    rewardComponents: [outcomes, prm, steps ?? prm.map(() => 1)],
    rewardNames: ['correct', 'prm', 'steps'],
    rewardWeights: [1, 0, 0],
  };
}

describe('prof against the port of the authors’ prof_ray_trainer.py', () => {
  const means = fixture.steps.map((s) => s.reduce((a, b) => a + b, 0) / s.length);
  const counts = fixture.steps.map((s) => s.length);
  it.each(fixture.cases)(
    'removePerGroup $removePerGroup, lengthPenalty $lengthPenalty',
    ({ removePerGroup, lengthPenalty, keep, advantages }) => {
      expect(advantageEstimators.get('prof')).toBe(profAdvantage);
      const options = { processReward: 'prm', stepReward: 'steps', removePerGroup, lengthPenalty };
      const result = profAdvantage(input(fixture.outcomes, means, fixture.groupSizes, counts), options);
      expect(Array.from(result.keep)).toEqual(keep);
      advantages.forEach((a, i) => expect(result.advantages[i], `advantage ${i}`).toBeCloseTo(a, 5));
    },
  );
});

describe('prof', () => {
  it('splits the removals as the paper’s Figure 1: n = 8, 5 correct, 3 wrong, 4 kept → 3 correct and 1 wrong leave', () => {
    const outcomes = [1, 0, 1, 0, 0, 1, 1, 1];
    const { keep } = profSelection(input(outcomes, [0.9, 0.1, 0.7, 0.2, 0.5, 0.4, 0.8, 0.3], [8]), {
      processReward: 'prm',
      removePerGroup: 4,
    });
    expect(Array.from(keep)).toEqual([1, 1, 0, 1, 0, 0, 1, 0]); // correct 0.9, 0.8 and wrong 0.1, 0.2 stay
  });
  it('drops the correct responses the PRM scores lowest when correct ones outnumber the rest', () => {
    // P = 3, N = 1, remove 2: round((2 + 2)/2) = 2 correct ones leave (PRM 0.2 and 0.6)
    const { keep } = profSelection(input([1, 1, 1, 0], [0.9, 0.2, 0.6, 0.8], [4]), {
      processReward: 'prm',
      removePerGroup: 2,
    });
    expect(Array.from(keep)).toEqual([1, 0, 0, 1]);
  });
  it('drops the incorrect responses the PRM scores highest when incorrect ones outnumber the rest', () => {
    // P = 1, N = 3, remove 2: round((−2 + 2)/2) = 0 correct; the wrong ones at PRM 0.9 and 0.4 leave
    const result = profAdvantage(input([1, 0, 0, 0], [0.5, 0.9, 0.1, 0.4], [4]), {
      processReward: 'prm',
      removePerGroup: 2,
    });
    expect(Array.from(result.keep)).toEqual([1, 0, 1, 0]);
    // grpo over the kept [1, 0]: mean 0.5, sample std √0.5
    expect(result.advantages[0]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 6);
    expect(result.advantages[1]).toBe(0);
  });
  it('with the length penalty, a response of one step or more than 30 steps leaves first', () => {
    const group = input([1, 1, 1, 0], [0.9, 0.2, 0.6, 0.8], [4], [1, 5, 5, 5]);
    const { keep } = profSelection(group, {
      processReward: 'prm',
      stepReward: 'steps',
      removePerGroup: 2,
      lengthPenalty: 10,
    });
    expect(Array.from(keep)).toEqual([0, 0, 1, 1]); // the PRM's best correct answer has one step
  });
  it('the Correct variant drops the same correct responses and as many incorrect ones, drawn by seed and step', () => {
    const outcomes = [1, 0, 0, 0, 0, 0, 1, 0]; // P = 2, N = 6, remove 4: four of the six wrong ones leave
    const prm = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2];
    const options = { processReward: 'prm', removePerGroup: 4 };
    const both = profSelection(input(outcomes, prm, [8]), options);
    expect(Array.from(both.keep)).toEqual([1, 0, 0, 0, 0, 1, 1, 1]); // by consistency: the PRM's four highest wrong ones
    const draws = new Set<string>();
    for (let step = 0; step < 8; step++) {
      const group = { ...input(outcomes, prm, [8]), step };
      const { keep } = profSelection(group, { ...options, incorrect: 'random' });
      expect(Array.from(keep).filter((_, i) => outcomes[i] === 1)).toEqual([1, 1]);
      expect(keep.reduce((a, b) => a + b, 0)).toBe(4);
      expect(profSelection(group, { ...options, incorrect: 'random' }).keep).toEqual(keep); // reproducible
      draws.add(Array.from(keep).join(''));
    }
    expect(draws.size, 'different steps draw different wrong responses').toBeGreaterThan(1);
  });
  it('is plain grpo with removePerGroup 0', () => {
    const group = input([1, 0.5, 0, 1, 0, 0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [3, 3]);
    expect(Array.from(profAdvantage(group, { processReward: 'prm', removePerGroup: 0 }).advantages)).toEqual(
      Array.from(grpoAdvantage(group).advantages),
    );
  });
  it('takes the process reward’s weighted share out of the outcome it filters and trains on', () => {
    const outcomes = [1, 1, 0, 0];
    const prm = [0.3, 0.7, 0.2, 0.9];
    const weighted = {
      ...input(
        outcomes.map((r, i) => r + 0.5 * prm[i]),
        prm,
        [4],
      ),
      rewardWeights: [1, 0.5, 0],
    };
    const options = { processReward: 'prm', removePerGroup: 2 };
    const expected = profAdvantage(input(outcomes, prm, [4]), options);
    const result = profAdvantage(weighted, options);
    expect(Array.from(result.keep)).toEqual(Array.from(expected.keep));
    result.advantages.forEach((a, i) => expect(a).toBeCloseTo(expected.advantages[i], 6));
  });
  it('leaves responses without an outcome or a process score out of the filter and the loss', () => {
    const { keep } = profSelection(input([1, null, 1, 0, 0], [0.5, 0.5, null, 0.2, 0.6], [5]), {
      processReward: 'prm',
      removePerGroup: 1,
    });
    // scored: 1 correct, 2 incorrect; remove 1: round((−1 + 1)/2) = 0 → the wrong one at 0.6 leaves
    expect(Array.from(keep)).toEqual([1, 0, 0, 1, 0]);
  });
  it('names what is missing', () => {
    const group = input([1, 0], [0.5, 0.5], [2]);
    expect(() => profAdvantage(group, { removePerGroup: 1 })).toThrow(/prof needs options\.processReward/);
    expect(() => profAdvantage(group, { processReward: 'prm' })).toThrow(/prof needs options\.removePerGroup/);
    expect(() => profAdvantage(group, { processReward: 'judge', removePerGroup: 1 })).toThrow(
      /processReward "judge" is not among the rewards \(correct, prm, steps\)/,
    );
    expect(() => profAdvantage(group, { processReward: 'prm', removePerGroup: 1, lengthPenalty: 10 })).toThrow(
      /lengthPenalty needs options\.stepReward/,
    );
  });
  it('refuses a config whose rewards do not include the ones it names, before any compute', () => {
    const settings = { rewardNames: ['correct', 'prm'] } as unknown as RunSettings;
    expect(profAdvantagePart.refuses!({ processReward: 'prm', removePerGroup: 4 }, settings)).toEqual([]);
    expect(
      profAdvantagePart.refuses!({ processReward: 'judge', stepReward: 'steps', removePerGroup: 4 }, settings),
    ).toEqual([
      'algorithm.advantageOptions.processReward: "judge" is not a reward of this run (rewards: correct, prm)',
      'algorithm.advantageOptions.stepReward: "steps" is not a reward of this run (rewards: correct, prm)',
    ]);
    expect(
      profAdvantagePart.refuses!({ processReward: 'prm', removePerGroup: 4, lengthPenalty: 10 }, settings),
    ).toEqual([
      'algorithm.advantageOptions.lengthPenalty: prof needs stepReward (the step-count reward) to count steps',
    ]);
  });
});
