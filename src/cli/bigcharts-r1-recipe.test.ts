/**
 * BigCharts-R1's recipe (#9, recipes/papers/bigcharts-r1.ts): the CERM and format rewards as the
 * authors' grpo_bigcharts.py, the held-out check as their eval_metrics.py, the generated bar charts,
 * and SFT then GRPO through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import recipe, { bigChartsFormat, bigChartsTask, relaxedCorrectness } from '../../recipes/papers/bigcharts-r1.js';
import { cermScore } from '../rewards/cerm.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-bigcharts-r1-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('BigCharts-R1 rewards', () => {
  it('format_reward: the stripped completion fullmatches <thinking>…</thinking>\\s*<answer>…</answer>', () => {
    expect(bigChartsFormat('<thinking>7</thinking> <answer>7</answer>')).toBe(1);
    expect(bigChartsFormat(' \n<thinking>a\nb</thinking>\n<answer>\n7</answer>\n')).toBe(1); // strip, DOTALL
    expect(bigChartsFormat('<think>7</think> <answer>7</answer>')).toBe(0); // their tag is <thinking>
    expect(bigChartsFormat('<answer>7</answer>')).toBe(0);
    expect(bigChartsFormat('<thinking>7</thinking> <answer>7</answer> so 7')).toBe(0);
  });

  it('relaxed_correctness (held-out accuracy): within 5% of a non-zero number, else equal lower-cased', () => {
    expect(relaxedCorrectness('10', '10.4')).toBe(true);
    expect(relaxedCorrectness('10', '10.6')).toBe(false);
    expect(relaxedCorrectness('0', '0')).toBe(true); // truth 0 is falsy: text comparison
    expect(relaxedCorrectness('0', '0.0')).toBe(false);
    expect(relaxedCorrectness('red', 'Red')).toBe(true);
  });
});

describe('BigCharts-R1 bar charts', () => {
  it("rows: the answer is the asked bar's height or the tallest bar, drawn in the image", () => {
    for (const row of [...bigChartsTask.trainExamples(60, 2), ...bigChartsTask.evalExamples(20, 2)]) {
      const bars = String(row.chart)
        .split(',')
        .map((bar) => bar.split('='));
      const image = row.images?.[0] as { data: Uint8Array };
      bars.forEach(([, height], index) => {
        // The bar's column (left edge + 1) is lit from the bottom up to its height, dark above it.
        const x = [1, 6, 11][index] + 1;
        const lit = (y: number) => image.data[(y * 16 + x) * 3] !== 24 || image.data[(y * 16 + x) * 3 + 1] !== 24;
        expect(lit(16 - Number(height))).toBe(true);
        if (Number(height) < 16) expect(lit(15 - Number(height))).toBe(false);
      });
      const heights = Object.fromEntries(bars.map(([colour, height]) => [colour, Number(height)]));
      const asked = /value of the (\w+) bar/.exec(String(row.prompt))?.[1];
      if (asked) expect(row.answer).toBe(String(heights[asked]));
      else expect(heights[String(row.answer)]).toBe(Math.max(...Object.values(heights)));
      expect(row.misread).not.toBe(row.answer);
    }
  });

  it('demonstrations: format 1, CERM 1 when right and below 1 when misread; every character in the alphabet and fits maxNewTokens', () => {
    const alphabet = new Set(bigChartsTask.alphabet);
    for (const row of bigChartsTask.trainExamples(50, 4)) {
      const right = bigChartsTask.demonstration(row, () => 0.99);
      const wrong = bigChartsTask.demonstration(row, () => 0);
      expect(bigChartsFormat(right)).toBe(1);
      expect(cermScore(right, String(row.answer))).toBe(1);
      expect(cermScore(wrong, String(row.answer))).toBeLessThan(1);
      expect(bigChartsTask.isCorrect(row, right)).toBe(true);
      for (const text of [right, wrong, String(row.prompt).replace('<image>', '')])
        for (const character of text) expect(alphabet.has(character)).toBe(true);
      expect(right.length + 1).toBeLessThanOrEqual(recipe.config.sampling.maxNewTokens);
    }
  });

  it('trains through grpo train: SFT, then GRPO on cerm + format with the authors settings', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=16',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    const recipePath = 'recipes/papers/bigcharts-r1.ts';
    expect(await runTrainCommand({ recipe: recipePath, set, runName: 'bigcharts', quiet: true })).toBe(0);
    const run = join(scratch, 'bigcharts');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    expect(JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'))).toMatchObject({
      task: 'bigcharts-bars',
      sampling: { groupSize: 8 },
      algorithm: { klCoefficient: 0.04, klEstimator: 'k3', advantageOptions: { epsilon: 1e-4 } },
    });
    const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.filter((line) => 'reward/cerm/mean' in line && 'reward/format/mean' in line).length).toBe(2);
  }, 180_000);
});
