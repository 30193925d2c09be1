/**
 * ASPO's recipe (#218, recipes/papers/aspo.ts): the `aspo` advantage against hand-computed values of
 * the paper's Eq. 2 (the shaping inside its clip, the clip binding, responses that are wrong or never
 * call left at the grpo advantage), the first-call position across token boundaries, the refusals,
 * and the recipe end to end through `grpo train` at a tiny size.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';
import { aspoAdvantage, aspoAdvantagePart, firstCallPosition } from '../../recipes/papers/aspo.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-aspo-');

// Rewards 1, 1, 1, 0: grpo gives 0.5, 0.5, 0.5, −1.5 (mean 0.75, sample std 0.5).
// Response 0 calls at token 1 of 4, response 1 at token 0 of 6; 2 never calls; 3 calls but is wrong.
const input = {
  rewards: [1, 1, 1, 0],
  groupSizes: 4,
  rewardNames: ['correct'],
  rewardComponents: [[1, 1, 1, 0]],
  tokenTexts: [['x', '{"na', 'me"', ': "c"}'], ['{"name"', 'a', 'b', 'c', 'd', 'e'], ['1', '2'], ['{"name"']],
};

describe('aspo advantage (Eq. 2)', () => {
  it('shifts the correct calling responses by δ·(p − mean p)/mean L inside ±k·A', () => {
    // mean p = 0.5, mean L = 5: response 0 gets −2·0.5/5 = −0.2, response 1 +0.2 (bound 0.7·0.5 = 0.35).
    const { advantages } = aspoAdvantage(input, { callMarker: '{"name"', correctReward: 'correct' });
    expect(Array.from(advantages)).toEqual([0.3, 0.7, 0.5, -1.5].map((value) => expect.closeTo(value, 5)));
  });
  it('clips the shaping at k·A_correct', () => {
    const { advantages } = aspoAdvantage(input, { callMarker: '{"name"', correctReward: 'correct', clipShare: 0.2 });
    expect(Array.from(advantages)).toEqual([0.4, 0.6, 0.5, -1.5].map((value) => expect.closeTo(value, 5)));
  });
  it('finds the token a marker starts in, across token boundaries', () => {
    expect(firstCallPosition(['ab', 'c{"', 'name"'], '{"name"')).toBe(1);
    expect(firstCallPosition(['no call'], '{"name"')).toBe(-1);
  });
  it('needs a call marker and a correctness reward of the run', () => {
    expect(() => aspoAdvantage(input, { correctReward: 'correct' })).toThrow(/callMarker/);
    expect(() => aspoAdvantage(input, { callMarker: '{', correctReward: 'format' })).toThrow(/correctReward/);
    expect(aspoAdvantagePart.needs).toEqual(['tokenTexts', 'rewardComponents']);
  });
});

describe('recipes/papers/aspo.ts', () => {
  it('runs SFT and two GRPO steps of calculator episodes with the aspo advantage through grpo train', async () => {
    await grpo('train', join(root, 'recipes/papers/aspo.ts'), '--run-name', 'aspo', ...tinyRunFlags(runs));
    const steps = grpoStepRecords(runs, 'aspo');
    expect(steps).toHaveLength(2);
    for (const step of steps) expect(Number.isFinite(step['loss/policy'] as number)).toBe(true);
  });
});
