/**
 * Counting coloured shapes in small generated RGB images (R1-V style): "How many red squares?<image>"
 * → "2" (the question first: under causal attention the image tokens can then read it). Each image is a grid of cells (8×8 pixels by default) on a dark background; a
 * cell holds nothing or one shape (a filled square or a plus) in red, green or blue. Examples carry
 * their image decoded, in the `images` column (`{ width, height, channels: 3, data }`, RGB row-major),
 * so nothing is read from disk. Deterministic per seed; held-out images (by a hash of the layout)
 * are never trained on.
 *
 * Why GRPO has work to do: the SFT teacher is shape-blind on `teacherShapeBlindRate` of the problems
 * with a distractor (a shape of the asked colour but the other kind): it counts every shape of the
 * colour. SFT thus learns the format and a systematic mistake, and GRPO with the exact-count
 * verifier teaches the model to look at the shape too. Is not: a benchmark of visual reasoning.
 */
import { z } from 'zod';
import type { RewardFn } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type InMemoryImage, type Task } from '../task.js';

/** The options `shapeCountingTask` accepts (config `taskOptions`); unknown keys are refused. */
export const shapeCountingOptionsSchema = z
  .object({
    /** Side of the square image in pixels; a multiple of `cellSize`. */
    imageSize: z.number().int().min(8).max(512).optional(),
    /** Side of one grid cell (one shape) in pixels, at least 6. */
    cellSize: z.number().int().min(6).max(64).optional(),
    /** Fraction of problems with a distractor whose demonstration counts every shape of the colour. */
    teacherShapeBlindRate: z.number().min(0).max(1).optional(),
  })
  .strict();

export type ShapeCountingOptions = z.infer<typeof shapeCountingOptionsSchema>;

/** An RGB image as the examples carry it (the data layer's InMemoryImage). */
export type TaskImage = InMemoryImage;

const COLOURS: Record<string, [number, number, number]> = {
  red: [230, 40, 40],
  green: [40, 200, 60],
  blue: [60, 90, 240],
};
const SHAPES = ['square', 'plus'] as const;
type Shape = (typeof SHAPES)[number];
const PLURALS: Record<Shape, string> = { square: 'squares', plus: 'pluses' };
const BACKGROUND = [24, 24, 24];

interface Placed {
  cell: number;
  colour: string;
  shape: Shape;
}

/** Paints the shapes into a fresh image: a square fills the cell but a 1-pixel margin, a plus is two bars. */
export function drawShapes(placed: readonly Placed[], imageSize: number, cellSize: number): TaskImage {
  const data = new Uint8Array(imageSize * imageSize * 3);
  for (let i = 0; i < imageSize * imageSize; i++) data.set(BACKGROUND, i * 3);
  const perRow = imageSize / cellSize;
  const bar = Math.max(2, Math.round(cellSize / 4));
  const low = Math.floor((cellSize - bar) / 2);
  for (const { cell, colour, shape } of placed) {
    const top = Math.floor(cell / perRow) * cellSize;
    const left = (cell % perRow) * cellSize;
    for (let y = 1; y < cellSize - 1; y++) {
      for (let x = 1; x < cellSize - 1; x++) {
        const inBar = (y >= low && y < low + bar) || (x >= low && x < low + bar);
        if (shape === 'square' || inBar) data.set(COLOURS[colour], ((top + y) * imageSize + left + x) * 3);
      }
    }
  }
  return { width: imageSize, height: imageSize, channels: 3, data };
}

function layoutHash(placed: readonly Placed[], colour: string, shape: Shape): number {
  let h = 0x811c9dc5;
  const text = `${colour}${shape}|${placed.map((p) => `${p.cell}${p.colour[0]}${p.shape[0]}`).join(',')}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const isHeldOut = (hash: number): boolean => hash % 8 === 0;

/**
 * One problem from `next` (a 32-bit generator): 0–3 shapes of the asked colour and kind, 0–2
 * same-colour distractors of the other kind, 0–2 shapes of other colours, in distinct random cells.
 */
function makeProblem(next: () => number, imageSize: number, cellSize: number): Example & { hash: number } {
  const colourNames = Object.keys(COLOURS);
  const colour = colourNames[next() % colourNames.length];
  const shape = SHAPES[next() % SHAPES.length];
  const other = SHAPES.find((s) => s !== shape)!;
  const cells = (imageSize / cellSize) ** 2;
  const targets = next() % 4;
  const distractors = next() % 3;
  const others = next() % 3;
  const free = Array.from({ length: cells }, (_, i) => i);
  const take = (): number => free.splice(next() % free.length, 1)[0];
  const placed: Placed[] = [];
  for (let i = 0; i < targets && free.length > 0; i++) placed.push({ cell: take(), colour, shape });
  for (let i = 0; i < distractors && free.length > 0; i++) placed.push({ cell: take(), colour, shape: other });
  for (let i = 0; i < others && free.length > 0; i++) {
    const otherColour = colourNames.filter((c) => c !== colour)[next() % (colourNames.length - 1)];
    placed.push({ cell: take(), colour: otherColour, shape: SHAPES[next() % SHAPES.length] });
  }
  placed.sort((a, b) => a.cell - b.cell);
  const count = placed.filter((p) => p.colour === colour && p.shape === shape).length;
  const sameColour = placed.filter((p) => p.colour === colour).length;
  return {
    prompt: `How many ${colour} ${PLURALS[shape]}?<image>`,
    answer: String(count),
    images: [drawShapes(placed, imageSize, cellSize)],
    colour,
    shape,
    shapeBlindCount: sameColour,
    hash: layoutHash(placed, colour, shape),
  };
}

function sample(count: number, seed: number, heldOut: boolean, imageSize: number, cellSize: number): Example[] {
  let state = (seed * 2654435761 + (heldOut ? 17 : 0)) >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state >>> 8;
  };
  const examples: Example[] = [];
  while (examples.length < count) {
    const { hash, ...example } = makeProblem(next, imageSize, cellSize);
    if (isHeldOut(hash) === heldOut) examples.push(example);
  }
  return examples;
}

/** The completion's number: digits alone (surrounding space allowed), else null. */
const parseCount = (completion: string): string | null => {
  const match = /^\s*(\d+)\s*$/.exec(completion);
  return match ? String(Number(match[1])) : null;
};

/** 1 when the completion is exactly the right count. */
const correct: RewardFn = ({ completion, row }) => (parseCount(completion) === row.answer ? 1 : 0);
/** 1 when the completion is a bare number that ended at the stop token. */
const format: RewardFn = ({ completion, truncated }) => (!truncated && parseCount(completion) !== null ? 1 : 0);

/** The shape-counting task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function shapeCountingTask(options: ShapeCountingOptions = {}): Task {
  const parsed = parseTaskOptions('shape-counting', shapeCountingOptionsSchema, options);
  const imageSize = parsed.imageSize ?? 32;
  const cellSize = parsed.cellSize ?? 8;
  if (imageSize % cellSize !== 0)
    throw new Error(
      `invalid config:\n- taskOptions.imageSize: ${imageSize} is not a multiple of taskOptions.cellSize ${cellSize}`,
    );
  const blindRate = parsed.teacherShapeBlindRate ?? 0.7;
  return {
    name: 'shape-counting',
    description: 'count coloured squares or pluses in a generated image; SFT from a shape-blind teacher, GRPO',
    alphabet: '0123456789 ?Habdeglnimopqrsuwy',
    trainExamples: (count, seed) => sample(count, seed, false, imageSize, cellSize),
    evalExamples: (count, seed) => sample(count, seed, true, imageSize, cellSize),
    demonstration(example, draw) {
      const blind = example.shapeBlindCount !== Number(example.answer) && draw() < blindRate;
      return blind ? String(example.shapeBlindCount) : String(example.answer);
    },
    rewards: () => [
      { name: 'correct', reward: correct, weight: 1 },
      { name: 'format', reward: format, weight: 0.2 },
    ],
    isCorrect: (example, completion) => parseCount(completion) === example.answer,
  };
}
