/**
 * Temporal-R1's recipe (#35, recipes/papers/temporal-r1.ts): the temporal-grounding reward as the
 * authors' verl/utils/reward_score/tvg.py (every expected value below was printed by their
 * `tvg_accuracy_reward`, `tvg_format_reward` and `tvg_compute_score` run on the same input), the
 * rows and demonstrations, and a run through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import defaultRecipe, {
  pythonFloat,
  temporalIou,
  temporalR1Iou,
  temporalR1Task,
  tvgAccuracyReward,
  tvgFormatReward,
} from '../../recipes/papers/temporal-r1.js';
import { makeRewardInput } from '../rewards/types.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-temporal-r1-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const answer = (start: string, end: string) => `<answer>{"start_time": ${start}, "end_time": ${end}}</answer>`;
const quarter: [number, number] = [0.25, 0.75];

// completion, truth, video length, their accuracy, their format
const cases: Array<[string, [number, number], number, number, number]> = [
  [`<think>1 to 3</think>\n${answer('"1"', '"3"')}`, quarter, 4, 1, 1],
  [`<think>x</think>${answer('"0"', '"4"')}`, [0.25, 0.5], 4, 0.25, 1],
  [`<think>x</think>${answer('1.5', '"3"')}`, quarter, 4, 0.75, 0], // a number is read; the format wants quotes
  [`<think>x</think>${answer('" 1_0 "', '"30"')}`, quarter, 40, 1, 0], // float() strips and reads 1_0
  [`<think>x</think>${answer('"3"', '"1"')}`, quarter, 4, 0, 1], // reversed span: no overlap
  [answer('"2"', '"2"'), [0.5, 0.5], 4, 0, 0], // zero hull: ZeroDivisionError, scored 0
  ['<answer>{"start_time": "1"}</answer>', quarter, 4, 0, 0], // KeyError
  ['<answer>[1, 3]</answer>', quarter, 4, 0, 0], // not a dict
  [answer('"inf"', '"3"'), quarter, 4, 0, 0],
  [answer('"nan"', '"3"'), quarter, 4, 0, 0], // Python's max/min order keeps NaN out
  [answer('true', '"3"'), quarter, 4, 1, 0], // float(True) = 1
  [answer('null', '"3"'), quarter, 4, 0, 0],
  ['<think>a</think> <answer> {"start_time":"1.5","end_time":"2"} </answer>', quarter, 4, 0.25, 1],
  [`<think>a</think>${answer('"1"', '"3"')}x`, quarter, 4, 1, 0], // fullmatch
  [`${answer('"0"', '"1"')}${answer('"1"', '"3"')}`, quarter, 4, 0, 0], // the first <answer> only
];

describe('Temporal-R1 reward (tvg.py)', () => {
  it.each(cases)('%s', (completion, truth, videoLength, accuracy, format) => {
    expect(tvgAccuracyReward(completion, truth, videoLength)).toBeCloseTo(accuracy, 12);
    expect(tvgFormatReward(completion)).toBe(format);
  });

  it("temporal_iou is overlap over the hull; Python's float() grammar", () => {
    expect(temporalIou([0, 0.5], [0.25, 1])).toBeCloseTo(0.25 / 1, 12);
    expect(temporalIou([0.1, 0.2], [0.5, 0.9])).toBe(0);
    expect(() => temporalIou([0.5, 0.5], [0.5, 0.5])).toThrow(/division by zero/);
    expect(pythonFloat('+.5e1')).toBe(5);
    expect(pythonFloat('-Infinity')).toBe(-Infinity);
    expect(() => pythonFloat('1__0')).toThrow();
    expect(() => pythonFloat('0x10')).toThrow();
    expect(() => pythonFloat(null)).toThrow();
  });

  it('the reward reads the row’s normalised span and video length', () => {
    const row = { prompt: '', solution: [0.25, 0.75], video_length: 4 };
    expect(temporalR1Iou(makeRewardInput({ completion: answer('"1"', '"2"'), row }))).toBeCloseTo(0.5, 12);
  });
});

describe('Temporal-R1 rows and recipe', () => {
  it('rows: the queried shape only in its span; no held-out video trained on; demonstrations fit', () => {
    const rows = temporalR1Task.trainExamples(200, 1);
    const alphabet = new Set(temporalR1Task.alphabet);
    let draw = 0.1;
    let wholeVideo = 0;
    for (const row of rows) {
      const [start, end] = row.span as [number, number];
      expect(end - start).toBeGreaterThanOrEqual(1);
      expect(end).toBeLessThanOrEqual(4);
      expect(row.solution).toEqual([start / 4, end / 4]);
      const blank = (row.images as Array<{ data: ArrayLike<number> }>).map((image) =>
        Array.from(image.data).every(
          (value) => value === (row.images as Array<{ data: ArrayLike<number> }>)[0].data[0],
        ),
      );
      for (let k = start; k < end; k++) expect(blank[k]).toBe(false);
      draw = (draw + 0.37) % 1;
      const demonstration = temporalR1Task.demonstration(row, () => draw);
      const reward = tvgAccuracyReward(demonstration, row.solution as [number, number], 4);
      if (demonstration.includes('"start_time": "0", "end_time": "4"') && end - start < 4) wholeVideo++;
      else expect(reward).toBe(1);
      expect(tvgFormatReward(demonstration)).toBe(1);
      for (const character of demonstration) expect(alphabet.has(character), character).toBe(true);
      expect(demonstration.length + 1).toBeLessThanOrEqual(defaultRecipe.config.sampling.maxNewTokens);
    }
    expect(wholeVideo).toBeGreaterThan(50); // the teacher is wrong about the span about half the time
    const key = (row: Record<string, unknown>) => JSON.stringify([row.prompt, row.cell, row.span, row.distractor]);
    const held = new Set(temporalR1Task.evalExamples(50, 1).map(key));
    expect(rows.some((row) => held.has(key(row)))).toBe(false);
  });

  it('trains through grpo train with the tvg rewards and their settings', async () => {
    const set = [
      'sft.steps=2',
      'sft.batchSize=4',
      'grpo.steps=2',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=16',
      'sampling.maxNewTokens=12',
      'evaluation.examples=2',
      'evaluation.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ recipe: 'recipes/papers/temporal-r1.ts', set, runName: 'tr1', quiet: true })).toBe(
      0,
    );
    const run = join(scratch, 'tr1');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      task: 'temporal-r1-video',
      sampling: { groupSize: 8, temperature: 1 },
      algorithm: { advantage: 'grpo', klCoefficient: 0.01, klEstimator: 'k3', entropyCoefficient: 1e-3 },
    });
    // tvg_compute_score = 0.5 · accuracy + 0.5 · format
    expect(defaultRecipe.rewards.map((reward) => [reward.name, reward.weight])).toEqual([
      ['tvg-iou', 0.5],
      ['tvg-format', 0.5],
    ]);
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => 'reward/tvg-iou/mean' in line);
    expect(steps.length).toBe(2);
    for (const line of steps) expect(line).toHaveProperty('reward/tvg-format/mean');
  }, 240_000);
});
