/**
 * Pref-GRPO's recipe (#5, recipes/papers/pref-grpo.ts) end to end through `grpo train` at a tiny size:
 * it pre-trains a start and the classifier its win-rate judge needs, then trains with the win rate as
 * the only reward; each step's win rates average ½ (every comparison hands out one win).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const { runs, grpo } = inProcessCli('grpo-pref-grpo-');
const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>);

describe('recipes/papers/pref-grpo.ts through grpo train', () => {
  it('trains the digits flow model on pairwise win rates within each group', async () => {
    const tiny = settingFlags({
      'logging.runsDirectory': runs,
      'flow.pretrain.steps': 12,
      'flow.pretrain.hiddenSize': 8,
      'flow.pretrain.numBlocks': 1,
      'flow.pretrain.imageSize': 7,
      'flow.classifierTraining.epochs': 1,
      'flow.rl.steps': 2,
      'flow.rl.groupSize': 4,
      'flow.rl.promptsPerStep': 2,
      'flow.rl.samplingSteps': 3,
      'flow.rl.evalEvery': 1,
      'flow.rl.evalPerClass': 2,
    });
    await grpo('train', 'recipes/papers/pref-grpo.ts', '--run-name', 'pref', ...tiny);
    const run = join(runs, 'pref');
    expect(existsSync(join(run, 'classifier/model.safetensors')), 'the judge was trained').toBe(true);
    expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8')).flow.rl.rewards).toEqual({
      'win-rate': 1,
      confidence: 0,
    });
    const steps = readLines(join(run, 'metrics.jsonl')).filter((line) => 'reward/win-rate/mean' in line);
    expect(steps.map((line) => line.step)).toEqual([1, 2]);
    for (const line of steps) {
      expect(line['reward/win-rate/mean']).toBeCloseTo(0.5, 2);
      expect(line['reward/mean']).toBeCloseTo(line['reward/win-rate/mean'], 6); // confidence is logged only
      expect(Number.isFinite(line['loss/policy'])).toBe(true);
    }
    const evaluations = readLines(join(run, 'metrics.jsonl')).filter((line) => 'eval/reward/confidence/mean' in line);
    expect(evaluations.length).toBe(3); // before, after step 1, after step 2: the judge's score, logged
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
  }, 120_000);
});
