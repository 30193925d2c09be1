/**
 * `grpo train` with a built-in reward whose column the data lacks (issue 39): refused before any
 * model loads, one line per missing column naming the reward's config position and the column.
 * "Before any model loads" is shown as in train-algorithm-names.test.ts: model.checkpoint names a
 * folder that does not exist, and the refusal must be about the column, never the checkpoint.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-reward-columns-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const settings = [
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
  'model.checkpoint="/nonexistent/checkpoint"',
  'checkpoint.every=0',
];

describe('grpo train refuses a reward whose column the rows lack', () => {
  it('char-f1 on the addition task (no reference column): refused naming the column, not the checkpoint', async () => {
    const attempt = runTrainCommand({
      set: [...settings, 'rewards=[{"name":"think-format","weight":0},{"name":"char-f1","weight":1}]'],
      runName: 'char-f1',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(
      /^- rewards\[1\]: "char-f1" reads column "reference" \(its referenceColumn\), which training row 0 does not have \(columns: prompt, answer, a, b\)$/m,
    );
    await expect(attempt).rejects.not.toThrow(/nonexistent|think-format/);
    expect(existsSync(join(scratch, 'char-f1'))).toBe(false);
  });

  it('one line per missing column; an option naming a column the rows have passes the check', async () => {
    const attempt = runTrainCommand({
      set: [
        ...settings,
        'rewards=[{"name":"equation","weight":1},{"name":"char-f1","options":{"referenceColumn":"answer"}}]',
      ],
      runName: 'equation',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(/^- rewards\[0\]: "equation" reads column "numbers" \(its numbersColumn\)/m);
    await expect(attempt).rejects.toThrow(/^- rewards\[0\]: "equation" reads column "target" \(its targetColumn\)/m);
    await expect(attempt).rejects.not.toThrow(/char-f1/);
    // With the columns there, the run gets as far as the model: the checkpoint is what it refuses.
    await expect(
      runTrainCommand({
        set: [...settings, 'rewards=[{"name":"char-f1","options":{"referenceColumn":"answer"}}]'],
        runName: 'answer',
        quiet: true,
      }),
    ).rejects.toThrow(/model\.checkpoint/);
  });

  it('a reward that scores tool calls is refused on a single-turn run, before the model, naming it', async () => {
    const attempt = runTrainCommand({
      set: [
        ...settings,
        'rewards=[{"name":"think-format","weight":0},{"name":"tool-efficiency","weight":1},{"name":"smartsearch","options":{"gamma":0.1,"phiMin":0.5,"phiMax":0.3}}]',
      ],
      runName: 'tool-calls',
      quiet: true,
    });
    await expect(attempt).rejects.toThrow(
      /^- rewards\[1\]: "tool-efficiency" scores an agent episode's tool calls, and this run's rollout is single-turn/m,
    );
    await expect(attempt).rejects.toThrow(/^- rewards\[2\]: "smartsearch" scores an agent episode's tool calls/m);
    await expect(attempt).rejects.not.toThrow(/nonexistent|think-format/);
  });
});
