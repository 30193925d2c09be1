/**
 * ReFine-RFT (Zhu, Su & Liu 2026, "Can Textual Reasoning Improve the Performance of MLLMs on
 * Fine-grained Visual Classification?", arXiv 2601.06993, papers #141): GRPO on classification with
 * an ensemble of rewards, each normalised within its group before they are summed (MRN,
 * `algorithm.advantage: mrn`), and a reward that punishes long thinking. Run:
 * `npx grpo train recipes/papers/refine-rft.ts` (a from-scratch toy VLM: SFT for the format, then GRPO).
 *
 * From the authors' jiezhu23/ReFine-RFT: src/refinerft/reward_func.py (`format_reward`: fullmatch of
 * `<think>.*?</think>\s*<answer>.*?</answer>`, dot matching newlines; `accuracy_reward` with
 * prompt_type "cot": Math-Verify first, else the first one-line `<answer>…</answer>` of solution and
 * completion (each else the whole text), stripped, spaces and underscores removed, lower-cased, 1
 * when either contains the other; `think_punishment_reward`: 1 when the stripped `<think>` content
 * is shorter than max_len 10 characters, else 0, and 0 without a `<think>` block), the MRN advantage
 * of trainer/mrpo_trainer.py, and configs/train_configs_mrpo_lora_r64a128_aircrafts.yaml (rewards
 * format, accuracy, think_punishment, accuracy_mllm, embedding_similarity with weights 1, 1, 1, 0.1,
 * 0.1; 8 generations; β = 0; max_len 10).
 * Differs: the images and classes are Med-R1's recipe's (recipes/papers/med-r1.ts: shape-counting's
 * generated images as four-option questions) instead of the FGVC few-shot sets; `accuracy_mllm`
 * (`accuracy_reward_openai`: their prompt, the first number of the reply clamped to [0, 10] over 10)
 * runs only with `REFINE_RFT_JUDGE=1` and a judge endpoint (`OPENAI_BASE_URL`, `JUDGE_MODEL`; theirs a
 * served Qwen2-VL-7B), and a failed call leaves the sample out of the loss where theirs scores 0;
 * `embedding_similarity` (gte-small cosine of answer and label) is left out: its model is not here;
 * the learning rate is the toy model's (theirs: 2e-5 with LoRA on Qwen2-VL-2B).
 */
import { chatCompletion, verifyMathAnswer, type NamedReward, type Recipe, type RewardFn } from '../../src/index.js';
import { medR1Format, medR1Recipe, medR1Task } from './med-r1.js';

/** The first one-line `<answer>…</answer>` (Python's `re.search` without DOTALL), stripped, else null. */
const firstAnswer = (text: string): string | null => /<answer>(.*?)<\/answer>/.exec(text)?.[1].trim() ?? null;
/** Their comparison form: spaces and underscores removed, lower-cased. */
const squeeze = (text: string) => text.replace(/[ _]/g, '').toLowerCase();

/** ReFine-RFT's `accuracy_reward` (prompt_type "cot", an FGVC data set) for one completion and its solution. */
export function refineAccuracy(completion: string, solution: string): number {
  if (verifyMathAnswer(completion, solution)) return 1;
  const truth = squeeze(firstAnswer(solution) ?? solution.trim());
  const answer = squeeze(firstAnswer(completion) ?? completion.trim());
  return truth.includes(answer) || answer.includes(truth) ? 1 : 0; // an empty answer is in every label, as in Python
}

/** ReFine-RFT's `think_punishment_reward`: 1 when the first `<think>` block, stripped, is under `maxLength` characters. */
export function thinkPunishment(completion: string, maxLength = 10): number {
  const think = /<think>([\s\S]*?)<\/think>/.exec(completion);
  return think !== null && think[1].trim().length < maxLength ? 1 : 0;
}

/** `accuracy_reward_openai`'s prompt, as its `.strip()` leaves it (the later lines keep their 8-space indent). */
export function mllmAccuracyPrompt(predicted: string, truth: string): string {
  const body = [
    '---',
    '[Example 1]',
    'Predicted Answer: "2007 Dodge Dakota Club Cab"',
    'Correct Answer: "2007 Dodge Dakota Club Cab"',
    'Score: 10',
    '---',
    '[Example 2]',
    'Predicted Answer: "Boeing 707"',
    'Correct Answer: "707-320"',
    'Score: 6',
    '---',
    '[Example 3]',
    'Predicted Answer: "Nasturtium"',
    'Correct Answer: "watercress"',
    'Score: 0',
    '---',
    '[Your Task]',
    `Predicted Answer: "${predicted}"`,
    `Correct Answer: "${truth}"`,
    'Score:',
  ];
  const head =
    'You are a scoring assistant. Based on the similarity between the "Predicted Answer" and the "Correct Answer", provide a score from 0 to 10. A score of 10 means a perfect match, and 0 means a complete mismatch. You must output only the numerical score.';
  return [head, '', ...body.map((line) => `        ${line}`)].join('\n');
}

/** Their reading of the judge's reply: the first number, clamped to [0, 10], over 10; no number: 0. */
export function mllmAccuracyScore(reply: string): number {
  const number = /(\d+(?:\.\d+)?)/.exec(reply);
  return number === null ? 0 : Math.max(0, Math.min(10, Number(number[1]))) / 10;
}

/**
 * `accuracy_mllm` (weight 0.1) when `REFINE_RFT_JUDGE=1`: the answer and the label sent to the
 * OpenAI-compatible endpoint of `OPENAI_BASE_URL` / `JUDGE_MODEL` (theirs: a served Qwen2-VL-7B).
 */
function mllmAccuracy(): NamedReward[] {
  const flag = process.env.REFINE_RFT_JUDGE;
  if (flag === undefined || flag === '' || flag === '0') return [];
  if (flag !== '1') throw new Error(`recipes/papers/refine-rft.ts: REFINE_RFT_JUDGE=${flag}: use 1 (judge on) or 0`);
  if (!process.env.OPENAI_BASE_URL)
    throw new Error(
      'recipes/papers/refine-rft.ts: REFINE_RFT_JUDGE=1 needs a judge: set OPENAI_BASE_URL and JUDGE_MODEL',
    );
  const reward: RewardFn = ({ completion, row, signal }) => {
    const predicted = /<answer>(.*?)<\/answer>/.exec(completion)?.[1].trim() ?? completion;
    const truth = firstAnswer(String(row.answer)) ?? String(row.answer).trim();
    const query = [{ role: 'user' as const, content: mllmAccuracyPrompt(predicted, truth) }];
    // max_tokens 512 as theirs; temperature 1, the OpenAI default their client leaves in place
    return chatCompletion(query, mllmAccuracyScore, { maxTokens: 512, temperature: 1 }, signal);
  };
  return [{ name: 'accuracy-mllm', reward, weight: 0.1 }];
}

/** The ReFine-RFT recipe: Med-R1's toy VLM and rows, the authors' rule rewards (and judge, when asked), MRN. */
export function refineRftRecipe(): Recipe {
  const base = medR1Recipe(true);
  const task = medR1Task(true);
  const accuracy: RewardFn = ({ completion, row }) => refineAccuracy(completion, String(row.answer));
  const rewards: NamedReward[] = [
    { name: 'format', reward: ({ completion }) => medR1Format(completion, true), weight: 1 },
    { name: 'accuracy', reward: accuracy, weight: 1 },
    { name: 'think-punishment', reward: ({ completion }) => thinkPunishment(completion), weight: 1 },
    ...mllmAccuracy(),
  ];
  const config = base.config as Record<string, Record<string, unknown>>;
  return {
    ...base,
    config: {
      ...config,
      sampling: { ...config.sampling, groupSize: 8 }, // num_generations 8
      algorithm: {
        ...config.algorithm,
        advantage: 'mrn', // Σ_k w_k (r_k − mean_g)/(std_g + 1e-4), mrpo_trainer.py
        advantageOptions: { epsilon: 1e-4 },
        klCoefficient: 0, // beta: 0.0
      },
    },
    task: { ...task, name: 'refine-rft-choice', rewards: () => rewards },
    rewards,
  };
}

export default refineRftRecipe() satisfies Recipe;
