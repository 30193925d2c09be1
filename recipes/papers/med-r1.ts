/**
 * Med-R1 (Lai et al. 2025, arXiv 2503.13939, papers #55): GRPO on multiple-choice visual questions,
 * the answer a single letter in `<answer>…</answer>`, rewards `accuracy` + `format` (weight 1 each),
 * with a thinking variant (`<think>…</think><answer>…</answer>`, this file) and the paper's
 * No-Thinking variant (`<answer>…</answer>` alone, recipes/papers/med-r1-nothink.ts). Run:
 * `npx grpo train recipes/papers/med-r1.ts` (a from-scratch toy VLM, as recipes/vision-counting.ts:
 * SFT for the format, then GRPO).
 *
 * From the authors' Yuxiang-Lai117/Med-R1 (read at 88d76c7): src/r1-v/src/open_r1/grpo_vqa.py and
 * grpo_vqa_nothink.py: `accuracy_reward` (Math-Verify's verify(parse(completion), parse(solution))
 * → 1; else the first one-line `<answer>…</answer>` of the solution and of the completion (each
 * else the whole text), stripped, equal → 1; else 0), `format_reward` (fullmatch of
 * `<think>.*?</think>\s*<answer>.*?</answer>`, or `\s*<answer>.*?</answer>` without thinking, dot
 * matching newlines), QUESTION_TEMPLATE after the question (its options inline, "A)…, B)…"), the
 * solution `<answer> X </answer>` as their Splits/*.json; trainer/grpo_trainer.py (rewards summed,
 * advantage (r − mean)/(std + 1e-4), exp(logp − logp.detach())·A so the ratio is 1, β = 0.04 with
 * the k3 estimator, loss averaged over each completion's tokens then over completions);
 * src/scripts/run_grpo_Omni_deepspeed_train_vqa.sh: 4 generations.
 * Differs: the questions are shape-counting's generated images made multiple choice (four counts as
 * options, in a seeded order) instead of OmniMedVQA's medical images; the CoT teacher's "reasoning"
 * is its count and it is shape-blind on `teacherShapeBlindRate` of the problems with a distractor
 * (its letter is the shape-blind count's option), so GRPO has the shape to learn; the image sits
 * after the question (a causal toy model must read the question first); QUESTION_TEMPLATE is
 * shortened to one sentence with the same tags (the toy model has 256 positions); Math-Verify is this
 * library's port (src/rewards/math.ts), which finds no answer in a letter solution, so for these
 * rows the string match decides, as Math-Verify's parse of "<answer> A </answer>" finds no number
 * or LaTeX; the learning rate is the toy model's (theirs: 1e-6 on Qwen2-VL-2B).
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

const LETTERS = ['A', 'B', 'C', 'D'];
/** The 2×2 grid holds 0 to 4 shapes: every count is a possible option. */
const COUNTS = [0, 1, 2, 3, 4];

/**
 * grpo_vqa.py's QUESTION_TEMPLATE after `{Question}`, shortened: the from-scratch model has 256
 * positions and a character tokenizer pays for each of the template's 250 characters.
 */
const THINK_TEMPLATE = ' Think in <think>...</think>, then give the single-letter choice in <answer>...</answer>.';
/** grpo_vqa_nothink.py's QUESTION_TEMPLATE after `{Question}`, shortened as the thinking one. */
const NOTHINK_TEMPLATE = ' Give the single-letter choice in <answer>...</answer>, nothing else.';

/** The first <answer>…</answer> on one line (Python's `re.search` without DOTALL), stripped. */
const firstAnswer = (text: string): string | null => /<answer>(.*?)<\/answer>/.exec(text)?.[1].trim() ?? null;

/** Med-R1's `accuracy_reward` for one completion and its solution (`<answer> X </answer>`). */
export function medR1Accuracy(completion: string, solution: string): number {
  if (verifyMathAnswer(completion, solution)) return 1;
  return (firstAnswer(completion) ?? completion.trim()) === (firstAnswer(solution) ?? solution.trim()) ? 1 : 0;
}

/** Med-R1's `format_reward`: fullmatch of think-then-answer, or of the answer alone without thinking. */
export const medR1Format = (completion: string, think: boolean): number =>
  (think ? /^<think>[\s\S]*?<\/think>\s*<answer>[\s\S]*?<\/answer>$/ : /^\s*<answer>[\s\S]*?<\/answer>$/).test(
    completion,
  )
    ? 1
    : 0;

/** A seeded generator of integers (the options' order must not depend on anything but the seed). */
function lcg(seed: number): () => number {
  let state = (seed * 2654435761 + 7) >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state >>> 8;
  };
}

/**
 * The counting row as a four-option question: the true count, the shape-blind count (when it
 * differs, so the teacher's mistake is an option) and other counts, in a seeded order; the answer is
 * `<answer> LETTER </answer>`, `count` the true count and `optionCounts` the counts in option order ("2,0,1,3").
 */
function asMultipleChoice(example: Example, next: () => number, template: string): Example {
  const truth = Number(example.answer);
  const blind = Number(example.shapeBlindCount);
  const others = COUNTS.filter((count) => count !== truth && count !== blind);
  while (others.length > (truth === blind ? 3 : 2)) others.splice(next() % others.length, 1);
  const options = [...new Set([truth, blind, ...others])];
  for (let i = options.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [options[i], options[j]] = [options[j], options[i]];
  }
  const listed = options.map((count, i) => `${LETTERS[i]})${count}`).join(', ');
  return {
    ...example,
    prompt: `${String(example.prompt)} ${listed}${template}`,
    answer: `<answer> ${LETTERS[options.indexOf(truth)]} </answer>`,
    count: truth,
    optionCounts: options.join(','),
  };
}

/** The Med-R1 task on shape-counting's images, thinking or not (grpo_vqa.py / grpo_vqa_nothink.py). */
export function medR1Task(think: boolean): Task {
  const counting = shapeCountingTask({ imageSize: 16, cellSize: 8, teacherShapeBlindRate: 0.7 });
  const template = think ? THINK_TEMPLATE : NOTHINK_TEMPLATE;
  const convert = (examples: Example[], seed: number): Example[] => {
    const next = lcg(seed);
    return examples.map((example) => asMultipleChoice(example, next, template));
  };
  const accuracy: RewardFn = ({ completion, row }) => medR1Accuracy(completion, String(row.answer));
  const format: RewardFn = ({ completion }) => medR1Format(completion, think);
  return {
    ...counting,
    name: think ? 'med-r1-choice' : 'med-r1-choice-nothink',
    description: `shape-counting as Med-R1's multiple-choice questions: ${think ? '<think>…</think>' : ''}<answer> LETTER </answer>`,
    alphabet: [...new Set(`${counting.alphabet}${template}ABCD)0123456789,<think></think><answer></answer>`)].join(''),
    trainExamples: (count, seed) => convert(counting.trainExamples(count, seed), seed),
    evalExamples: (count, seed) => convert(counting.evalExamples(count, seed), seed + 1),
    demonstration: (example, draw) => {
      // shape-counting's teacher (shape-blind on a share of the distractor problems), its count's letter.
      const counted = counting.demonstration({ ...example, answer: String(example.count) }, draw);
      const letter = LETTERS[String(example.optionCounts).split(',').indexOf(counted)];
      return think ? `<think>${counted}</think><answer>${letter}</answer>` : `<answer>${letter}</answer>`;
    },
    rewards: (): NamedReward[] => [
      { name: 'accuracy', reward: accuracy, weight: 1 },
      { name: 'format', reward: format, weight: 1 },
    ],
    isCorrect: (example, completion) => medR1Accuracy(completion, String(example.answer)) === 1,
  };
}

/** The recipe for one variant: the authors' GRPO settings on the toy VLM. */
export function medR1Recipe(think: boolean): Recipe {
  const task = medR1Task(think);
  return {
    config: {
      model: {
        hiddenSize: 64,
        numLayers: 2,
        numHeads: 4,
        vision: { imageSize: 16, patchSize: 8, scaleFactor: 2, hiddenSize: 32, numLayers: 1, numHeads: 2 },
      },
      sft: { steps: 400, batchSize: 32, learningRate: 1e-2, warmupSteps: 20, schedule: 'cosine' },
      sampling: { groupSize: 4, maxNewTokens: 40, temperature: 1 }, // --num_generations 4
      grpo: { steps: 100, promptsPerStep: 16, microBatchSize: 64, learningRate: 1e-3 },
      algorithm: trlGrpoAlgorithm, // their trainer's: ε 1e-4, seq-mean-token-mean, k3 KL β 0.04 (trl-grpo-settings.ts)
      evaluation: { examples: 200, every: 25 },
      checkpoint: { every: 0 },
      logging: { printEvery: 10, samplesEvery: 10, samplesPerStep: 2 },
    },
    task,
    rewards: task.rewards(),
  };
}

export default medR1Recipe(true) satisfies Recipe;
