/**
 * recipes/papers/redi.ts (REDI, #72) end to end through `grpo train` at a tiny size: SFT on the
 * positive traces, then the redi loss on the addition teacher's traces, not the policy's samples —
 * every GRPO completion is the right sum or the teacher's carry-dropped one, and every group the loss
 * sees (dynamic sampling) holds one right and one wrong trace, the authors' pairs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withoutCarry } from '../data/index.js';
import { buildProgram } from './main.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs } = inProcessCli('grpo-redi-recipe-');

const readLines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

interface LoggedCompletion {
  text: string;
  rewards: Record<string, number>;
  inLoss: boolean;
}

describe('recipes/papers/redi.ts', () => {
  it('trains the redi loss on teacher traces, one right and one wrong per kept problem', async () => {
    const tiny = settingFlags({
      'model.hiddenSize': 32,
      'model.numLayers': 1,
      'model.numHeads': 2,
      'sft.steps': 20,
      'grpo.steps': 2,
      'grpo.promptsPerStep': 4,
      'evaluation.examples': 4,
      'checkpoint.every': 0,
      'logging.runsDirectory': runs,
    });
    await buildProgram()
      .exitOverride()
      .parseAsync(['node', 'grpo', 'train', join(root, 'recipes/papers/redi.ts'), '--run-name', 'redi', ...tiny]);
    const config = JSON.parse(readFileSync(join(runs, 'redi', 'config.json'), 'utf8'));
    expect(config.algorithm.loss).toBe('redi');
    expect(config.taskOptions.teacherCarryErrorRate).toBe(0); // stage 1: SFT on positive traces only
    const steps = readLines(join(runs, 'redi', 'metrics.jsonl')).filter(
      (line) => line.phase === 'grpo' && 'loss/policy' in line,
    );
    expect(steps).toHaveLength(2);
    steps.forEach((step) => expect(Number.isFinite(step['loss/policy'])).toBe(true));
    const groups = readLines(join(runs, 'redi', 'samples.jsonl')).filter((line) => line.phase === 'grpo');
    expect(groups.length).toBeGreaterThan(0);
    let pairs = 0;
    for (const group of groups) {
      const [a, b] = String(group.prompt).replace('=', '').split('+').map(Number);
      const completions = group.completions as LoggedCompletion[];
      for (const completion of completions) expect([String(a + b), withoutCarry(a, b)]).toContain(completion.text);
      if (!completions[0].inLoss) continue;
      pairs++;
      expect(completions.map((c) => c.rewards.correct).sort()).toEqual([0, 1]);
    }
    expect(pairs, 'some problem had a right and a wrong trace').toBeGreaterThan(0);
  });
});
