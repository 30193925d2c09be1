/**
 * Zoom-Zero's recipe (#148, recipes/papers/zoom-zero.ts): the rewards as the authors' tvg_zoom.py
 * (merged-interval IoU, answer after the last </think>, the format fullmatch, the zoom substring test),
 * the zoom-in stand-in, the rows and demonstrations, and a run through `grpo train` with the
 * `zoom-zero` advantage at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import defaultRecipe, {
  answerReward,
  formatReward,
  glueMarkerIds,
  intervalIou,
  iouReward,
  parseIntervals,
  zoomVerifier,
  zoomZeroTask,
  zoomZeroZoom,
} from '../../recipes/papers/zoom-zero.js';
import { CharTokenizer } from '../model/char-tokenizer.js';
import { makeRewardInput } from '../rewards/types.js';
import { SCRATCH_IMAGE_TOKENS } from '../trainer/vision-setup.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-zoom-zero-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const good = '<think>it shows at <time>1-2</time></think>\n<answer>B</answer>\n<glue>[(1, 3)]</glue>';

describe('Zoom-Zero rewards (tvg_zoom.py)', () => {
  it('IoU over merged intervals, 0 without a <glue> or with an invalid list', () => {
    expect(
      intervalIou(
        [
          [0, 2],
          [1, 3],
        ],
        [[1, 4]],
      ),
    ).toBeCloseTo(0.5, 10); // [0, 3] ∩ [1, 4] = 2, union 4
    expect(intervalIou([[0, 1]], [[2, 3]])).toBe(0);
    expect(intervalIou([], [])).toBe(0); // union 0
    expect(iouReward(good, [[1, 3]])).toBe(1);
    expect(iouReward('<glue>[(3, 1)]</glue>', [[1, 3]])).toBe(0); // start > end: invalid
    expect(iouReward('<glue>[(01, 3)]</glue>', [[1, 3]])).toBe(0); // literal_eval refuses 01
    expect(iouReward('<glue> [(1.5, 3),] </glue>', [[1, 3]])).toBeCloseTo(0.75, 10); // stripped, trailing comma
    expect(iouReward('[(1, 3)]', [[1, 3]])).toBe(0);
    expect(parseIntervals('[]')).toEqual([]);
  });

  it('answer: the first <answer> after the last </think>, stripped, parentheses dropped', () => {
    expect(answerReward(good, 'B')).toBe(1);
    expect(answerReward('<answer>(B)</answer>', 'B')).toBe(1);
    expect(answerReward('<think><answer>B</answer></think><answer>C</answer>', 'B')).toBe(0);
    expect(answerReward('<answer> C </answer><answer>B</answer>', 'B')).toBe(0);
  });

  it('format: the fullmatch with <time> in the thinking and a valid <glue> list', () => {
    expect(formatReward(good)).toBe(1);
    expect(formatReward(`  ${good}\n`)).toBe(1); // stripped first
    expect(formatReward(good.replace('<time>1-2</time>', ''))).toBe(0);
    expect(formatReward(good.replace('<answer>B', '<answer>G'))).toBe(0); // letters A–F only
    expect(formatReward(good.replace('[(1, 3)]', '[(3, 1)]'))).toBe(0); // matches, but the list is invalid
    expect(formatReward(`${good} more`)).toBe(0);
  });

  it('zoom: the stand-in reads only the named seconds; the truth must be in its answer or contain it', () => {
    const [row] = zoomZeroTask.trainExamples(1, 3);
    const [[start, end]] = row.span as [number, number][];
    const frames = row.images as Parameters<typeof zoomVerifier>[0];
    expect(zoomVerifier(frames, [[start, end]])).toBe(row.answer);
    expect(zoomVerifier(frames, [[start + 0.5, start + 0.6]])).toBe(row.answer); // inside second `start`
    const outside = Array.from({ length: 4 }, (_, k) => k).filter((k) => k < start || k >= end);
    expect(
      zoomVerifier(
        frames,
        outside.map((k) => [k, k + 1] as [number, number]),
      ),
    ).toBe('none');
    const zoom = (span: string) =>
      zoomZeroZoom(makeRewardInput({ completion: `<glue>${span}</glue>`, row: { ...row, prompt: '' } }));
    expect(zoom(`[(${start}, ${end})]`)).toBe(1);
    expect(zoom('[(9, 10)]')).toBe(0);
  });
});

describe('Zoom-Zero rows and recipe', () => {
  it('rows: the shape only in the span’s frames; no held-out video trained on; demonstrations fit', () => {
    const rows = zoomZeroTask.trainExamples(200, 1);
    const alphabet = new Set(zoomZeroTask.alphabet);
    let draw = 0.1;
    for (const row of rows) {
      const [[start, end]] = row.span as [number, number][];
      expect(end - start).toBeGreaterThanOrEqual(1);
      expect(end).toBeLessThanOrEqual(4);
      const frames = row.images as Parameters<typeof zoomVerifier>[0];
      expect(zoomVerifier(frames, [[0, 4]])).toBe(row.answer);
      draw = (draw + 0.37) % 1;
      const demonstration = zoomZeroTask.demonstration(row, () => draw);
      expect(formatReward(demonstration)).toBe(1);
      for (const character of demonstration) expect(alphabet.has(character), character).toBe(true);
      expect(demonstration.length + 1).toBeLessThanOrEqual(defaultRecipe.config.sampling.maxNewTokens);
    }
    const key = (row: Record<string, unknown>) => JSON.stringify([row.answer, row.cell, row.span]);
    const held = new Set(zoomZeroTask.evalExamples(50, 1).map(key));
    expect(rows.some((row) => held.has(key(row)))).toBe(false);
  });

  it("the marker ids are the vision tokenizer's ids of <glue>", () => {
    const tokenizer = new CharTokenizer({ alphabet: zoomZeroTask.alphabet, extraSpecialTokens: SCRATCH_IMAGE_TOKENS });
    expect(glueMarkerIds).toEqual(tokenizer.encode('<glue>', { addSpecialTokens: false }));
    expect(tokenizer.decode(glueMarkerIds)).toBe('<glue>');
  });

  it('trains through grpo train with the zoom-zero advantage', async () => {
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
    expect(await runTrainCommand({ recipe: 'recipes/papers/zoom-zero.ts', set, runName: 'zoom', quiet: true })).toBe(0);
    const run = join(scratch, 'zoom');
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
    const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      task: 'zoom-zero-video',
      sampling: { groupSize: 8 },
      algorithm: { advantage: 'zoom-zero', advantageOptions: { markerIds: glueMarkerIds, answerTokens: 19 } },
    });
    const steps = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => 'reward/iou/mean' in line);
    expect(steps.length).toBe(2);
    for (const line of steps)
      for (const name of ['answer', 'format', 'zoom']) expect(line).toHaveProperty(`reward/${name}/mean`);
  }, 240_000);
});
