/**
 * SSL4RL (Guo et al. 2025, arXiv 2510.16416, papers #78): a self-supervised pretext task as the
 * verifiable reward of a vision-language model. This is its RotationQA task: two images, the second the
 * first turned counter-clockwise by 0, 90, 180 or 270 degrees; the model answers
 * `<answer>DEGREES</answer>` and scores 1 when the answer is one of the ground truths, else 0. Run:
 * `npx grpo train recipes/papers/ssl4rl.ts` (a from-scratch toy VLM, as recipes/vision-counting.ts: SFT
 * for the format, then GRPO).
 *
 * From the authors' code (PKU-ML/SSL4RL, read in the fork ss8319/SSL4RL at 8816fd8):
 * build_benchmarks/makerotation_mmbench.py (GRANUALITY 90, a random angle of range(0, 360, 90), PIL's
 * counter-clockwise `rotate`, images [original, rotated], answer the angle) and
 * verl/utils/reward_score/ssl4rl.py `compute_score` (the text between the first <answer> and
 * </answer>, stripped, equal to one of the comma-separated ground truths → 1.0, else 0.0; no format
 * score); run_mmbench_rotation.sh: GRPO, 5 rollouts per prompt, KL loss 0.01 (low_var_kl = k3).
 * Differs: the images are generated (2×2 cells of coloured squares and pluses, shape-counting's
 * drawing), not MMBench photos, and square, so a turn needs no crop; an image that looks the same
 * after other turns (a symmetric layout) lists each such angle as a ground truth ("0,180"), which
 * the reward's comma split accepts; the prompt is a short line instead of their paragraph (a
 * character tokenizer pays for every character); an SFT teacher first teaches the answer format,
 * guessing the angle on `TEACHER_GUESS_RATE` of its demonstrations, so GRPO has the angle to learn;
 * the learning rates are the toy model's (theirs: 1e-6 on Qwen2.5-VL).
 */
import {
  drawShapes,
  generatedSplit,
  type Example,
  type TaskImage,
  type Pick,
  type Recipe,
  type RewardFn,
  type Task,
} from '../../src/index.js';

/** The rotation step, degrees (the code's GRANUALITY). */
const GRANULARITY = 90;
const ANGLES = [0, 90, 180, 270];
const IMAGE_SIZE = 16;
const CELL_SIZE = 8;
/** Share of SFT demonstrations whose angle is a guess (format right, angle random). */
const TEACHER_GUESS_RATE = 0.5;
const PROMPT = `<image><image>The second image is the first turned counter-clockwise by 0, ${GRANULARITY}, 180 or 270 degrees. How many?`;

/** `image` (square, RGB) turned counter-clockwise by `degrees` (a multiple of 90), as PIL's `rotate`. */
export function rotateCounterClockwise(image: TaskImage, degrees: number): TaskImage {
  const size = image.width;
  if (image.height !== size || degrees % 90 !== 0) throw new Error('rotateCounterClockwise: square images, 90° steps');
  let data = Uint8Array.from(image.data);
  for (let turn = 0; turn < (((degrees / 90) % 4) + 4) % 4; turn++) {
    const turned = new Uint8Array(data.length);
    // One quarter turn counter-clockwise: output (row r, column c) = input (row c, column size − 1 − r).
    for (let r = 0; r < size; r++)
      for (let c = 0; c < size; c++)
        for (let k = 0; k < 3; k++) turned[(r * size + c) * 3 + k] = data[(c * size + size - 1 - r) * 3 + k];
    data = turned;
  }
  return { ...image, data };
}

/** The text between the first `<answer>` and `</answer>`, stripped, or null (the code's `extract_answer`). */
const extractAnswer = (completion: string): string | null =>
  /<answer>(.*?)<\/answer>/s.exec(completion)?.[1].trim() ?? null;

/** SSL4RL's `compute_score` test: the answer equals one of the comma-separated ground truths. */
const answerIsRight = (completion: string, groundTruth: unknown): boolean => {
  const answer = extractAnswer(completion);
  return (
    answer !== null &&
    String(groundTruth)
      .split(',')
      .some((truth) => truth.trim() === answer)
  );
};

/** SSL4RL's reward: 1.0 for a right answer, else 0.0 (no format score). */
export const ssl4rlScore: RewardFn = ({ completion, row }) => (answerIsRight(completion, row.answer) ? 1 : 0);

/** One RotationQA row: a random 2×2 layout, a random angle, every angle that gives the same pixels. */
function rotationRow(pick: Pick): Example {
  const colours = ['red', 'green', 'blue'];
  const kinds = [0, 1, 2, 3].map(() => pick(7)); // per cell 0: empty; else one of 3 colours × 2 shapes
  const placed = kinds.flatMap((kind, cell) =>
    kind === 0
      ? []
      : [{ cell, colour: colours[(kind - 1) % 3], shape: kind <= 3 ? ('square' as const) : ('plus' as const) }],
  );
  const original = drawShapes(placed, IMAGE_SIZE, CELL_SIZE);
  const angle = ANGLES[pick(ANGLES.length)];
  const rotated = rotateCounterClockwise(original, angle);
  const same = (a: TaskImage, b: TaskImage) => a.data.every((value, index) => value === b.data[index]);
  const truths = ANGLES.filter((candidate) => same(rotateCounterClockwise(original, candidate), rotated));
  return { prompt: PROMPT, answer: truths.join(','), angle, layout: kinds.join(''), images: [original, rotated] };
}

// Held out by layout and truths, which name the image pair exactly (angles of one truth list give the
// same pixels): no evaluation pair is trained on.
const rows = (count: number, seed: number, heldOut: boolean) =>
  generatedSplit('ssl4rl-rotation', count, seed, heldOut, rotationRow, (row) => `${row.layout}|${row.answer}`);

export const rotationTask: Task = {
  name: 'ssl4rl-rotation',
  description: 'SSL4RL RotationQA: by how many degrees the second image is the first turned counter-clockwise',
  alphabet: [...new Set(`${PROMPT.replaceAll('<image>', '')}<answer></answer>0123456789`)].join(''),
  trainExamples: (count, seed) => rows(count, seed, false),
  evalExamples: (count, seed) => rows(count, seed, true),
  demonstration: (example, draw) =>
    `<answer>${draw() < TEACHER_GUESS_RATE ? ANGLES[Math.floor(draw() * 4)] : example.angle}</answer>`,
  rewards: () => [{ name: 'ssl4rl', reward: ssl4rlScore, weight: 1 }],
  isCorrect: (example, completion) => answerIsRight(completion, example.answer),
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
    sampling: { groupSize: 5, maxNewTokens: 20, temperature: 1 }, // rollout.n = 5
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 80, learningRate: 1e-3 },
    algorithm: { advantage: 'grpo', loss: 'ppo-clip', aggregation: 'token-mean', klCoefficient: 0.01 },
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: rotationTask,
  rewards: rotationTask.rewards(),
} satisfies Recipe;
