/**
 * Rewards in worker threads during `grpo train` (`rewardWorkers.threads`, issue 36): a recipe's
 * synchronous reward that never returns on some samples is stopped at `rewardWorkers.timeoutMs`,
 * each such call is a failed reward naming the reward (in metrics.jsonl and samples.jsonl, never a
 * score of 0), and the run finishes. On the training thread the same reward would hold the run
 * forever (a synchronous loop cannot be timed out there), so that case is not run. Rewards that
 * cannot be rebuilt in a worker (functions passed from code) are refused before any model loads.
 * Behaviour only, no wall-clock assertions.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunContext, resolveConfig } from '../trainer/index.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-train-reward-workers-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// A user's recipe file: its reward loops forever, synchronously, on the first completion of every
// training group (evaluation groups have one completion, so evaluation is left alone).
const recipe = join(scratch, 'hangs.ts');
writeFileSync(
  recipe,
  `export default {
  config: { task: 'addition' },
  rewards: [
    {
      name: 'hangs-on-first',
      weight: 1,
      reward: ({ completion, group, indexInGroup }) => {
        if (group.length > 1 && indexInGroup === 0) for (;;) {}
        return completion.length % 2;
      },
    },
  ],
};
`,
);

const small = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=0',
  'grpo.steps=2',
  'grpo.promptsPerStep=2',
  'sampling.groupSize=3',
  'sampling.maxNewTokens=4',
  'grpo.microBatchSize=6',
  'evaluation.examples=2',
  'checkpoint.every=0',
  'rewardWorkers.threads=2',
  'rewardWorkers.timeoutMs=300',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

const jsonLines = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, any>);

describe('rewardWorkers in grpo train', () => {
  it('stops a never-returning synchronous recipe reward, records it as failed by name, and trains on', async () => {
    expect(await runTrainCommand({ recipe, set: small, runName: 'hangs', quiet: true })).toBe(0);
    const run = join(scratch, 'hangs');
    const steps = jsonLines(join(run, 'metrics.jsonl')).filter((line) => line.phase === 'grpo' && 'loss/total' in line);
    expect(steps).toHaveLength(2);
    // One call per group hung: 2 of 6 samples each step, failed (out of the loss), never scored 0.
    for (const step of steps) expect(step['reward/hangs-on-first/invalid']).toBe(2);
    const completions = jsonLines(join(run, 'samples.jsonl')).flatMap((group) => group.completions);
    const failed = completions.filter((completion) => completion.errors);
    expect(failed).toHaveLength(4);
    for (const completion of failed) {
      expect(completion.errors['hangs-on-first']).toBe('timed out after 300 ms (stopped)');
      expect(completion.rewards['hangs-on-first']).toBeNull();
      expect(completion.inLoss).toBe(false);
    }
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
  }, 120_000);

  it("scores a task's own (named) rewards in workers as on the training thread", async () => {
    const named = small.filter((setting) => !setting.startsWith('rewardWorkers.'));
    const scores = async (runName: string, extra: string[]) => {
      expect(await runTrainCommand({ set: [...named, ...extra], runName, quiet: true })).toBe(0);
      return jsonLines(join(scratch, runName, 'samples.jsonl')).flatMap((group) =>
        group.completions.map((completion: { rewards: unknown }) => completion.rewards),
      );
    };
    const inWorkers = await scores('named-workers', ['rewardWorkers.threads=1']);
    expect(inWorkers.length).toBeGreaterThan(0);
    expect(inWorkers).toEqual(await scores('named-here', []));
  }, 120_000);

  it('refuses rewards passed as functions (they cannot cross threads), before any model loads', () => {
    const config = resolveConfig({ rewardWorkers: { threads: 2 } }, []);
    expect(() => createRunContext(config, { rewards: [{ name: 'f', reward: () => 1, weight: 1 }] })).toThrow(
      /rewardWorkers\.threads: reward workers rebuild the rewards in each thread, and rewards passed as functions cannot cross threads/,
    );
  });
});
