/**
 * `grpo train` with `algorithm.loss=gtpo` on a random tiny model, whose mean token entropy is far
 * above GTPO's absolute default `entropyThreshold` 0.7: the filter zeroes every advantage, and the run
 * says so once on stderr (not silently `loss/policy 0`); a threshold above the entropy stays quiet.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-gtpo-entropy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const tiny = [
  'model.hiddenSize=16',
  'model.numLayers=1',
  'model.numHeads=2',
  'sft.steps=0',
  'grpo.steps=2',
  'grpo.promptsPerStep=2',
  'grpo.microBatchSize=8',
  'sampling.groupSize=4',
  'sampling.maxNewTokens=3',
  'evaluation.examples=2',
  'checkpoint.every=0',
  'algorithm.loss=gtpo',
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

async function train(runName: string, extra: string[]): Promise<{ stderr: string; metrics: Record<string, number>[] }> {
  const written: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
  expect(await runTrainCommand({ set: [...tiny, ...extra], runName, quiet: true })).toBe(0);
  vi.restoreAllMocks();
  const metrics = readFileSync(join(scratch, runName, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
    .filter((m) => 'train/samples' in m);
  return { stderr: written.join(''), metrics };
}

describe('gtpo entropy filter', () => {
  it('warns once when the default absolute threshold filters every completion', async () => {
    const { stderr, metrics } = await train('default-threshold', []);
    const filtered = metrics.filter((m) => m['loss/entropyFilteredFraction'] === 1);
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered[0].entropy).toBeGreaterThan(0.7);
    const warnings = stderr.match(/gtpo's entropy filter zeroed every completion's advantage/g) ?? [];
    expect(warnings).toHaveLength(1);
    expect(stderr).toMatch(
      /above algorithm\.lossOptions\.entropyThreshold 0\.7 \(the model's mean token entropy is \d/,
    );
  });

  it('stays quiet when the threshold is above the model entropy', async () => {
    const { stderr, metrics } = await train('high-threshold', ['algorithm.lossOptions.entropyThreshold=100']);
    expect(metrics.every((m) => (m['loss/entropyFilteredFraction'] ?? 0) === 0)).toBe(true);
    expect(stderr).not.toMatch(/entropy filter/);
  });
});
