/**
 * UI-S1's recipe (#96, recipes/papers/ui-s1.ts) end to end through `grpo train` at a tiny size:
 * SFT on the teacher's whole episodes, two GRPO steps of multi-turn semi-online episodes with the
 * `ui-s1` turn credit, the environment's reward logged. The teacher's episodes replayed through
 * the recipe's environment: a right one scores 1 per turn and reward 1, a slip is patched (0.55,
 * the next screen is the expert's) and the held-out check fails it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/ui-s1.ts');
const { runs, grpo } = inProcessCli('grpo-ui-s1-');

describe('recipes/papers/ui-s1.ts', () => {
  it('runs SFT and two GRPO steps of semi-online episodes with ui-s1 turn credit through grpo train', async () => {
    const tiny = settingFlags({
      'model.hiddenSize': 32,
      'model.numLayers': 1,
      'model.numHeads': 2,
      'sft.steps': 20,
      'grpo.steps': 2,
      'grpo.promptsPerStep': 2,
      'grpo.microBatchSize': 16,
      'evaluation.examples': 4,
      'checkpoint.every': 0,
      'logging.runsDirectory': runs,
    });
    await grpo('train', recipe, '--run-name', 'ui-s1', ...tiny);
    const steps = grpoStepRecords(runs, 'ui-s1');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(step['reward/environment/invalid']).toBe(0);
      expect(Number.isFinite(step['turnCredit/credit/turnAdvantage/absMean'])).toBe(true);
      expect(step['turns/mean']).toBeGreaterThanOrEqual(1);
    }
    const config = JSON.parse(readFileSync(join(runs, 'ui-s1', 'config.json'), 'utf8'));
    expect(config.algorithm.turnCredit).toEqual({
      name: 'ui-s1',
      options: { gamma: 0.5, stepWeight: 1, normalization: 'mean-std' },
    });
    expect(config.agent.maxTurns).toBeGreaterThanOrEqual(3);
  });

  it("replays the teacher's episodes through the environment: right ones match every step, slips are patched", async () => {
    const { default: loaded, task } = await import(recipe);
    const rows = task.trainExamples(30, 4);
    let slips = 0;
    for (const row of rows) {
      for (const draw of [() => 0.999, () => 0]) {
        const text: string = task.demonstration(row, draw);
        const turns = text.split('<eos>\n').map((part: string) => part.split('\nA:').at(-1)!);
        const environment = await loaded.environment(row, { seed: 0, episodeIndex: 0 });
        const feedback = turns.map((turnText: string) => environment.respond(turnText));
        const rewards = feedback.map((answer: { reward: number }) => answer.reward);
        const right = draw() > 0.5;
        expect(environment.done()).toBe(true);
        if (right) {
          expect(rewards.every((reward: number) => reward === 1)).toBe(true);
          expect(environment.reward()).toBe(1);
          expect(task.isCorrect(row, text)).toBe(true);
        } else {
          slips++;
          expect(rewards.every((reward: number) => Math.abs(reward - 0.55) < 1e-12)).toBe(true); // right type, wrong id or word
          expect(environment.reward()).toBe(0);
          expect(task.isCorrect(row, text)).toBe(false);
          if (rewards.length > 1)
            expect(feedback[0].observation).toBe(`patched: ${row.steps[0].action}\n${row.steps[1].screen}`);
        }
      }
    }
    expect(slips).toBe(rows.length);
    const longest = Math.max(...rows.map((row: { steps: unknown[] }) => task.demonstration(row, () => 0.999).length));
    expect(longest).toBeLessThanOrEqual(loaded.config.agent.maxEpisodeTokens);
  });
});
