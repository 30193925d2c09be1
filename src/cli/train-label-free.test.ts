/**
 * `grpo train --task addition --reward majority-vote --reward vote-frequency`: the label-free rewards
 * compose with the trainer end to end (SFT, GRPO, evaluation): both are logged per step, every
 * sample carries both scores, and the run finishes. Whether they raise held-out accuracy is not
 * claimed here (see docs/algorithms.md, label-free rewards).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-label-free-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('label-free rewards through grpo train', () => {
  it('majority-vote and vote-frequency score every sample of a short addition run', async () => {
    const set = [
      'task=addition',
      'model.hiddenSize=16',
      'model.numLayers=1',
      'model.numHeads=2',
      'sft.steps=2',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      'sampling.groupSize=4',
      'sampling.maxNewTokens=4',
      'evaluation.examples=4',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const code = await runTrainCommand({
      set,
      data: { rewards: ['majority-vote', 'vote-frequency:0.5'] },
      runName: 'votes',
      quiet: true,
    });
    expect(code).toBe(0);
    const run = join(scratch, 'votes');
    const steps = lines(join(run, 'metrics.jsonl')).filter((m) => 'train/samples' in m);
    expect(steps).toHaveLength(2);
    for (const m of steps) {
      expect(m['reward/majority-vote/mean']).toBeGreaterThanOrEqual(0);
      expect(m['reward/majority-vote/mean']).toBeLessThanOrEqual(1);
      expect(m['reward/vote-frequency/mean']).toBeGreaterThanOrEqual(0);
      expect(m['reward/vote-frequency/invalid']).toBe(0);
    }
    for (const record of lines(join(run, 'samples.jsonl')))
      for (const completion of record.completions) {
        expect(Object.keys(completion.rewards)).toEqual(['majority-vote', 'vote-frequency']);
        // The frequency reward is 0 exactly when the vote has nothing to count for this sample.
        if (completion.rewards['majority-vote'] === 1) expect(completion.rewards['vote-frequency']).toBeGreaterThan(0);
      }
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
  });
});
