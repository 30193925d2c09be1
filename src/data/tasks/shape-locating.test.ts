/**
 * shape-locating: the gold outline rasterised at pixel centres is exactly the target's drawn pixels (so
 * `mask-iou` and `box-iou` score against what the image shows), the teacher's right answers score 1 under
 * each answer form's reward and its shape-blind ones do not, options are checked, and the task runs
 * through `grpo train` with a vision reward by name replacing its own.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTrainCommand } from '../../cli/train-command.js';
import { rasterisePolygon } from '../../rewards/mask-iou.js';
import { createReward } from '../../rewards/factories.js';
import { makeRewardInput, type RewardFn } from '../../rewards/types.js';
import type { InMemoryImage } from '../task.js';
import { shapeLocatingTask } from './shape-locating.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-shape-locating-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COLOURS: Record<string, number[]> = { red: [230, 40, 40], green: [40, 200, 60], blue: [60, 90, 240] };

describe('shape-locating', () => {
  it("the gold outline covers exactly the target's drawn pixels of its colour in its cell", () => {
    const task = shapeLocatingTask({ imageSize: 32, cellSize: 8 });
    for (const example of task.trainExamples(40, 3)) {
      const image = example.images![0] as InMemoryImage;
      const colour = COLOURS[/the (\w+)/.exec(String(example.prompt))![1]!]!;
      const [x1, y1, x2, y2] = example.box as number[];
      const cellLeft = Math.floor(x1! / 8) * 8;
      const cellTop = Math.floor(y1! / 8) * 8;
      const mask = rasterisePolygon(example.mask as [number, number][], 32, 32);
      for (let y = cellTop; y < cellTop + 8; y++)
        for (let x = cellLeft; x < cellLeft + 8; x++) {
          const pixel = Array.from(image.data.subarray((y * 32 + x) * 3, (y * 32 + x) * 3 + 3));
          expect(mask[y * 32 + x], `${example.prompt} (${x}, ${y})`).toBe(pixel.join() === colour.join() ? 1 : 0);
        }
      expect(x2! - x1!).toBeGreaterThan(0);
      expect(y2! - y1!).toBeGreaterThan(0);
    }
  });

  it.each([
    ['point', 'point-in-box'],
    ['box', 'box-iou'],
    ['polygon', 'mask-iou'],
  ] as const)('answer %s: the right answers score 1 under %s, the shape-blind ones 0', async (answer, rewardName) => {
    const task = shapeLocatingTask({ answer });
    const reward = createReward(rewardName) as RewardFn;
    const examples = task.trainExamples(30, 1);
    for (const example of examples) {
      expect(await reward(makeRewardInput({ completion: String(example.answer), row: example }))).toBe(1);
      expect(await task.isCorrect(example, String(example.answer))).toBe(true);
      if (typeof example.blindAnswer === 'string') {
        expect(await reward(makeRewardInput({ completion: example.blindAnswer, row: example }))).toBe(0);
        expect(await task.isCorrect(example, example.blindAnswer)).toBe(false);
      }
    }
    expect(examples.some((example) => typeof example.blindAnswer === 'string')).toBe(true);
    for (const char of examples.map((example) => `${example.prompt}${example.answer}`).join(''))
      if (char !== '<' && char !== '>') expect(task.alphabet.includes(char) || 'image'.includes(char), char).toBe(true);
  });

  it('refuses bad options, naming them', () => {
    expect(() => shapeLocatingTask({ answer: 'circle' } as never)).toThrow(/taskOptions.answer/);
    expect(() => shapeLocatingTask({ imageSize: 20, cellSize: 8 })).toThrow(/taskOptions.imageSize/);
  });

  it('runs through grpo train with a vision reward by name replacing its own', async () => {
    const set = [
      'task=shape-locating',
      'taskOptions={"answer":"box"}',
      'rewards=[{"name":"box-iou"},{"name":"point-in-box","weight":0}]',
      'model.hiddenSize=16',
      'model.numLayers=1',
      'model.numHeads=2',
      'model.vision={"imageSize":16,"patchSize":8,"scaleFactor":2,"hiddenSize":8,"numLayers":1,"numHeads":2}',
      'sft.steps=2',
      'sft.batchSize=2',
      'grpo.steps=1',
      'grpo.promptsPerStep=2',
      'grpo.microBatchSize=4',
      'sampling.groupSize=2',
      'sampling.maxNewTokens=4',
      'evaluation.examples=2',
      'checkpoint.every=0',
      `logging.runsDirectory=${JSON.stringify(scratch)}`,
    ];
    expect(await runTrainCommand({ set, runName: 'box', quiet: true })).toBe(0);
    const metrics = readFileSync(join(scratch, 'box', 'metrics.jsonl'), 'utf8');
    expect(metrics).toContain('"reward/box-iou/mean"');
    expect(metrics).toContain('"reward/point-in-box/mean"');
  }, 120_000);
});
