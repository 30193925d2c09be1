/**
 * The application-paper recipes of issue 33 (Guru #108, WirelessMathLM #221, Shop-R1 #173, PageLLM
 * #170, RLPrompt #105, StealthRL #34) end to end through `grpo train` at a tiny size: SFT, two GRPO steps, every
 * configured reward scored and logged. The rewards `grpo serve-rewards --recipe` would serve are
 * checked on the task's own rows: the teacher's right demonstrations earn the main reward in full,
 * its wrong ones do not. The multi-domain run logs its per-domain metrics.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskRegistry } from '../data/index.js';
import { createReward, scoreRewards } from '../rewards/index.js';
import { makeRewardInput, type RewardFn } from '../rewards/types.js';
import { resolveServedRewards } from './serve-rewards-command.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-application-recipes-');

const tiny = settingFlags({
  'model.hiddenSize': 32,
  'model.numLayers': 1,
  'model.numHeads': 2,
  'sft.steps': 20,
  'grpo.steps': 2,
  'grpo.promptsPerStep': 2,
  'grpo.microBatchSize': 8,
  'sampling.groupSize': 4,
  'evaluation.examples': 8,
  'checkpoint.every': 0,
  'logging.runsDirectory': runs,
});

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

// name, task, rewards (the first is the main one, scored 1 on a right answer)
const recipes: Array<[string, string, string[]]> = [
  ['guru', 'multi-domain', ['domain-router']],
  ['wireless-math', 'wireless-math', ['wireless-math']],
  ['rlprompt', 'prompt-classification', ['rlprompt-classification']],
  ['stealthrl', 'paraphrase-evasion', ['stealthrl']],
];

describe.each(recipes)('recipes/papers/%s.ts', (name, taskName, rewardNames) => {
  const recipe = join(root, 'recipes/papers', `${name}.ts`);

  it('runs SFT and two GRPO steps through grpo train, logging every reward', async () => {
    await grpo('train', recipe, '--run-name', name, ...tiny);
    const lines = readLines(join(runs, name, 'metrics.jsonl'));
    const steps = lines.filter((line) => line.phase === 'grpo' && 'reward/mean' in line);
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(Number.isFinite(step['reward/mean'])).toBe(true);
      for (const reward of rewardNames) expect(step[`reward/${reward}/invalid`]).toBe(0); // scored, no errors
    }
    const config = JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8'));
    expect(config.task).toBe(taskName);
    expect(config.rewards.map((reward: { name: string }) => reward.name)).toEqual(rewardNames);
    if (name !== 'guru') return;
    // Per-domain metrics: each step's domains with their mean reward; each evaluation's accuracy per domain.
    for (const step of steps) {
      const domains = Object.keys(step).filter((key) => /^domain\/\w+\/reward\/mean$/.test(key));
      expect(domains.length).toBeGreaterThan(0);
    }
    const evaluations = lines.filter((line) => 'eval/accuracy' in line);
    expect(evaluations.length).toBeGreaterThan(0);
    for (const evaluation of evaluations)
      for (const domain of ['math', 'tabular', 'code', 'science']) {
        expect(evaluation[`eval/domain/${domain}/accuracy`]).toBeGreaterThanOrEqual(0);
        expect(Number.isFinite(evaluation[`eval/domain/${domain}/meanReward`])).toBe(true);
      }
  });

  it("serves the recipe's rewards; the teacher's right answers earn the main one in full, its wrong ones do not", async () => {
    if (name === 'rlprompt' || name === 'stealthrl') return; // z-scored rewards: see the tests below
    const rewards = await resolveServedRewards({ recipe });
    expect(rewards.map((reward) => reward.name)).toEqual(rewardNames);
    const raw = await import(recipe);
    const task = await taskRegistry.load(taskName, raw.default.config.taskOptions);
    const rows = task.trainExamples(16, 5);
    const main = async (draw: number) => {
      const groups = rows.map((row) => [
        makeRewardInput({ prompt: row.prompt, completion: task.demonstration(row, () => draw), row }),
      ]);
      const matrix = await scoreRewards(rewards, groups, { timeoutMs: 60_000, concurrency: 1 });
      expect(matrix.failures).toEqual([]);
      return rows.map((_, row) => matrix.scores[row * rewardNames.length]!);
    };
    expect(await main(0.999)).toEqual(rows.map(() => 1)); // draw ≥ teacherErrorRate: the right demonstration
    const wrong = await main(0); // the teacher's slip (addition's teacher slips only where a carry is due)
    if (name === 'guru') expect(wrong.reduce((a, b) => a + b, 0) / wrong.length).toBeLessThan(0.75);
    else for (const score of wrong) expect(score).toBeLessThan(1);
    const longest = Math.max(...task.trainExamples(200, 1).map((row) => task.demonstration(row, () => 0.999).length));
    expect(longest + 1).toBeLessThanOrEqual(raw.default.config.sampling.maxNewTokens);
  });
});

describe('recipes/papers/rlprompt.ts rewards', () => {
  it('scores a group of prompts for one row z-scored: a prompt that cancels the lean ranks above one that adds to it', async () => {
    const recipe = join(root, 'recipes/papers/rlprompt.ts');
    const rewards = await resolveServedRewards({ recipe });
    const task = await taskRegistry.load('prompt-classification', {});
    const [row] = task.trainExamples(1, 3);
    const prompts = ['honestly honestly', 'really so', 'it'];
    const group = prompts.map((completion, indexInGroup) =>
      makeRewardInput({ prompt: row!.prompt, completion, row: row!, group: prompts, indexInGroup }),
    );
    const matrix = await scoreRewards(rewards, [group], { timeoutMs: 60_000, concurrency: 1 });
    expect(matrix.failures).toEqual([]);
    const [balanced, leaning, neutral] = Array.from(matrix.scores);
    expect(balanced).toBeGreaterThan(neutral!);
    expect(neutral).toBeGreaterThanOrEqual(leaning!);
    expect(Array.from(matrix.scores).reduce((a, b) => a + b, 0)).toBeCloseTo(0, 6); // z-scored: mean 0
    expect(await task.isCorrect(row!, 'honestly honestly')).toBe(true);
  });
});

describe('recipes/papers/stealthrl.ts rewards', () => {
  it("the teacher's plain rewrite evades and keeps the meaning; its slips (a copy, another subject) do not", async () => {
    const recipe = join(root, 'recipes/papers/stealthrl.ts');
    const raw = await import(recipe);
    const rewards = await resolveServedRewards({ recipe });
    expect(rewards.map((reward) => reward.name)).toEqual(['stealthrl']);
    const task = await taskRegistry.load('paraphrase-evasion', raw.default.config.taskOptions);
    const rows = task.trainExamples(12, 5);
    const draws =
      (...values: number[]) =>
      () =>
        values.shift() ?? 0.999;
    for (const row of rows) {
      const right = task.demonstration(row, draws(0.999));
      const copy = task.demonstration(row, draws(0, 0)); // slip, then the copy branch
      const changed = task.demonstration(row, draws(0, 0.999)); // slip, then another subject
      expect(copy).toBe(row.source);
      expect(await task.isCorrect(row, right)).toBe(true);
      expect(await task.isCorrect(row, copy)).toBe(false); // still flagged
      expect(await task.isCorrect(row, changed)).toBe(false); // evades, meaning lost
      // Scored by the served reward (its running z-score spans every call): the copy stays far below.
      const group = [copy, right].map((completion) => makeRewardInput({ prompt: row.prompt, completion, row }));
      const matrix = await scoreRewards(rewards, [group], { timeoutMs: 60_000, concurrency: 1 });
      expect(matrix.failures).toEqual([]);
      const [copyScore, rightScore] = Array.from(matrix.scores);
      expect(rightScore! - copyScore!).toBeGreaterThan(0.5);
      // The changed subject evades as well as the right rewrite; only β·sim tells them apart.
      const similarity = createReward('stealthrl', { detectorWeight: 0, detectorZscore: false }) as RewardFn;
      const semantic = (completion: string) => similarity(makeRewardInput({ completion, row })) as number;
      expect(semantic(right)).toBeGreaterThan(semantic(changed));
    }
    const longest = Math.max(...task.trainExamples(200, 1).map((row) => task.demonstration(row, () => 0.999).length));
    expect(longest + 1).toBeLessThanOrEqual(raw.default.config.sampling.maxNewTokens);
  });
});
