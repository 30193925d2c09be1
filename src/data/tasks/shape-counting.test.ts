/**
 * The shape-counting task: the answer is the number of shapes of the asked colour and kind that
 * the image really shows (recounted from its pixels), draws are deterministic per seed, the
 * held-out split shares no image+question with training, and the teacher's mistake is the
 * shape-blind count exactly where a distractor exists.
 */
import { describe, expect, it } from 'vitest';
import type { RewardFn } from '../../rewards/types.js';
import type { Example } from '../task.js';
import { drawShapes, shapeCountingTask, type TaskImage } from './shape-counting.js';

const COLOURS: Record<string, number[]> = { red: [230, 40, 40], green: [40, 200, 60], blue: [60, 90, 240] };

/** Counts shapes from the pixels: per 8×8 cell, the colour of its centre and whether its corner pixel is painted. */
function recount(image: TaskImage, colour: string, shape: string): number {
  let count = 0;
  const cells = image.width / 8;
  for (let row = 0; row < cells; row++) {
    for (let col = 0; col < cells; col++) {
      const at = (y: number, x: number) =>
        Array.from(
          image.data.subarray(
            ((row * 8 + y) * image.width + col * 8 + x) * 3,
            ((row * 8 + y) * image.width + col * 8 + x) * 3 + 3,
          ),
        );
      const centre = at(4, 4);
      if (centre.join() !== COLOURS[colour].join()) continue;
      const corner = at(1, 1).join() === COLOURS[colour].join();
      if ((shape === 'square') === corner) count++;
    }
  }
  return count;
}

const key = (example: Example) =>
  `${example.prompt}|${Buffer.from((example.images as TaskImage[])[0].data).toString('base64')}`;

describe('shape-counting task', () => {
  const task = shapeCountingTask();

  it('answers the count the pixels show', () => {
    for (const example of task.trainExamples(200, 3)) {
      const [, colour, noun] = /How many (\w+) (\w+)\?/.exec(example.prompt as string)!;
      const shape = noun === 'squares' ? 'square' : 'plus';
      expect(String(recount((example.images as TaskImage[])[0], colour, shape))).toBe(example.answer);
      expect(example.prompt).toMatch(/^How many (red|green|blue) (squares|pluses)\?<image>$/);
    }
  });

  it('is deterministic per seed and keeps the held-out split apart', () => {
    expect(task.trainExamples(50, 7).map(key)).toEqual(task.trainExamples(50, 7).map(key));
    expect(task.trainExamples(50, 7).map(key)).not.toEqual(task.trainExamples(50, 8).map(key));
    const train = new Set(task.trainExamples(3000, 0).map(key));
    expect(task.evalExamples(300, 1).filter((example) => train.has(key(example)))).toEqual([]);
  });

  it('has a shape-blind teacher only where a distractor changes the count', () => {
    const examples = task.trainExamples(300, 1);
    const withDistractor = examples.filter((e) => e.shapeBlindCount !== Number(e.answer));
    expect(withDistractor.length).toBeGreaterThan(100);
    // draw() = 0 is below any positive rate: blind wherever a distractor exists, right elsewhere.
    for (const example of examples) expect(task.demonstration(example, () => 0)).toBe(String(example.shapeBlindCount));
    for (const example of examples) expect(task.demonstration(example, () => 0.99)).toBe(example.answer);
    const honest = shapeCountingTask({ teacherShapeBlindRate: 0 });
    for (const example of withDistractor) expect(honest.demonstration(example, () => 0)).toBe(example.answer);
  });

  it('rewards the exact count only, and a bare number for format', async () => {
    const [example] = task.trainExamples(1, 0);
    const [correct, format] = task.rewards().map((named) => named.reward as RewardFn);
    const input = (completion: string, truncated = false) => ({
      prompt: example.prompt,
      completion,
      completionIds: [],
      row: example,
      group: [completion],
      indexInGroup: 0,
      step: 0,
      truncated,
    });
    const wrong = String((Number(example.answer) + 1) % 4);
    expect(await correct(input(example.answer!))).toBe(1); // the count
    expect(await correct(input(` ${example.answer} `))).toBe(1); // surrounding space is allowed
    expect(await correct(input(wrong))).toBe(0); // another count
    expect(await correct(input(`${example.answer} shapes`))).toBe(0); // not a bare number
    expect(await format(input(wrong))).toBe(1); // a bare number, even a wrong one
    expect(await format(input(wrong, true))).toBe(0); // cut off at the length limit
    expect(task.isCorrect(example, example.answer!)).toBe(true);
  });

  it('draws squares and pluses where it places them', () => {
    const image = drawShapes([{ cell: 0, colour: 'red', shape: 'plus' }], 16, 8);
    expect(recount(image, 'red', 'plus')).toBe(1);
    expect(recount(image, 'red', 'square')).toBe(0);
  });

  it('refuses options that do not fit, naming the field', () => {
    expect(() => shapeCountingTask({ imageSize: 30 })).toThrow(
      /taskOptions.imageSize: 30 is not a multiple of taskOptions.cellSize 8/,
    );
    expect(() => shapeCountingTask({ colours: 3 } as never)).toThrow(/taskOptions.colours: not an option/);
  });
});
