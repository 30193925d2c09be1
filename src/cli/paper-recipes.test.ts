/**
 * The application-paper recipes (recipes/papers/*.ts, docs/paper-recipes.md) end to end through
 * `grpo train` at a tiny size: SFT, two GRPO steps, every configured reward scored and logged. The
 * rewards `grpo serve-rewards --recipe` would serve are checked on the task's own rows: the
 * teacher's correct demonstrations earn every reward in full (1, or the paper's top score where it
 * has its own, as VeriReason's 2.1), its wrong ones do not. Bad task options and bad reward
 * options are refused before any compute, naming the field.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskRegistry } from '../data/index.js';
import { scoreRewards } from '../rewards/index.js';
import { makeRewardInput } from '../rewards/types.js';
import { resolveServedRewards } from './serve-rewards-command.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-paper-recipes-');

const tiny = settingFlags({
  'model.hiddenSize': 32,
  'model.numLayers': 1,
  'model.numHeads': 2,
  'sft.steps': 20,
  'grpo.steps': 2,
  'grpo.promptsPerStep': 2,
  'grpo.microBatchSize': 8,
  'sampling.groupSize': 4,
  'evaluation.examples': 4,
  'checkpoint.every': 0,
  'logging.runsDirectory': runs,
});

// name, task, rewards, and each reward's full score where it is not 1
const recipes: Array<[string, string, string[], number[]?]> = [
  ['reasoning-sql', 'text-to-sql', ['sql-execution', 'sql-syntax', 'sql-schema-linking', 'sql-ngram', 'tag-format']],
  ['grouprank', 'reranking', ['ranking-ndcg', 'ranking-recall', 'score-distribution', 'tag-format']],
  ['prorank', 'reranking', ['exact-match', 'tag-format']],
  ['verireason', 'verilog', ['verilog-testbench', 'verilog-format'], [2.1, 1]],
  ['graph-r1', 'graph-problems', ['graph-solution', 'regex'], [2, 1]],
  ['restl', 'nl-to-stl', ['stl-propositions', 'stl-templated-nl', 'stl-succinctness', 'stl-symbols', 'stl-traces']],
];
// Recipes whose last reward is not a format reward (every RESTL aspect reads the formula itself).
const withoutFormatReward = new Set(['restl']);

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe.each(recipes)('recipes/papers/%s.ts', (name, taskName, rewardNames, full = rewardNames.map(() => 1)) => {
  const recipe = join(root, 'recipes/papers', `${name}.ts`);

  it('runs SFT and two GRPO steps through grpo train, logging every reward', async () => {
    await grpo('train', recipe, '--run-name', name, ...tiny);
    const steps = readLines(join(runs, name, 'metrics.jsonl')).filter(
      (line) => line.phase === 'grpo' && 'reward/mean' in line,
    );
    expect(steps).toHaveLength(2);
    for (const step of steps) {
      expect(Number.isFinite(step['reward/mean'])).toBe(true);
      for (const reward of rewardNames) expect(step[`reward/${reward}/invalid`]).toBe(0); // scored, no errors
    }
    const config = JSON.parse(readFileSync(join(runs, name, 'config.json'), 'utf8'));
    expect(config.task).toBe(taskName);
    expect(config.rewards.map((reward: { name: string }) => reward.name)).toEqual(rewardNames);
  });

  it("serves the recipe's rewards; the teacher's right answers earn them in full, its wrong ones do not", async () => {
    const rewards = await resolveServedRewards({ recipe });
    expect(rewards.map((reward) => reward.name)).toEqual(rewardNames);
    const raw = await import(recipe);
    const task = await taskRegistry.load(taskName, raw.default.config.taskOptions);
    const rows = task.trainExamples(12, 5);
    const score = async (draw: number) => {
      const groups = rows.map((row) => [
        makeRewardInput({ prompt: row.prompt, completion: task.demonstration(row, () => draw), row }),
      ]);
      const matrix = await scoreRewards(rewards, groups, { timeoutMs: 60_000, concurrency: 1 });
      expect(matrix.failures).toEqual([]);
      // mean of each reward over the rows that have it (null = not applicable)
      return rewardNames.map((_, column) => {
        const cells = rows.map((_, row) => matrix.scores[row * rewardNames.length + column]!);
        const scored = cells.filter((cell, row) => matrix.status[row * rewardNames.length + column] === 'ok');
        return scored.reduce((a, b) => a + b, 0) / scored.length;
      });
    };
    const right = await score(0.999); // draw ≥ teacherErrorRate: the correct demonstration
    expect(right.map((mean) => Number(mean.toFixed(9)))).toEqual(full);
    const wrong = await score(0); // draw < teacherErrorRate: the teacher's mistake
    expect(wrong[0]).toBeLessThan(full[0]!); // the main reward sees the mistake
    if (!withoutFormatReward.has(name)) expect(wrong.at(-1)).toBe(full.at(-1)); // the format is still right
    // A right answer fits in the recipe's sampling budget (one character token each, plus the stop token).
    const longest = Math.max(...task.trainExamples(200, 1).map((row) => task.demonstration(row, () => 0.999).length));
    expect(longest + 1).toBeLessThanOrEqual(raw.default.config.sampling.maxNewTokens);
  });
});

describe('paper recipes refuse bad input before compute', () => {
  const recipe = (name: string) => join(root, 'recipes/papers', `${name}.ts`);
  const noRun = (name: string) => expect(existsSync(join(runs, name, 'metrics.jsonl'))).toBe(false);

  it('a bad task option names taskOptions.<field>', async () => {
    await expect(
      grpo(
        'train',
        recipe('grouprank'),
        '--run-name',
        'bad-mode',
        ...tiny,
        ...settingFlags({ 'taskOptions.mode': 'listwise' }),
      ),
    ).rejects.toThrow(/taskOptions\.mode/);
    noRun('bad-mode');
    await expect(
      grpo(
        'train',
        recipe('reasoning-sql'),
        '--run-name',
        'bad-rate',
        ...tiny,
        ...settingFlags({ 'taskOptions.teacherErrorRate': 2 }),
      ),
    ).rejects.toThrow(/taskOptions\.teacherErrorRate/);
    noRun('bad-rate');
  });

  it('a bad reward option names the reward and the field', async () => {
    const file = join(runs, 'bad-reward.json');
    const rewards = [{ name: 'ranking-ndcg', weight: 1, options: { k: 0 } }];
    writeFileSync(file, JSON.stringify({ task: 'reranking', rewards }));
    await expect(grpo('train', file, '--run-name', 'bad-reward', ...tiny)).rejects.toThrow(
      /reward "ranking-ndcg": bad options: k:/,
    );
    noRun('bad-reward');
    writeFileSync(
      file,
      JSON.stringify({ task: 'text-to-sql', rewards: [{ name: 'sql-ngram', options: { gram: 2 } }] }),
    );
    await expect(grpo('train', file, '--run-name', 'bad-reward-2', ...tiny)).rejects.toThrow(
      /reward "sql-ngram": bad options: .*gram/,
    );
    noRun('bad-reward-2');
  });

  it('the Verilog recipe refuses a reward option of the wrong type, naming the reward and the field', async () => {
    const rewards = (options: Record<string, unknown>) =>
      settingFlags({ rewards: [{ name: 'verilog-testbench', weight: 1, options }] });
    await expect(
      grpo('train', recipe('verireason'), '--run-name', 'bad-timeout', ...tiny, ...rewards({ timeoutMs: 'ten' })),
    ).rejects.toThrow(/reward "verilog-testbench": bad options: timeoutMs:/);
    noRun('bad-timeout');
    await expect(
      grpo('train', recipe('verireason'), '--run-name', 'bad-scoring', ...tiny, ...rewards({ scoring: 'all' })),
    ).rejects.toThrow(/reward "verilog-testbench": bad options: scoring:/);
    noRun('bad-scoring');
    await expect(
      grpo('train', recipe('verireason'), '--run-name', 'bad-threshold', ...tiny, ...rewards({ passThreshold: 99 })),
    ).rejects.toThrow(/reward "verilog-testbench": bad options: passThreshold:/);
    noRun('bad-threshold');
  });
});
