/**
 * Temporal-R1 / Temporal-RLT (Li et al. 2025, "Reinforcement Learning Tuning for VideoLLMs: Reward
 * Design and Data Efficiency", arXiv 2506.01908, papers #35): temporal video grounding with GRPO,
 * rewarded by the continuous temporal-IoU reward of the paper's dual reward design. The model names
 * when a queried shape shows, `<think>…</think><answer>{"start_time": "1", "end_time": "3"}</answer>`,
 * and earns 0.5 · tIoU + 0.5 · format. Run: `npx grpo train recipes/papers/temporal-r1.ts` (a
 * from-scratch toy VLM: SFT for the format, then GRPO).
 *
 * From the authors' code (appletea233/Temporal-R1, newest snapshot, June 2025):
 * verl/utils/reward_score/tvg.py (`tvg_compute_score` = 0.5 · `tvg_accuracy_reward` + 0.5 ·
 * `tvg_format_reward`: the first `<answer>…</answer>`, stripped, read by `json.loads`, its
 * "start_time" and "end_time" through `float` and divided by the video length, scored by their
 * `temporal_iou` against the normalised truth; any failure scores 0; the format is their `fullmatch`),
 * verl/workers/reward/custom.py (rows of problem_type 'tvg' get this score) and
 * examples/run_qwen2_5_vl_3b_tvg.sh + examples/grpo_example.yaml (GRPO, rollout.n 8, temperature 1,
 * KL loss 1e-2 low_var_kl = k3, entropy coefficient 1e-3, PPO clip 0.2, token-mean loss).
 * Not here: the paper's discrete VideoQA half of the dual reward (their r1v score through mathruler's
 * `grade_answer`) and its variance-aware data selection, which their released code does not contain.
 * Differs: the video is 4 generated frames at 1 frame per second (the queried shape in one cell for
 * 1–3 seconds, sometimes another shape in one other second), not Charades-STA; `json.loads` is
 * JavaScript's JSON.parse, which refuses the NaN/Infinity literals Python accepts; an SFT teacher
 * that names the whole video on half its demonstrations first teaches the format; the learning rates
 * are the toy model's (theirs 1e-6).
 */
import {
  drawShapes,
  generatedSplit,
  type Example,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
  type TaskImage,
} from '../../src/index.js';

const FRAMES = 4;
const IMAGE_SIZE = 16;
const CELL_SIZE = 8;
const SHAPES = [
  { colour: 'red', shape: 'square' },
  { colour: 'red', shape: 'plus' },
  { colour: 'green', shape: 'square' },
  { colour: 'green', shape: 'plus' },
] as const;
const TEACHER_SPAN_ERROR = 0.5;

// Python's max(a, b) keeps a unless b > a, min(a, b) keeps a unless b < a: with NaN the order matters.
const pyMax = (a: number, b: number) => (b > a ? b : a);
const pyMin = (a: number, b: number) => (b < a ? b : a);

/** Their `temporal_iou`: overlap over the hull of the two spans; a zero hull raises (scored 0 by the caller). */
export function temporalIou(a: readonly [number, number], b: readonly [number, number]): number {
  const hull = pyMax(a[1], b[1]) - pyMin(a[0], b[0]);
  if (hull === 0) throw new Error('float division by zero');
  const iou = pyMax(pyMin(a[1], b[1]) - pyMax(a[0], b[0]), 0) / hull;
  return pyMax(0, iou);
}

const PYTHON_FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?$/;

/** Python's `float(value)` for what `json.loads` returns: numbers, booleans and numeric strings, else throws. */
export function pythonFloat(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value !== 'string') throw new TypeError('float() argument must be a string or a real number');
  const text = value.trim();
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(text);
  if (special) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  if (!PYTHON_FLOAT.test(text)) throw new Error(`could not convert string to float: '${value}'`);
  return Number(text.replaceAll('_', ''));
}

/** Their `tvg_accuracy_reward`: tIoU of the answer's normalised span with the truth; 0 on any failure. */
export function tvgAccuracyReward(completion: string, truth: readonly [number, number], videoLength: number): number {
  try {
    const answer = /<answer>(.*?)<\/answer>/s.exec(completion);
    if (!answer) return 0;
    const data: unknown = JSON.parse(answer[1].trim());
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return 0; // a dict or TypeError
    const fields = data as Record<string, unknown>;
    if (!Object.hasOwn(fields, 'start_time') || !Object.hasOwn(fields, 'end_time')) return 0; // KeyError
    if (videoLength === 0) return 0; // ZeroDivisionError
    const span: [number, number] = [
      pythonFloat(fields.start_time) / videoLength,
      pythonFloat(fields.end_time) / videoLength,
    ];
    return temporalIou(span, truth);
  } catch {
    return 0;
  }
}

const FORMAT =
  /^(?:<think>.*?<\/think>\s*<answer>\s*\{\s*"start_time"\s*:\s*"([\d.]+)"\s*,\s*"end_time"\s*:\s*"([\d.]+)"\s*\}\s*<\/answer>)$/s;

/** Their `tvg_format_reward`: the `fullmatch` of think, then a JSON answer with quoted numbers. */
export const tvgFormatReward = (completion: string): number => (FORMAT.test(completion) ? 1 : 0);

const truthOf = (row: Readonly<Record<string, unknown>>) => row.solution as [number, number];

export const temporalR1Iou: RewardFn = ({ completion, row }) =>
  tvgAccuracyReward(completion, truthOf(row), Number(row.video_length));
export const temporalR1Format: RewardFn = ({ completion }) => tvgFormatReward(completion);

type Shape = (typeof SHAPES)[number];
const frameOf = (cell: number, shape: Shape | null): TaskImage =>
  drawShapes(shape ? [{ cell, colour: shape.colour, shape: shape.shape }] : [], IMAGE_SIZE, CELL_SIZE);

/** One video: the queried shape in one cell for 1–3 seconds; half the time another shape in one other second. */
function videoRow(pick: Pick): Example {
  const queried = SHAPES[pick(SHAPES.length)];
  const cell = pick(4);
  const start = pick(FRAMES);
  const end = Math.min(FRAMES, start + 1 + pick(3));
  const outside = Array.from({ length: FRAMES }, (_, k) => k).filter((k) => k < start || k >= end);
  const others = SHAPES.filter((shape) => shape !== queried);
  const distractor = outside.length > 0 && pick(2) === 1 ? outside[pick(outside.length)] : -1;
  const distractorShape = others[pick(others.length)];
  const images = Array.from({ length: FRAMES }, (_, k) =>
    frameOf(cell, k >= start && k < end ? queried : k === distractor ? distractorShape : null),
  );
  return {
    prompt: `${'<image>'.repeat(FRAMES)}When does the ${queried.colour} ${queried.shape} show?`,
    answer: `${start}-${end}`,
    solution: [start / FRAMES, end / FRAMES], // their ground truth: the span over the video length
    video_length: FRAMES,
    span: [start, end],
    cell,
    distractor,
    images,
  };
}

// Held out by everything that draws the frames: no evaluation video is trained on.
const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('temporal-r1-video', count, seed, heldOut, videoRow, (row) =>
    JSON.stringify([row.prompt, row.cell, row.span, row.distractor]),
  );

const reply = (start: number, end: number) =>
  `<think>${start} to ${end}</think>\n<answer>{"start_time": "${start}", "end_time": "${end}"}</answer>`;

export const temporalR1Task: Task = {
  name: 'temporal-r1-video',
  description: 'Temporal-R1 temporal grounding: when the queried shape shows in 4 one-second frames',
  alphabet: [
    ...new Set(`${SHAPES.map((s) => `When does the ${s.colour} ${s.shape} show?`).join('')}${reply(0, 4)}0123456789.`),
  ].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const [start, end] = example.span as [number, number];
    return draw() < TEACHER_SPAN_ERROR ? reply(0, FRAMES) : reply(start, end);
  },
  // tvg_compute_score = 0.5 · accuracy + 0.5 · format; the columns are logged apart.
  rewards: () => [
    { name: 'tvg-iou', reward: temporalR1Iou, weight: 0.5 },
    { name: 'tvg-format', reward: temporalR1Format, weight: 0.5 },
  ],
  // R1@0.5, the grounding accuracy their evaluation reports beside the mIoU.
  isCorrect: (example, completion) =>
    tvgAccuracyReward(completion, truthOf(example), Number(example.video_length)) >= 0.5,
};

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: IMAGE_SIZE, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 600, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 80, temperature: 1 }, // rollout.n = 8, temperature 1
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: {
      advantage: 'grpo',
      loss: 'ppo-clip',
      aggregation: 'token-mean',
      klCoefficient: 0.01,
      klEstimator: 'k3',
      entropyCoefficient: 1e-3,
    },
    evaluation: { examples: 100, every: 20 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: temporalR1Task,
  rewards: temporalR1Task.rewards(),
} satisfies Recipe;
