/**
 * BigCharts-R1 (Masry et al. 2025, arXiv 2508.09804, papers #9): GRPO on chart questions with the
 * paper's chart reward, CERM (continuous error-magnitude reward: a numeric answer scores
 * 1 / (1 + |prediction − truth| / |truth|), so a near miss earns partial credit; a text answer scores
 * 1 on a case-insensitive match), plus a `<thinking>…</thinking> <answer>…</answer>` format reward. CERM is the built-in reward `cerm`
 * (src/rewards/cerm.ts: `--reward cerm` scores any rows with an `answer` column the same way).
 * Run: `npx grpo train recipes/papers/bigcharts-r1.ts` (a from-scratch toy VLM, as
 * recipes/vision-counting.ts: SFT for the format, then GRPO).
 *
 * From the authors' ServiceNow/BigCharts-R1 (read at 1aebed6):
 * src/open-r1-multimodal/src/open_r1/grpo_bigcharts.py: `error_magnitude_reward` (the first
 * one-line `<answer>(.*?)</answer>`, case-insensitive, stripped; no answer tag → 0; a NaN or infinite
 * score → 0) and `relaxed_correctness_magnitude_no_clipping` (Python `float()` of each side, a
 * trailing `%` divides by 100; truth 0 → 1 only for a prediction of 0; else the stripped, lower-cased
 * strings equal), `format_reward` (the stripped completion fullmatches
 * `<thinking>.*?</thinking>\s*<answer>.*?</answer>`, dot matching newlines);
 * run_grpo_bigcharts_job.sh: `--reward_funcs cerm format` (summed, weight 1 each),
 * 8 generations; trainer/grpo_trainer.py (as R1-V's): advantage (r − mean)/(std + 1e-4),
 * exp(logp − logp.detach())·A so the ratio is 1, β = 0.04 (trl 0.16's default) with the k3
 * estimator, loss averaged over each completion's tokens then over completions;
 * src/eval/eval_metrics.py `relaxed_correctness` (within 5% of a numeric truth, else a
 * case-insensitive match) on `extract_answer` (the first one-line `<answer>…</answer>`, stripped) is
 * the held-out accuracy here.
 * Differs: the charts are generated 16×16 bar charts (three bars, red/green/blue, a bar's value its
 * height in pixels; "What is the value of the red bar?" or "Which bar is the tallest?") instead of
 * their replotted real charts; QUESTION_TEMPLATE is shortened to one sentence with the same tags (the
 * toy model has 256 positions); an SFT teacher first teaches the format and misreads a value by 1–3
 * or names the second-tallest bar on `TEACHER_MISTAKE_RATE` of its demonstrations, so GRPO has the
 * reading to learn; Python's `float()` is ported for ASCII text (no Unicode digits); the learning
 * rates are the toy model's (theirs 1e-6 on Qwen2.5-VL-3B after CoT SFT).
 */
import {
  cermScore,
  generatedSplit,
  percentFloat,
  type Example,
  type NamedReward,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
  type TaskImage,
} from '../../src/index.js';
import { trlGrpoAlgorithm } from './trl-grpo-settings.js';

const IMAGE_SIZE = 16;
const BAR_COLOURS: Record<string, [number, number, number]> = {
  red: [230, 40, 40],
  green: [40, 200, 60],
  blue: [60, 90, 240],
};
/** Left edge of each of the three 4-pixel bars (a 1-pixel gap between them). */
const BAR_LEFT = [1, 6, 11];
const BAR_WIDTH = 4;
const MAX_VALUE = 15;
/** Share of SFT demonstrations that misread the chart (format right, answer wrong). */
const TEACHER_MISTAKE_RATE = 0.5;
/** grpo_bigcharts.py's QUESTION_TEMPLATE after the question, shortened to its format instruction. */
const TEMPLATE = ' Think in <thinking> </thinking>, then answer in <answer> </answer>.';

/** The first `<answer>…</answer>` on one line (Python's `.` stops only at \n), stripped, or null (eval_bigcharts_r1.py `extract_answer`). */
const firstAnswer = (completion: string): string | null =>
  /<answer>([^\n]*?)<\/answer>/.exec(completion)?.[1].trim() ?? null;

/** BigCharts-R1's `format_reward`: the stripped completion fullmatches thinking then answer. */
export const bigChartsFormat = (completion: string): number =>
  /^<thinking>[\s\S]*?<\/thinking>\s*<answer>[\s\S]*?<\/answer>$/.test(completion.trim()) ? 1 : 0;

/** eval_metrics.py's `relaxed_correctness(target, prediction)`: within 5% of a non-zero number, else equal lower-cased. */
export function relaxedCorrectness(target: string, prediction: string): boolean {
  const predicted = percentFloat(prediction);
  const truth = percentFloat(target);
  if (predicted !== null && truth) return Math.abs(predicted - truth) / Math.abs(truth) <= 0.05;
  return prediction.toLowerCase() === target.toLowerCase();
}

/** Three bars, left to right, each `height` pixels tall from the bottom edge, on a dark background. */
function drawBars(bars: readonly { colour: string; height: number }[]): TaskImage {
  const data = new Uint8Array(IMAGE_SIZE * IMAGE_SIZE * 3).fill(24);
  bars.forEach(({ colour, height }, index) => {
    for (let y = IMAGE_SIZE - height; y < IMAGE_SIZE; y++)
      for (let x = BAR_LEFT[index]; x < BAR_LEFT[index] + BAR_WIDTH; x++)
        data.set(BAR_COLOURS[colour], (y * IMAGE_SIZE + x) * 3);
  });
  return { width: IMAGE_SIZE, height: IMAGE_SIZE, channels: 3, data };
}

/** One chart question: the colours in a random order, heights 1–15 (distinct for "tallest"). */
function chartRow(pick: Pick): Example {
  const colours = Object.keys(BAR_COLOURS);
  for (let i = colours.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [colours[i], colours[j]] = [colours[j], colours[i]];
  }
  const tallest = pick(2) === 0;
  const heights: number[] = [];
  while (heights.length < colours.length) {
    const height = 1 + pick(MAX_VALUE);
    if (!tallest || !heights.includes(height)) heights.push(height);
  }
  const bars = colours.map((colour, index) => ({ colour, height: heights[index] }));
  const byHeight = [...bars].sort((a, b) => b.height - a.height);
  const asked = bars[pick(bars.length)];
  const question = tallest ? 'Which bar is the tallest?' : `What is the value of the ${asked.colour} bar?`;
  const offBy = 1 + pick(3);
  const misreadValue = asked.height > offBy && pick(2) === 0 ? asked.height - offBy : asked.height + offBy;
  return {
    prompt: `${question}<image>${TEMPLATE}`,
    answer: tallest ? byHeight[0].colour : String(asked.height),
    images: [drawBars(bars)],
    chart: bars.map((bar) => `${bar.colour}=${bar.height}`).join(','),
    // What the teacher says when it misreads: the second-tallest bar, or the value off by 1–3.
    misread: tallest ? byHeight[1].colour : String(misreadValue),
  };
}

// Held out by chart and question, which name the image and its answer exactly.
const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit(
    'bigcharts-bars',
    count,
    seed,
    heldOut,
    chartRow,
    (row) => `${String(row.chart)}|${String(row.prompt)}`,
  );

const cerm: RewardFn = ({ completion, row }) => cermScore(completion, String(row.answer));
const format: RewardFn = ({ completion }) => bigChartsFormat(completion);

export const bigChartsTask: Task = {
  name: 'bigcharts-bars',
  description: "BigCharts-R1 on generated bar charts: a bar's value or the tallest bar, <thinking> then <answer>",
  alphabet: [
    ...new Set(
      `${TEMPLATE}What is the value of the red green blue bar? Which bar is the tallest? 0123456789<thinking></thinking><answer></answer>`,
    ),
  ].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const said = draw() < TEACHER_MISTAKE_RATE ? String(example.misread) : String(example.answer);
    return `<thinking>${said}</thinking> <answer>${said}</answer>`;
  },
  rewards: (): NamedReward[] => [
    { name: 'cerm', reward: cerm, weight: 1 },
    { name: 'format', reward: format, weight: 1 },
  ],
  isCorrect: (example, completion) => relaxedCorrectness(String(example.answer), firstAnswer(completion) ?? ''),
};

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: IMAGE_SIZE, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 400, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 64, temperature: 1 }, // --num_generations 8
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: trlGrpoAlgorithm, // their trainer's: ε 1e-4, seq-mean-token-mean, k3 KL β 0.04 (trl-grpo-settings.ts)
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: bigChartsTask,
  rewards: bigChartsTask.rewards(),
} satisfies Recipe;
