/**
 * Zoom-Zero (Shen et al. 2025, arXiv 2512.14273, papers #148): grounded video QA with GRPO, where the
 * model answers a multiple-choice question and names the seconds that show the evidence
 * (`<glue>[(start, end)]</glue>`), rewarded by the temporal IoU, the answer, the format and a zoom-in
 * check (the answer read again from only the named seconds), with token-selective credit assignment
 * (advantage `zoom-zero`: the IoU credited to the thinking and span tokens, the answer reward to the
 * answer tokens). Run: `npx grpo train recipes/papers/zoom-zero.ts` (a from-scratch toy VLM: SFT for
 * the format, then GRPO).
 *
 * From the authors' code (xiaoqian-shen/Zoom-Zero): verl/utils/reward_score/tvg_zoom.py
 * (`tvg_zoom_compute_score`: `iou_reward` over merged intervals of the first `<glue>` list, valid only
 * as their `is_valid_two_d_list_format`; `answer_reward`, the first `<answer>` after the last
 * `</think>`, stripped, parentheses dropped, equal to the letter; `tvg_format_reward`, their fullmatch;
 * zoom = the zoomed answer contains the truth or is contained in it; combined reward
 * ((answer + zoom)/2 + format + iou)/3), verl/trainer/core_algos.py `compute_grpo_select_outcome_advantage`
 * and examples/train_stage2.sh (rollout.n 8, KL loss 1e-2, low_var_kl = k3, temperature 1,
 * adv_estimator grpo_select). Differs: the video is 4 generated frames at 1 frame per second (a shape in
 * one cell for 1–2 seconds, the other frames empty), not NExT-GQA; the zoom-in answer comes from
 * `zoomVerifier`, a pixel-exact reader of the named frames standing in for their frozen reference model
 * re-answering on the cropped video (it says "none" when no shape is in them); the span marker is
 * `<glue>` in this character tokenizer and the answer span the 19 characters "<answer>X</answer>\n"
 * before it (their code: Qwen2.5-VL ids [29, 9697] and 5 tokens); an SFT teacher, wrong about the
 * span on half its demonstrations and about the answer on a quarter, first teaches the format; the
 * learning rates are the toy model's (theirs 1e-6).
 */
import {
  CharTokenizer,
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
const OPTIONS = [
  { letter: 'A', colour: 'red', shape: 'square' },
  { letter: 'B', colour: 'red', shape: 'plus' },
  { letter: 'C', colour: 'green', shape: 'square' },
  { letter: 'D', colour: 'green', shape: 'plus' },
] as const;
const TEACHER_SPAN_ERROR = 0.5;
const TEACHER_ANSWER_ERROR = 0.25;
const PROMPT = `${'<image>'.repeat(FRAMES)}Which shape shows, and when? A red square B red plus C green square D green plus`;
/** The answer tokens before the span marker in this tokenizer: "<answer>X</answer>\n". */
const ANSWER_TOKENS = '<answer>A</answer>\n'.length;

type Interval = [number, number];

/** Sorted, overlapping intervals merged (their `merge_intervals`). */
function mergeIntervals(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].map(([a, b]): Interval => [a, b]).sort((x, y) => x[0] - y[0]);
  const merged: Interval[] = [];
  for (const current of sorted) {
    const last = merged[merged.length - 1];
    if (last && current[0] <= last[1]) last[1] = Math.max(last[1], current[1]);
    else merged.push([current[0], current[1]]);
  }
  return merged;
}

/** Their `compute_iou` (div_union): intersection over union of the merged predicted and true intervals. */
export function intervalIou(predicted: readonly Interval[], truth: readonly Interval[]): number {
  const a = mergeIntervals(predicted);
  const b = mergeIntervals(truth);
  const length = (list: Interval[]) => list.reduce((sum, [start, end]) => sum + end - start, 0);
  let intersection = 0;
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    const start = Math.max(a[i][0], b[j][0]);
    const end = Math.min(a[i][1], b[j][1]);
    if (start < end) intersection += end - start;
    if (a[i][1] < b[j][1]) i++;
    else j++;
  }
  const union = length(a) + length(b) - intersection;
  return union === 0 || length(b) === 0 ? 0 : intersection / union;
}

const NUMBER = String.raw`\d+(\.\d+)?`;
const LIST = new RegExp(String.raw`^\[(\(${NUMBER},\s*${NUMBER}\)(,\s*\(${NUMBER},\s*${NUMBER}\))*(,)?|)\]\n?$`);

/** Their `is_valid_two_d_list_format` + `ast.literal_eval`: the intervals, or null when invalid. */
export function parseIntervals(text: string): Interval[] | null {
  if (!LIST.test(text)) return null;
  const intervals: Interval[] = [];
  for (const [, first, second] of text.matchAll(/\(([\d.]+),\s*([\d.]+)\)/g)) {
    // literal_eval refuses an integer with a leading zero ("01"; "00" is 0).
    if ([first, second].some((n) => /^0\d+$/.test(n) && !/^0+$/.test(n))) return null;
    const interval: Interval = [Number(first), Number(second)];
    if (interval[0] > interval[1]) return null;
    intervals.push(interval);
  }
  return intervals;
}

/** Their `iou_reward`: the first `<glue>…</glue>`, stripped; an invalid list counts as no intervals. */
export function iouReward(completion: string, truth: readonly Interval[]): number {
  const glue = /<glue>(.*?)<\/glue>/s.exec(completion);
  if (!glue) return 0;
  return intervalIou(parseIntervals(glue[1].trim()) ?? [], truth);
}

/** Their `answer_reward`: after the last `</think>`, the first `<answer>`, stripped, without parentheses. */
export function answerReward(completion: string, truth: string): number {
  const answer = /<answer>(.*?)<\/answer>/s.exec(completion.split('</think>').at(-1)!);
  return answer && answer[1].trim().replace(/[()]/g, '') === truth ? 1 : 0;
}

const FORMAT = new RegExp(
  String.raw`^<think>.*?<time>.*?</time>.*?</think>\s*\n<answer>\(?[A-F]\)?</answer>\s*\n` +
    String.raw`<glue>\s*\[\s*\(\d+\.?\d*,\s*\d+\.?\d*\)(?:\s*,\s*\(\d+\.?\d*,\s*\d+\.?\d*\))*\s*\]\s*</glue>$`,
  's',
);

/** Their `tvg_format_reward` (tvg_zoom.py): the fullmatch, and the `<glue>` list valid. */
export function formatReward(completion: string): number {
  const text = completion.trim();
  if (!FORMAT.test(text)) return 0;
  const glue = /<glue>(.*?)<\/glue>/s.exec(text);
  return glue && parseIntervals(glue[1].trim()) === null ? 0 : 1;
}

const frameOf = (cell: number, option: (typeof OPTIONS)[number] | null): TaskImage =>
  drawShapes(option ? [{ cell, colour: option.colour, shape: option.shape }] : [], IMAGE_SIZE, CELL_SIZE);
const sameImage = (a: TaskImage, b: TaskImage) => a.data.every((value, index) => value === b.data[index]);

/**
 * The zoom-in answer: the letter of the shape shown in the frames the span names (frame k is second
 * [k, k+1)), read pixel-exactly, or "none". Stands in for their frozen reference model answering
 * again on the video cropped to the predicted span.
 */
export function zoomVerifier(frames: readonly TaskImage[], span: readonly Interval[]): string {
  const shown = frames.filter((_, k) => span.some(([start, end]) => start < k + 1 && end > k));
  for (const frame of shown)
    for (const option of OPTIONS)
      for (let cell = 0; cell < (IMAGE_SIZE / CELL_SIZE) ** 2; cell++)
        if (sameImage(frame, frameOf(cell, option))) return option.letter;
  return 'none';
}

const truthSpan = (row: Readonly<Record<string, unknown>>): Interval[] => row.span as Interval[];

export const zoomZeroIou: RewardFn = ({ completion, row }) => iouReward(completion, truthSpan(row));
export const zoomZeroAnswer: RewardFn = ({ completion, row }) => answerReward(completion, String(row.answer));
export const zoomZeroFormat: RewardFn = ({ completion }) => formatReward(completion);
/** Their zoom score: the zoomed answer contains the truth or is contained in it (Python `in`). */
export const zoomZeroZoom: RewardFn = ({ completion, row }) => {
  const glue = /<glue>(.*?)<\/glue>/s.exec(completion);
  const span = (glue && parseIntervals(glue[1].trim())) ?? [];
  const zoomed = zoomVerifier(row.images as TaskImage[], span);
  const truth = String(row.answer);
  return zoomed.includes(truth) || truth.includes(zoomed) ? 1 : 0;
};

/** One video: a shape in one cell for 1–2 seconds, the other frames empty. */
function videoRow(pick: Pick): Example {
  const option = OPTIONS[pick(OPTIONS.length)];
  const cell = pick(4);
  const start = pick(FRAMES);
  const end = Math.min(FRAMES, start + 1 + pick(2));
  const images = Array.from({ length: FRAMES }, (_, k) => frameOf(cell, k >= start && k < end ? option : null));
  return { prompt: PROMPT, answer: option.letter, span: [[start, end]], cell, images };
}

// Held out by everything that draws the frames: no evaluation video is trained on.
const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('zoom-zero-video', count, seed, heldOut, videoRow, (row) =>
    JSON.stringify([row.answer, row.cell, row.span]),
  );

const reply = (span: Interval, letter: string) =>
  `<think><time>(${span[0]}, ${span[1]})</time></think>\n<answer>${letter}</answer>\n<glue>[(${span[0]}, ${span[1]})]</glue>`;

export const zoomZeroTask: Task = {
  name: 'zoom-zero-video',
  description: 'Zoom-Zero grounded video QA: which shape shows in 4 one-second frames, and in which seconds',
  alphabet: [...new Set(`${PROMPT.replaceAll('<image>', '')}${reply([0, 4], 'A')}BCDEF0123456789.`)].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const [[start, end]] = truthSpan(example);
    const span: Interval = draw() < TEACHER_SPAN_ERROR ? [0, FRAMES] : [start, end];
    const wrong = OPTIONS.filter((option) => option.letter !== example.answer);
    const letter = draw() < TEACHER_ANSWER_ERROR ? wrong[Math.floor(draw() * 3)].letter : String(example.answer);
    return reply(span, letter);
  },
  // ((answer + zoom)/2 + format + iou)/3, their combined reward; the estimator reads each column raw.
  rewards: () => [
    { name: 'iou', reward: zoomZeroIou, weight: 1 / 3 },
    { name: 'answer', reward: zoomZeroAnswer, weight: 1 / 6 },
    { name: 'format', reward: zoomZeroFormat, weight: 1 / 3 },
    { name: 'zoom', reward: zoomZeroZoom, weight: 1 / 6 },
  ],
  isCorrect: (example, completion) => answerReward(completion, String(example.answer)) === 1,
};

/** The token ids of `<glue>` in the run's tokenizer (the vision model's: the image tokens come first). */
export const glueMarkerIds = new CharTokenizer({
  alphabet: zoomZeroTask.alphabet,
  extraSpecialTokens: ['<image>', '<fake_token_around_image>', '<global-img>'],
}).encode('<glue>', { addSpecialTokens: false });

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: IMAGE_SIZE, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 600, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 80, temperature: 1 }, // rollout.n = 8
    grpo: { steps: 60, promptsPerStep: 8, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: {
      advantage: 'zoom-zero',
      advantageOptions: { markerIds: glueMarkerIds, answerTokens: ANSWER_TOKENS },
      loss: 'ppo-clip',
      aggregation: 'token-mean',
      klCoefficient: 0.01,
      klEstimator: 'k3',
    },
    evaluation: { examples: 100, every: 20 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: zoomZeroTask,
  rewards: zoomZeroTask.rewards(),
} satisfies Recipe;
