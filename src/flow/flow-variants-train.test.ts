/**
 * GRPO-Guard, TempFlow-GRPO and BranchGRPO end to end through `grpo train recipes/flow-grpo.ts --set flow.rl.algorithm=…`
 * on a tiny pre-trained digits model: each run finishes, records its algorithm in config.json, logs finite
 * losses and a first update whose gradient norm differs from Flow-GRPO's on the same rollout (the step
 * weights act); what cannot run is refused before compute, naming the field.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const { runs, grpo } = inProcessCli('grpo-flow-variants-');
const runsDirectory = ['--set', `logging.runsDirectory=${runs}`];
const tinyRl = settingFlags({
  'flow.rl.steps': 2,
  'flow.rl.groupSize': 3,
  'flow.rl.promptsPerStep': 2,
  'flow.rl.samplingSteps': 4,
  'flow.rl.evalEvery': 2,
  'flow.rl.evalPerClass': 1,
});

describe('flow.rl.algorithm grpo-guard, tempflow-grpo and branch-grpo through grpo train', () => {
  it('train from a pre-trained model; their first updates differ from Flow-GRPO', async () => {
    await grpo('train', 'recipes/flow-pretrain.ts', ...runsDirectory, '--run-name', 'pretrain',
      ...settingFlags({ 'flow.pretrain.steps': 12, 'flow.pretrain.hiddenSize': 8, 'flow.pretrain.numBlocks': 1,
        'flow.pretrain.imageSize': 7, 'flow.classifierTraining.epochs': 1 })); // prettier-ignore
    const pretrain = join(runs, 'pretrain');
    const start = ['--model', join(pretrain, 'model'), '--set', `flow.classifier=${join(pretrain, 'classifier')}`];
    const gradNorms: Record<string, number> = {};
    for (const algorithm of ['flow-grpo', 'grpo-guard', 'tempflow-grpo', 'branch-grpo']) {
      // BranchGRPO grows DanceGRPO trees: its step, η = 0.3, and a tree split at steps 0 and 2 (4 leaves a prompt).
      const branch = settingFlags({
        'flow.rl.sampler': 'dance',
        'flow.rl.noiseLevel': 0.3,
        'flow.rl.branch': { splitPoints: [0, 2], fusion: 'probability', widthPruning: 'best-worst' },
      });
      await grpo('train', 'recipes/flow-grpo.ts', ...runsDirectory, '--run-name', algorithm, ...start, ...tinyRl,
        '--set', `flow.rl.algorithm=${algorithm}`, ...(algorithm === 'branch-grpo' ? branch : [])); // prettier-ignore
      const run = join(runs, algorithm);
      expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8')).flow.rl.algorithm).toBe(algorithm);
      expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
      const records = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => 'reward/mean' in line); // the RL steps (eval lines carry eval/…)
      expect(records.map((record) => record.step)).toEqual([1, 2]);
      for (const record of records)
        for (const key of ['loss/total', 'loss/policy', 'gradNorm', 'reward/mean', 'reward/thickness/mean'])
          expect(Number.isFinite(record[key]), `${algorithm} ${key}`).toBe(true);
      gradNorms[algorithm] = records[0].gradNorm as number;
    }
    // Same seed and model: GRPO-Guard's first rollout is Flow-GRPO's, and only its weights s/(−dt)… change the
    // gradient; TempFlow's rollout branches, so its whole batch differs.
    expect(Math.abs(gradNorms['grpo-guard'] - gradNorms['flow-grpo'])).toBeGreaterThan(1e-3 * gradNorms['flow-grpo']);
    expect(gradNorms['tempflow-grpo']).not.toBe(gradNorms['flow-grpo']);
    expect(JSON.parse(readFileSync(join(runs, 'branch-grpo', 'config.json'), 'utf8')).flow.rl.branch).toMatchObject({
      splitPoints: [0, 2],
      noiseScale: 0.3,
      fusion: 'probability',
      widthPruning: 'best-worst',
      widthRatio: 0.5,
    });
  }, 180_000);

  it('refuses what cannot run before any compute, naming the field', async () => {
    const train = (settings: Record<string, unknown>) =>
      grpo('train', 'recipes/flow-grpo.ts', ...runsDirectory, '--model', join(runs, 'none'), ...settingFlags(settings));
    await expect(train({ 'flow.rl.algorithm': 'grpo-guard', 'flow.rl.sampler': 'cps' })).rejects.toThrow(
      /flow\.rl\.sampler must be "sde" for algorithm "grpo-guard"/,
    );
    await expect(train({ 'flow.rl.algorithm': 'tempflow-grpo', 'flow.rl.window': { size: 2 } })).rejects.toThrow(
      /flow\.rl\.window \(MixGRPO\) and algorithm "tempflow-grpo"/,
    );
    await expect(train({ 'flow.rl.algorithm': 'tempflow-grpo', 'flow.rl.timestepSelection': 'dance' })).rejects.toThrow(
      /flow\.rl\.timestepSelection "dance" does not apply to algorithm "tempflow-grpo"/,
    );
    await expect(train({ 'flow.rl.algorithm': 'tempo' })).rejects.toThrow(/flow\.rl\.algorithm/);
    await expect(train({ 'flow.rl.algorithm': 'branch-grpo' })).rejects.toThrow(
      /flow\.rl\.sampler must be "dance" for algorithm "branch-grpo"/,
    );
    await expect(train({ 'flow.rl.branch': { splitPoints: [0] } })).rejects.toThrow(
      /flow\.rl\.branch applies to algorithm "branch-grpo" only/,
    );
    const branch = { 'flow.rl.algorithm': 'branch-grpo', 'flow.rl.sampler': 'dance' };
    await expect(train({ ...branch, 'flow.rl.branch': { splitPoints: [0, 99] } })).rejects.toThrow(
      /flow\.rl\.branch\.splitPoints: 99 is not a step/,
    );
    await expect(train({ ...branch, 'flow.rl.branch': { splitPoints: [0], widthRatio: 2 } })).rejects.toThrow(
      /flow\.rl\.branch\.widthRatio must be in \(0, 1\]/,
    );
    await expect(train({ ...branch, 'flow.rl.advantageEstimator': 'rloo' })).rejects.toThrow(
      /flow\.rl\.advantageEstimator does not apply to algorithm "branch-grpo"/,
    );
  });
});
