/**
 * `grpo train --task addition --reward unlikeliness --reward negative-surprisal:0`: the rewards that
 * read the policy's logprobs compose with the trainer end to end (SFT, GRPO, evaluation). Every
 * sample's `unlikeliness` is 0 or 1 − β·k/G for a rank k, `negative-surprisal` is a mean logprob
 * (≤ 0, never failed), and the evaluation scores them too. Whether they raise accuracy is not claimed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-policy-rewards-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('rewards that read the policy through grpo train', () => {
  it('unlikeliness and negative-surprisal score every sample of a short addition run', async () => {
    const groupSize = 4;
    const set = [
      'task=addition',
      'model.hiddenSize=16',
      'model.numLayers=1',
      'model.numHeads=2',
      'sft.steps=2',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      `sampling.groupSize=${groupSize}`,
      'sampling.maxNewTokens=4',
      'evaluation.examples=4',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const code = await runTrainCommand({
      set,
      // a correctness check every completion passes, so each group shows its ranks
      data: {
        rewards: ['unlikeliness:1:{"correctness":{"name":"regex","options":{"pattern":"^"}}}', 'negative-surprisal:0'],
      },
      runName: 'policy',
      quiet: true,
    });
    expect(code).toBe(0);
    const run = join(scratch, 'policy');
    const metrics = lines(join(run, 'metrics.jsonl'));
    const steps = metrics.filter((m) => 'train/samples' in m);
    expect(steps).toHaveLength(2);
    for (const m of steps) {
      expect(m['reward/unlikeliness/invalid']).toBe(0);
      expect(m['reward/negative-surprisal/invalid']).toBe(0);
      expect(m['reward/negative-surprisal/mean']).toBeLessThan(0);
    }
    const allowed = Array.from({ length: groupSize }, (_, k) => 1 - (0.25 * k) / groupSize);
    for (const record of lines(join(run, 'samples.jsonl'))) {
      const scores = record.completions.map((completion: { rewards: Record<string, number> }) => {
        expect(completion.rewards['negative-surprisal']).toBeLessThanOrEqual(0);
        return completion.rewards.unlikeliness;
      });
      // one of each rank in the group: the factors 1, 0.9375, 0.875, 0.8125 in some order
      expect([...scores].sort((a, b) => b - a)).toEqual(allowed);
    }
    // evaluation's greedy answers carry logprobs too: a group of one keeps the correctness score (1)
    expect(metrics.filter((m) => 'eval/meanReward' in m).map((m) => m['eval/meanReward'])).toEqual([1, 1]);
  });
});
