/**
 * The flow catalog `grpo list` prints names only what runs: every option is a field of a flow
 * recipe's `flow.rl` (or `flow.classifier`), every sampler step and image reward is listed, and the
 * list text shows each of them with its options.
 */
import { describe, expect, it } from 'vitest';
import { flowSteps } from '../algorithms/flow-steps.js';
import { runListCommand } from '../cli/list-command.js';
import { flowStepOptions, flowTrainers, imageRewardCatalog } from './catalog.js';
import { imageRewards } from './image-rewards.js';
import { flowRlFields } from './recipe.js';

describe('flow catalog', () => {
  it('names only fields a flow recipe takes, and every step and image reward', () => {
    const options = [...flowTrainers, ...imageRewardCatalog()].flatMap((entry) => entry.options);
    for (const option of [...options, ...Object.values(flowStepOptions).flat()])
      expect(option === 'flow.classifier' || flowRlFields.includes(option.split('.')[0]), option).toBe(true);
    expect(Object.keys(flowStepOptions).sort()).toEqual(flowSteps.names().sort());
    expect(imageRewardCatalog().map((entry) => entry.name)).toEqual(imageRewards.names());
  });

  it('grpo list prints the steps, trainers and image rewards with their options', () => {
    const text = runListCommand();
    expect(text).toContain('Flow sampler steps, flow.rl.sampler (4)');
    for (const name of [...flowSteps.names(), ...flowTrainers.map((entry) => entry.name), ...imageRewards.names()])
      expect(text).toMatch(new RegExp(`^  ${name} `, 'm'));
    expect(text).toMatch(/mix-grpo .*\n.*options: window.size, window.shiftEvery, window.stride, window.rollBack/);
    expect(text).toMatch(/dance .*\n.*options: noiseLevel/);
  });
});
