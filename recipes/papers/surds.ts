/**
 * SURDS (Guo et al. 2025, arXiv 2411.13112, papers #152): GRPO for spatial questions about two objects
 * ("Which is further left, A or B?" with "Almost the same" as the third option), the answer
 * `<location>A: [x1, y1, x2, y2], B: […]</location><think>…</think><answer>…</answer>`, rewarded by
 * the sum of four parts: `format`, `location` (the named boxes), `accuracy` (the answer) and
 * `think-to-answer` (the policy itself, greedily, reads only the `<think>` text and must reach the
 * right answer: the reasoning has to carry the answer). Run: `npx grpo train recipes/papers/surds.ts`
 * (a from-scratch toy VLM: SFT for the format, then GRPO).
 *
 * From the authors' XiandaGuo/Drive-MLLM (read at 7895f99), training/grpo/grpo.py:
 * `format_reward` (fullmatch of `<location>.*?</location>\s*<think>.*?</think>\s*<answer>.*?</answer>`,
 * DOTALL, not stripped); `location_reward` (the solution's first one-line `<location>` and the
 * completion's last `<location>` (DOTALL), each read as `name: [x1, y1, x2, y2]` entries, non-negative
 * integers, names `normalize`d after stripping leading ", "; per solution object, 1 when the completion
 * names it with a box of IoU > 0.5 (`is_iou`; else 2·centerness − 1 > 0.5), the mean over the
 * solution's objects; any failure 0); `accuracy_reward` (the solution's first one-line `<answer>`, the
 * completion's last `<answer>` (DOTALL), equal after `normalize`: strip, lower-case, drop ASCII
 * punctuation, drop the words a/an/the, collapse spaces); `needmodel_think_to_output_reward` (the
 * completion's first `<think>` (DOTALL), stripped, in `build_chat_example`'s prompt, the policy
 * generating greedily up to 100 tokens; 1 when that output's first `<answer>` normalizes to the
 * solution's; no think: 0); rewards summed, weight 1 each; their prompts/prompts_reasoning/04_lf_vqa.txt
 * for the question and its options.
 * Differs: the images are generated (16×16, two shapes in a 2×2 grid; left/right by the boxes' centres)
 * instead of nuScenes driving scenes; their run script and trainer (`is_iou`, G, β) are not in the
 * repository, so the IoU rule, G = 8 and β = 0.04 (k3) are TRL GRPOConfig's defaults of the time; the
 * question and `build_chat_example`'s prompt are shortened (the toy model has 256 positions) and the
 * greedy output is capped by the positions left; an SFT teacher that swaps the two objects' boxes on
 * `TEACHER_MISTAKE_RATE` of its demonstrations teaches the format first; the think-to-answer reward
 * reads a greedy output this recipe's rollout makes for each distinct think text of the step (a think
 * that step did not read, e.g. in held-out scoring, is null: left out), and the toy model, never
 * taught that prompt, scores about 0.
 */
import {
  drawShapes,
  generatedSplit,
  singleTurnRollout,
  type Example,
  type NamedReward,
  type Pick,
  type Recipe,
  type RewardFn,
  type RolloutFn,
  type Task,
} from '../../src/index.js';
import { renderPrompt } from '../../src/config/prompt-format.js';
import { trlGrpoAlgorithm } from './trl-grpo-settings.js';

const IMAGE_SIZE = 16;
const CELL_SIZE = 8;
/** Share of SFT demonstrations whose boxes (and so answer) swap the two objects. */
const TEACHER_MISTAKE_RATE = 0.5;
const SAME = 'Almost the same';
const INSTRUCTION = ' Or almost the same? Give <location><think><answer>.';

/** Python's string.punctuation. */
const PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/** SURDS's `normalize`: strip, lower-case, drop punctuation, drop a/an/the, collapse whitespace. */
export const surdsNormalize = (text: string): string =>
  text
    .trim()
    .toLowerCase()
    .replace(PUNCTUATION, '')
    .replace(/\b(a|an|the)\b/gi, '')
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');

/** The first `<tag>…</tag>` on one line (Python's `re.search` without DOTALL), or null. */
const firstOnOneLine = (text: string, tag: string): string | null =>
  new RegExp(`<${tag}>([^\\n]*?)</${tag}>`).exec(text)?.[1] ?? null;
/** The last `<tag>…</tag>` (Python's `re.findall(…, re.DOTALL)[-1]`), or null. */
const lastAcrossLines = (text: string, tag: string): string | null =>
  [...text.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].at(-1)?.[1] ?? null;

/** SURDS's `format_reward`. */
export const surdsFormat = (completion: string): number =>
  /^<location>[\s\S]*?<\/location>\s*<think>[\s\S]*?<\/think>\s*<answer>[\s\S]*?<\/answer>$/.test(completion) ? 1 : 0;

/** SURDS's `accuracy_reward`: the completion's last answer equals the solution's first, normalized. */
export function surdsAccuracy(completion: string, solution: string): number {
  const truth = firstOnOneLine(solution, 'answer');
  const answer = lastAcrossLines(completion, 'answer');
  return truth !== null && answer !== null && surdsNormalize(answer) === surdsNormalize(truth) ? 1 : 0;
}

export type Box = [number, number, number, number];

/** The `name: [x1, y1, x2, y2]` entries of a location text, later names overwriting earlier ones. */
function namedBoxes(text: string): Map<string, Box> {
  const boxes = new Map<string, Box>();
  for (const match of text.matchAll(/([^:]+):\s*\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)\]/g))
    boxes.set(surdsNormalize(match[1].replace(/^[, ]+/, '')), match.slice(2, 6).map(Number) as Box);
  return boxes;
}

/** compute_iou: overlap over union, 0 for an empty union (no +1 pixel). */
export function surdsIou(a: Box, b: Box): number {
  const overlap =
    Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0])) * Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - overlap;
  return union === 0 ? 0 : overlap / union;
}

/** compute_centerness(truth, predicted): √((1 − dx)(1 − dy)) of the centres' offsets in half-sizes of the prediction, each capped at 1. */
export function surdsCenterness(truth: Box, predicted: Box): number {
  const width = predicted[2] - predicted[0];
  const height = predicted[3] - predicted[1];
  if (width <= 0 || height <= 0) return 0;
  const dx = Math.min(1, Math.abs((truth[0] + truth[2]) / 2 - (predicted[0] + predicted[2]) / 2) / (width / 2));
  const dy = Math.min(1, Math.abs((truth[1] + truth[3]) / 2 - (predicted[1] + predicted[3]) / 2) / (height / 2));
  return Math.sqrt((1 - dx) * (1 - dy));
}

/** SURDS's `location_reward`: the share of the solution's objects the completion boxes well. */
export function surdsLocation(completion: string, solution: string, isIou = true): number {
  const truthText = firstOnOneLine(solution, 'location');
  const answerText = lastAcrossLines(completion, 'location');
  if (truthText === null || answerText === null) return 0;
  const truths = namedBoxes(truthText.trim());
  const answers = namedBoxes(answerText.trim());
  if (truths.size === 0) return 0; // their division by zero, caught
  let hits = 0;
  for (const [name, truth] of truths) {
    const box = answers.get(name);
    if (box) hits += (isIou ? surdsIou(truth, box) : 2 * surdsCenterness(truth, box) - 1) > 0.5 ? 1 : 0;
  }
  return hits / truths.size;
}

/** The first `<think>…</think>` (DOTALL), stripped, or null: what the think-to-answer reader sees. */
const thinkOf = (completion: string): string | null =>
  /<think>([\s\S]*?)<\/think>/.exec(completion)?.[1].trim() ?? null;

/** build_chat_example's prompt, shortened to its tags and instruction. */
export const thinkToAnswerPrompt = (think: string): string =>
  `Infer the final answer only from this reasoning.\n<reasoning>\n${think}\n</reasoning>\n<answer>[Your concise answer]</answer>`;

/** Each think text of the current step → the policy's greedy output for thinkToAnswerPrompt(think). */
const readings = new Map<string, string>();

/** SURDS's `needmodel_think_to_output_reward`, on the reading this recipe's rollout made (null without one). */
export const thinkToAnswer: RewardFn = ({ completion, row }) => {
  const think = thinkOf(completion);
  const truth = /<answer>([\s\S]*?)<\/answer>/.exec(String(row.answer))?.[1].trim();
  if (think === null || truth === undefined) return 0;
  const reading = readings.get(think);
  if (reading === undefined) return null;
  const answer = /<answer>([\s\S]*?)<\/answer>/.exec(reading)?.[1];
  return answer !== undefined && surdsNormalize(answer) === surdsNormalize(truth) ? 1 : 0;
};

/**
 * The run's samples, then one greedy reading per distinct think text (the step's policy reads its own
 * reasoning); `generate` (default: the single-turn sampler) makes both, so a test can script them.
 */
export function surdsRollout(generate: RolloutFn = singleTurnRollout): RolloutFn {
  return async (context, prompts, settings) => {
    const samples = await generate(context, prompts, settings);
    readings.clear();
    const thinks = [
      ...new Set(samples.map((sample) => thinkOf(sample.text)).filter((think): think is string => think !== null)),
    ];
    const format = { tokenizer: context.tokenizer, chatTemplate: context.chatTemplate ?? null };
    const readingPrompts = thinks.map((think) => {
      const example = { prompt: thinkToAnswerPrompt(think) };
      return { example, promptIds: renderPrompt(format, example).ids };
    });
    const positions = context.model.config.maxPositionEmbeddings;
    const room = Math.min(100, ...readingPrompts.map(({ promptIds }) => positions - promptIds.length));
    if (thinks.length > 0 && room > 0) {
      // do_sample=False, max_new_tokens=100 (fewer when the prompt leaves fewer positions).
      const outputs = await generate(context, readingPrompts, {
        ...settings,
        groupSize: 1,
        maxNewTokens: room,
        temperature: 0,
      });
      outputs.forEach((output) => readings.set(thinks[output.promptIndex], output.text));
    }
    return samples;
  };
}

const COLOURS = ['red', 'green', 'blue'];
const SHAPES = ['square', 'plus'] as const;

/** One question: two different shapes in two of the four cells, left or right asked. */
function spatialRow(pick: Pick): Example {
  const cells = [0, 1, 2, 3];
  const objects = [0, 1].map(() => {
    const cell = cells.splice(pick(cells.length), 1)[0];
    return { cell, colour: COLOURS[pick(3)], shape: SHAPES[pick(2)] };
  });
  if (objects[0].colour === objects[1].colour && objects[0].shape === objects[1].shape)
    objects[1].shape = objects[0].shape === 'square' ? 'plus' : 'square';
  const [a, b] = objects.map((object) => {
    const left = (object.cell % 2) * CELL_SIZE;
    const top = Math.floor(object.cell / 2) * CELL_SIZE;
    return {
      name: `${object.colour} ${object.shape}`,
      box: [left + 1, top + 1, left + CELL_SIZE - 1, top + CELL_SIZE - 1],
    };
  });
  const side = pick(2) === 0 ? 'left' : 'right';
  const [centreA, centreB] = [a, b].map(({ box }) => (box[0] + box[2]) / 2);
  const further = centreA === centreB ? SAME : (side === 'left') === centreA < centreB ? a.name : b.name;
  const location = (first: typeof a, second: typeof b) =>
    `${a.name}: [${first.box.join(', ')}], ${b.name}: [${second.box.join(', ')}]`;
  return {
    prompt: `Which is further ${side}, ${a.name} or ${b.name}?<image>${INSTRUCTION}`,
    answer: `<location>${location(a, b)}</location><answer>${further}</answer>`,
    images: [drawShapes(objects, IMAGE_SIZE, CELL_SIZE)],
    further,
    think: `${centreA} vs ${centreB}`,
    // The teacher's mistake: the two boxes swapped, and the answer that follows from them.
    swappedLocation: location(b, a),
    swappedFurther: further === SAME ? SAME : further === a.name ? b.name : a.name,
    swappedThink: `${centreB} vs ${centreA}`,
  };
}

const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('surds-spatial', count, seed, heldOut, spatialRow, (row) => String(row.answer) + String(row.prompt));

const format: RewardFn = ({ completion }) => surdsFormat(completion);
const location: RewardFn = ({ completion, row }) => surdsLocation(completion, String(row.answer));
const accuracy: RewardFn = ({ completion, row }) => surdsAccuracy(completion, String(row.answer));

export const surdsTask: Task = {
  name: 'surds-spatial',
  description: 'SURDS on generated shapes: which of two objects is further left or right, with boxes and reasoning',
  alphabet: [
    ...new Set(
      `Which is further left right, or?${INSTRUCTION}${COLOURS.join('')}${SHAPES.join('')}${SAME}0123456789[], :.vs<location></location><think></think><answer></answer>${thinkToAnswerPrompt('')}`,
    ),
  ].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) => {
    const swap = draw() < TEACHER_MISTAKE_RATE;
    const boxes = swap
      ? String(example.swappedLocation)
      : /<location>(.*)<\/location>/.exec(String(example.answer))![1];
    const think = String(swap ? example.swappedThink : example.think);
    return `<location>${boxes}</location><think>${think}</think><answer>${String(swap ? example.swappedFurther : example.further)}</answer>`;
  },
  rewards: (): NamedReward[] => [
    { name: 'format', reward: format, weight: 1 },
    { name: 'location', reward: location, weight: 1 },
    { name: 'accuracy', reward: accuracy, weight: 1 },
    { name: 'think-to-answer', reward: thinkToAnswer, weight: 1 },
  ],
  isCorrect: (example, completion) => surdsAccuracy(completion, String(example.answer)) === 1,
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
    sampling: { groupSize: 8, maxNewTokens: 136, temperature: 1 },
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
    algorithm: trlGrpoAlgorithm, // their trainer's: ε 1e-4, seq-mean-token-mean, k3 KL β 0.04 (trl-grpo-settings.ts)
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: surdsTask,
  rewards: surdsTask.rewards(),
  rollout: surdsRollout(),
} satisfies Recipe;
