/**
 * recipes/papers/trapo-data.ts (TraPO, #97, on rows of your own) through `grpo train` with the
 * tinystories fixture and rows written here: each step draws every row once, labeled rows are scored
 * against their answer, unlabeled ones leave the loss through the warm-up. Rows without the
 * `labeled` column are refused, naming it, by the check `grpo train` runs before any model loads.
 * (One recipe load per file: a second in-process load would re-register its estimator.)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRewardColumns } from '../rewards/index.js';
import trapoData from '../../recipes/papers/trapo-data.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';
import { inProcessCli, settingFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const { runs, grpo } = inProcessCli('grpo-trapo-data-recipe-');

const rows = Array.from({ length: 8 }, (_, i) => ({
  question: `What is ${i + 2} + ${3 * i + 1}?`,
  answer: String(4 * i + 3),
  labeled: i % 4 === 0,
  epoch: 'all',
}));

describe('recipes/papers/trapo-data.ts', () => {
  it('trains on your rows: every row once a step, unlabeled groups out of the loss in the warm-up', async () => {
    const file = join(runs, 'rows.jsonl');
    writeFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
    const flags = settingFlags({
      'grpo.promptsPerStep': 8,
      'grpo.steps': 2,
      'sampling.groupSize': 2,
      'sampling.maxNewTokens': 8,
      'evaluation.examples': 2,
      'checkpoint.every': 0,
      'logging.samplesPerStep': 8,
      'logging.runsDirectory': runs,
    });
    const data = ['--model', tinyStoriesModel, '--data', file, '--eval-data', file, '--prompt-column', 'question'];
    await grpo('train', join(root, 'recipes/papers/trapo-data.ts'), '--run-name', 'rows', ...data, ...flags);
    const groups = readFileSync(join(runs, 'rows', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            phase: string;
            prompt: string;
            completions: { inLoss: boolean; rewards: Record<string, number | null> }[];
          },
      )
      .filter((group) => group.phase === 'grpo');
    expect(groups).toHaveLength(16);
    for (const group of groups) {
      const labeled = rows.find((row) => group.prompt.includes(row.question))!.labeled;
      for (const completion of group.completions) {
        expect(completion.inLoss).toBe(labeled);
        expect(completion.rewards.trapo === null).toBe(!labeled);
      }
    }
  });

  it('declares the labeled column, so rows without it are refused before any model loads', () => {
    const unlabeledRows = rows.map(({ labeled: _labeled, ...row }) => row);
    expect(() => checkRewardColumns(trapoData.rewards, unlabeledRows)).toThrow(/rewards\[0\]: .*"labeled"/);
  });
});
