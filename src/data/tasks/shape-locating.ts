/**
 * Locating one coloured shape in a small generated RGB image (the grounding twin of shape-counting):
 * "Where is the red plus?<image>" → a point "(4, 12)", a box "[1, 9, 7, 15]" or the shape's outline
 * "[[1, 9], [7, 9], …]" (`taskOptions.answer`), in pixels. Every row carries the target's `box` (its
 * drawn pixels' edges, [x1, y1, x2, y2]) and `mask` (its outline polygon, which rasterised at pixel
 * centres gives exactly the drawn pixels), so the vision rewards `point-in-box`, `box-iou` and
 * `mask-iou` score it; the task's own reward is the one that fits its answer form.
 *
 * Why GRPO has work to do: when a shape of the asked colour but the other kind is present, the SFT
 * teacher points at it instead on `teacherShapeBlindRate` of those problems. Held-out images (by a hash
 * of the layout) are never trained on. Is not: a benchmark of grounding.
 */
import { z } from 'zod';
import { boxIou } from '../../rewards/visual.js';
import { maskIou } from '../../rewards/mask-iou.js';
import { pointInBox } from '../../rewards/point-in-box.js';
import { makeRewardInput, type RewardFn } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';
import { drawShapes } from './shape-counting.js';

/** The options `shapeLocatingTask` accepts (config `taskOptions`); unknown keys are refused. */
export const shapeLocatingOptionsSchema = z
  .object({
    /** Side of the square image in pixels; a multiple of `cellSize`. */
    imageSize: z.number().int().min(8).max(512).optional(),
    /** Side of one grid cell (one shape) in pixels, at least 6. */
    cellSize: z.number().int().min(6).max(64).optional(),
    /** What the answer gives: the shape's centre point, its box or its outline polygon (default point). */
    answer: z.enum(['point', 'box', 'polygon']).optional(),
    /** Fraction of problems with a same-colour distractor whose demonstration points at the distractor. */
    teacherShapeBlindRate: z.number().min(0).max(1).optional(),
  })
  .strict();

export type ShapeLocatingOptions = z.infer<typeof shapeLocatingOptionsSchema>;

const COLOURS = ['red', 'green', 'blue'] as const;
const SHAPES = ['square', 'plus'] as const;
type Shape = (typeof SHAPES)[number];
type Placed = { cell: number; colour: string; shape: Shape };

/** The drawn shape's outline in image pixels (edges), as drawShapes paints it: a square inset 1, a plus of two bars. */
export function shapeOutline(cell: number, shape: Shape, imageSize: number, cellSize: number): [number, number][] {
  const perRow = imageSize / cellSize;
  const top = Math.floor(cell / perRow) * cellSize;
  const left = (cell % perRow) * cellSize;
  const bar = Math.max(2, Math.round(cellSize / 4));
  const low = Math.floor((cellSize - bar) / 2);
  const [a, b, c] = [1, low, low + bar];
  const end = cellSize - 1;
  const local: [number, number][] =
    shape === 'square'
      ? [[a, a], [end, a], [end, end], [a, end]]
      : [[b, a], [c, a], [c, b], [end, b], [end, c], [c, c], [c, end], [b, end], [b, c], [a, c], [a, b], [b, b]]; // prettier-ignore
  return local.map(([x, y]) => [left + x, top + y]);
}

const formatPoint = ([x, y]: number[]) => `(${x}, ${y})`;

function answerOf(target: Placed, form: string, imageSize: number, cellSize: number): string {
  const outline = shapeOutline(target.cell, target.shape, imageSize, cellSize);
  const xs = outline.map(([x]) => x);
  const ys = outline.map(([, y]) => y);
  const box = [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
  if (form === 'box') return `[${box.join(', ')}]`;
  if (form === 'polygon') return `[${outline.map(([x, y]) => `[${x}, ${y}]`).join(', ')}]`;
  return formatPoint([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]);
}

function layoutHash(placed: readonly Placed[], target: Placed): number {
  let h = 0x811c9dc5;
  const text = `${target.colour}${target.shape}|${placed.map((p) => `${p.cell}${p.colour[0]}${p.shape[0]}`).join(',')}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** One problem: the target, maybe a same-colour shape of the other kind, 0–1 shapes of other colours. */
function makeProblem(next: () => number, imageSize: number, cellSize: number, form: string) {
  const colour = COLOURS[next() % COLOURS.length]!;
  const shape = SHAPES[next() % SHAPES.length]!;
  const other = SHAPES.find((s) => s !== shape)!;
  const free = Array.from({ length: (imageSize / cellSize) ** 2 }, (_, i) => i);
  const take = (): number => free.splice(next() % free.length, 1)[0]!;
  const target: Placed = { cell: take(), colour, shape };
  const placed: Placed[] = [target];
  const distractor: Placed | null = free.length > 0 && next() % 2 === 0 ? { cell: take(), colour, shape: other } : null;
  if (distractor) placed.push(distractor);
  if (free.length > 0 && next() % 2 === 0) {
    const otherColour = COLOURS.filter((c) => c !== colour)[next() % (COLOURS.length - 1)]!;
    placed.push({ cell: take(), colour: otherColour, shape: SHAPES[next() % SHAPES.length]! });
  }
  const outline = shapeOutline(target.cell, shape, imageSize, cellSize);
  const xs = outline.map(([x]) => x);
  const ys = outline.map(([, y]) => y);
  const example: Example = {
    prompt: `Where is the ${colour} ${shape}?<image>`,
    answer: answerOf(target, form, imageSize, cellSize),
    images: [drawShapes(placed, imageSize, cellSize)],
    box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)],
    mask: outline,
    blindAnswer: distractor ? answerOf(distractor, form, imageSize, cellSize) : null,
  };
  return { example, hash: layoutHash(placed, target) };
}

function sample(count: number, seed: number, heldOut: boolean, imageSize: number, cellSize: number, form: string) {
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state >>> 8;
  };
  const examples: Example[] = [];
  while (examples.length < count) {
    const { example, hash } = makeProblem(next, imageSize, cellSize, form);
    if ((hash % 8 === 0) === heldOut) examples.push(example);
  }
  return examples;
}

/** The shape-locating task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function shapeLocatingTask(options: ShapeLocatingOptions = {}): Task {
  const parsed = parseTaskOptions('shape-locating', shapeLocatingOptionsSchema, options);
  const imageSize = parsed.imageSize ?? 16;
  const cellSize = parsed.cellSize ?? 8;
  const form = parsed.answer ?? 'point';
  if (imageSize % cellSize !== 0)
    throw new Error(
      `invalid config:\n- taskOptions.imageSize: ${imageSize} is not a multiple of taskOptions.cellSize ${cellSize}`,
    );
  const blindRate = parsed.teacherShapeBlindRate ?? 0.7;
  // The answer form's own reward: a point must land in the box; a box or outline is scored by its IoU.
  const correct: RewardFn =
    form === 'point' ? pointInBox() : form === 'box' ? boxIou({ threshold: 0.5 }) : maskIou({ threshold: 0.5 });
  return {
    name: 'shape-locating',
    description: 'point at (or box, or outline) a coloured square or plus in a generated image; SFT then GRPO',
    alphabet: '0123456789 ?()[],.Wabdeghilnopqrstu',
    trainExamples: (count, seed) => sample(count, seed, false, imageSize, cellSize, form),
    evalExamples: (count, seed) => sample(count, seed, true, imageSize, cellSize, form),
    demonstration(example, draw) {
      const blind = typeof example.blindAnswer === 'string' && draw() < blindRate;
      return blind ? (example.blindAnswer as string) : String(example.answer);
    },
    rewards: () => [{ name: 'correct', reward: correct, weight: 1 }],
    isCorrect: async (example, completion) => (await correct(makeRewardInput({ completion, row: example }))) === 1,
  };
}
