/**
 * Reason-RFT (Tan et al. 2025, arXiv 2503.20752, papers #8) on visual counting: stage 1 SFT on
 * chain-of-thought demonstrations (`<think>…</think><answer>N</answer>`), stage 2 GRPO with the
 * paper's clevr-math rewards, `accuracy` and `format`, summed with weight 1 each. Run:
 * `npx grpo train recipes/papers/reason-rft.ts` (a from-scratch toy VLM, as recipes/vision-counting.ts).
 *
 * From the authors' tanhuajie/Reason-RFT: train/stage_rl/reward.py `accuracy_reward` (the first
 * `<answer>…</answer>` of the completion, else the whole completion, stripped, equal to the solution's
 * answer → 1; with no answer tag and no match, Math-Verify's parse/verify of the whole completion
 * against the solution → 1; else 0) and `format_reward` (the whole completion is
 * `<think>.*?</think>\s*<answer>.*?</answer>`, dot matching newlines → 1, else 0); train/stage_rl/prompt.py
 * CLEVR_MATH_QUESTION_PROMPT (appended to the question); train/stage_rl/grpo.py (task clevr-math:
 * rewards accuracy and format) and trainer/mm_grpo_trainer.py (rewards summed, advantage
 * (r − mean)/(std + 1e-4), one update per batch so the ratio is 1, β = 0.04 with the k3 estimator, loss
 * averaged over each completion's tokens, then over completions); the stage-2 script: 8 generations.
 * Differs: the problems are shape-counting's generated images (CLEVR-Math is not here); the CoT
 * teacher's "reasoning" is its count, and it is shape-blind on `teacherShapeBlindRate` of the problems
 * with a distractor, so GRPO has the shape to learn; Math-Verify is this library's port
 * (src/rewards/math.ts); the learning rate is the toy model's.
 */
import {
  shapeCountingTask,
  type Example,
  verifyMathAnswer,
  type NamedReward,
  type Recipe,
  type RewardFn,
  type Task,
} from '../../src/index.js';
import { trlGrpoAlgorithm } from './trl-grpo-settings.js';

/** CLEVR_MATH_QUESTION_PROMPT's instruction, after the question (and its image). */
const QUESTION_SUFFIX =
  ' Output the thinking process in <think> </think> and final answer (number) in <answer> </answer> tags.';

/** The first <answer>…</answer> on one line (Python's `re.search` without DOTALL), stripped. */
const firstAnswer = (text: string): string | null => /<answer>(.*?)<\/answer>/.exec(text)?.[1].trim() ?? null;

/** Reason-RFT's `accuracy_reward` for one completion and its solution. */
export function reasonRftAccuracy(completion: string, solution: string): number {
  const groundTruth = firstAnswer(solution) ?? solution.trim();
  const tagged = firstAnswer(completion);
  if ((tagged ?? completion.trim()) === groundTruth) return 1;
  // Only an untagged completion gets the symbolic check, as the code's `content_match is None`.
  if (tagged === null) return verifyMathAnswer(completion, solution) ? 1 : 0;
  return 0;
}

/** Reason-RFT's `format_reward`: the whole completion is <think>…</think> then <answer>…</answer>. */
export const reasonRftFormat = (completion: string): number =>
  /^<think>[\s\S]*?<\/think>\s*<answer>[\s\S]*?<\/answer>$/.test(completion) ? 1 : 0;

const accuracy: RewardFn = ({ completion, row }) => reasonRftAccuracy(completion, String(row.answer));
const format: RewardFn = ({ completion }) => reasonRftFormat(completion);

const counting = shapeCountingTask({ imageSize: 16, cellSize: 8, teacherShapeBlindRate: 0.7 });

export const reasonRftCountingTask: Task = {
  ...counting,
  name: 'reason-rft-counting',
  description: 'shape-counting with Reason-RFT prompts and rewards: <think>…</think><answer>N</answer>',
  alphabet: [...new Set(`${counting.alphabet}${QUESTION_SUFFIX}<think></think><answer></answer>`)].join(''),
  trainExamples: (count, seed) => counting.trainExamples(count, seed).map(withSuffix),
  evalExamples: (count, seed) => counting.evalExamples(count, seed).map(withSuffix),
  demonstration: (example, draw) => {
    const count = counting.demonstration(example, draw);
    return `<think>${count}</think><answer>${count}</answer>`;
  },
  rewards: (): NamedReward[] => [
    { name: 'accuracy', reward: accuracy, weight: 1 },
    { name: 'format', reward: format, weight: 1 },
  ],
  isCorrect: (example, completion) => reasonRftAccuracy(completion, String(example.answer)) === 1,
};

/** The row with CLEVR_MATH_QUESTION_PROMPT's instruction after its question (the task's prompts are text). */
function withSuffix(example: Example): Example {
  return { ...example, prompt: `${String(example.prompt)}${QUESTION_SUFFIX}` };
}

export default {
  config: {
    model: {
      hiddenSize: 64,
      numLayers: 2,
      numHeads: 4,
      vision: { imageSize: 16, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
    },
    sft: { steps: 1000, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
    sampling: { groupSize: 8, maxNewTokens: 32, temperature: 1 }, // --num_generations 8
    grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 128, learningRate: 1e-3 },
    algorithm: trlGrpoAlgorithm, // their trainer's: ε 1e-4, seq-mean-token-mean, k3 KL β 0.04 (trl-grpo-settings.ts)
    evaluation: { examples: 200, every: 25 },
    checkpoint: { every: 0 },
    logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
  },
  task: reasonRftCountingTask,
  rewards: reasonRftCountingTask.rewards(),
} satisfies Recipe;
