/**
 * AlphaDrive's recipe (#69, recipes/papers/alphadrive.ts) end to end through `grpo train` at a tiny
 * size: SFT, two GRPO steps with the three planning rewards scored and logged, the authors' loss
 * settings in the run's config. The served rewards on the task's own rows: the teacher's right plan
 * earns F1 · weight = the weight (+0.4 as the first of its group) and the format point, its slips
 * lose the missed action's F1; within one group the same plan a second time loses the diversity
 * bonus (−0.4 instead of +0.4), as the group's order in a real step gives it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskRegistry } from '../data/index.js';
import { scoreRewards } from '../rewards/index.js';
import { PATH_ACTION_WEIGHTS, SPEED_ACTION_WEIGHTS } from '../rewards/driving-plan.js';
import { makeRewardInput } from '../rewards/types.js';
import { buildRewards, resolveConfig } from '../trainer/setup.js';
import { resolveServedRewards } from './serve-rewards-command.js';
import { grpoStepRecords, inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/alphadrive.ts');
const { runs, grpo } = inProcessCli('grpo-alphadrive-');

const rewardNames = ['plan-speed', 'plan-path', 'plan-format'];

describe('recipes/papers/alphadrive.ts', () => {
  it('runs SFT and two GRPO steps through grpo train, logging every planning reward', async () => {
    const tiny = settingFlags({
      'model.hiddenSize': 32,
      'model.numLayers': 1,
      'model.numHeads': 2,
      'sft.steps': 20,
      'grpo.steps': 2,
      'grpo.promptsPerStep': 4,
      'grpo.microBatchSize': 8,
      'evaluation.examples': 4,
      'checkpoint.every': 0,
      'logging.runsDirectory': runs,
    });
    await grpo('train', recipe, '--run-name', 'alphadrive', ...tiny);
    const steps = grpoStepRecords(runs, 'alphadrive');
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(Number.isFinite(step['reward/mean'])).toBe(true);
      for (const reward of rewardNames) expect(step[`reward/${reward}/invalid`]).toBe(0);
    }
    const config = JSON.parse(readFileSync(join(runs, 'alphadrive', 'config.json'), 'utf8'));
    expect(config.task).toBe('driving-planning');
    expect(config.rewards.map((reward: { name: string }) => reward.name)).toEqual(rewardNames);
    expect(config.sampling.groupSize).toBe(2);
    expect(config.algorithm).toMatchObject({ aggregation: 'seq-mean-token-mean', klCoefficient: 0.04 });
  });

  it("scores the teacher's plans as the authors' rewards do; a repeated plan in a group loses the diversity bonus", async () => {
    const rewards = await resolveServedRewards({ recipe });
    expect(rewards.map((reward) => reward.name)).toEqual(rewardNames);
    const raw = await import(recipe);
    const task = await taskRegistry.load('driving-planning', raw.default.config.taskOptions);
    const rows = task.trainExamples(24, 5);
    const score = async (completions: string[], row: (typeof rows)[number]) => {
      const group = completions.map((completion, indexInGroup) =>
        makeRewardInput({ prompt: row.prompt, completion, row, group: completions, indexInGroup }),
      );
      const matrix = await scoreRewards(rewards, [group], { timeoutMs: 60_000, concurrency: 1 });
      expect(matrix.failures).toEqual([]);
      return completions.map((_, i) => Array.from(matrix.scores.slice(i * 3, i * 3 + 3)));
    };
    let slipsSeen = 0;
    for (const row of rows) {
      const right = task.demonstration(row, () => 0.999);
      const [speed, path] = String(row.answer).split(', ') as [string, string];
      const [[speedScore, pathScore, formatScore], [speedAgain, pathAgain]] = await score([right, right], row);
      expect(speedScore).toBeCloseTo(SPEED_ACTION_WEIGHTS[speed]! + 0.4, 4);
      expect(pathScore).toBeCloseTo(PATH_ACTION_WEIGHTS[path]! + 0.4, 4);
      expect(formatScore).toBe(1);
      expect(speedAgain).toBeCloseTo(SPEED_ACTION_WEIGHTS[speed]! - 0.4, 4);
      expect(pathAgain).toBeCloseTo(PATH_ACTION_WEIGHTS[path]! - 0.4, 4);
      expect(await task.isCorrect(row, right)).toBe(true);
      const slip = task.demonstration(row, () => 0);
      if (slip === right) continue;
      slipsSeen++;
      const [[slipSpeed, slipPath, slipFormat]] = await score([slip], row);
      expect(slipSpeed! + slipPath!).toBeLessThan(speedScore! + pathScore! - 0.5); // one action's F1 lost
      expect(slipFormat).toBe(1);
      expect(await task.isCorrect(row, slip)).toBe(false);
    }
    expect(slipsSeen).toBeGreaterThan(12);
    const longest = Math.max(...task.trainExamples(300, 1).map((row) => task.demonstration(row, () => 0.999).length));
    expect(longest + 1).toBeLessThanOrEqual(raw.default.config.sampling.maxNewTokens);
  });

  it("gives a configured reward's options to the built-in (the task's own defaults are named apart)", async () => {
    const task = await taskRegistry.load('driving-planning', {});
    expect(task.rewards().map((reward) => reward.name)).toEqual(['speed', 'path', 'format']);
    const config = resolveConfig({
      task: 'driving-planning',
      rewards: [{ name: 'plan-speed', weight: 1, options: { diversityWeight: 0 } }],
    });
    const [row] = task.trainExamples(1, 3);
    const completion = task.demonstration(row!, () => 0.999);
    const matrix = await scoreRewards(buildRewards(config, task), [[makeRewardInput({ completion, row: row! })]], {
      timeoutMs: 60_000,
      concurrency: 1,
    });
    expect(matrix.scores[0]).toBeCloseTo(SPEED_ACTION_WEIGHTS[String(row!.answer).split(', ')[0]!]!, 4); // no +0.4
  });

  it('refuses a bad task option before any compute, naming it', async () => {
    await expect(grpo('train', recipe, ...settingFlags({ 'taskOptions.teacherErrorRate': 2 }))).rejects.toThrow(
      /taskOptions\.teacherErrorRate/,
    );
  });
});
