/**
 * `grpo train --task addition --reward majority-vote --reward vote-frequency`: the label-free rewards
 * compose with the trainer end to end (SFT, GRPO, evaluation): both are logged per step, every
 * sample carries both scores, and the run finishes. Whether they raise held-out accuracy is not
 * claimed here (see docs/algorithms.md, label-free rewards). TTRV's `ttrv` reward likewise, each
 * logged score recomputed from the logged texts, and SCOPE's `scope`, which reads the token texts.
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

  it('ttrv (TTRV, #64): every logged reward is the frequency minus 0.75 of the normalised answer entropy', async () => {
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
    const code = await runTrainCommand({ set, data: { rewards: ['ttrv'] }, runName: 'ttrv', quiet: true });
    expect(code).toBe(0);
    const run = join(scratch, 'ttrv');
    expect(lines(join(run, 'metrics.jsonl')).filter((m) => 'train/samples' in m)).toHaveLength(2);
    // Recomputed from the logged texts: each one's last number is its answer, none is one more answer.
    const answerOf = (text: string) => text.match(/\d+/g)?.map(Number).at(-1) ?? 'none';
    const records = lines(join(run, 'samples.jsonl')).filter((record) => record.phase === 'grpo');
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      const answers = (record.completions as Array<{ text: string }>).map((c) => answerOf(c.text));
      const counts = new Map<unknown, number>();
      for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
      const n = answers.length;
      const entropy = -[...counts.values()].reduce((sum, count) => sum + (count / n) * Math.log(count / n), 0);
      const term = counts.size > 1 ? (0.75 * entropy) / Math.log(counts.size) : 0;
      record.completions.forEach((completion: { rewards: Record<string, number> }, index: number) =>
        expect(completion.rewards.ttrv).toBeCloseTo(counts.get(answers[index])! / n - term, 5),
      );
    }
  });

  it('scope (SCOPE, #136): the step-wise confidence reads the token texts and logprobs grpo train gives; every sample scores 0 or 1', async () => {
    const set = [
      'task=addition',
      'model.hiddenSize=16',
      'model.numLayers=1',
      'model.numHeads=2',
      'sft.steps=2',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=8',
      'sampling.groupSize=8',
      'sampling.maxNewTokens=4',
      'evaluation.examples=4',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const code = await runTrainCommand({ set, data: { rewards: ['scope'] }, runName: 'scope', quiet: true });
    expect(code).toBe(0);
    const run = join(scratch, 'scope');
    const steps = lines(join(run, 'metrics.jsonl')).filter((m) => 'train/samples' in m);
    expect(steps).toHaveLength(2);
    // a reward that threw (no token texts, no logprobs) would leave its samples out: none may be
    for (const m of steps) expect(m['reward/scope/invalid']).toBe(0);
    const records = lines(join(run, 'samples.jsonl')).filter((record) => record.phase === 'grpo');
    const answers = records.flatMap((record) =>
      record.completions.map((c: { text: string }) => c.text.match(/\d+/)?.[0]),
    );
    // the untrained model's groups disagree, so some vote weighed confidences
    expect(new Set(answers).size).toBeGreaterThan(2);
    for (const record of records)
      for (const completion of record.completions) expect([0, 1]).toContain(completion.rewards.scope);
  });
});
