/**
 * MATH-500 (the PRM800K split of hendrycks MATH): competition problems with LaTeX answers.
 * Columns: `problem` (the prompt), `answer` (the gold final answer), `solution` (a worked solution
 * ending in `\boxed{…}`), `subject`, `level`, `unique_id` (kept for rewards and logs).
 * Reward and correctness: `math-answer` (the completion's final answer — last `\boxed{}`, else
 * "the answer is", else the last number — equals `answer` by value).
 *
 * Is not: a training set (500 test problems; hold some out with `evalFraction` or bring your own).
 */
import { z } from 'zod';
import { mathAnswer, verifyMathAnswer } from '../../rewards/math.js';
import { parseTaskOptions, type Task } from '../task.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the math500 task (config `taskOptions`). */
export const math500OptionsSchema = z.object(fileTaskOptionsShape).strict();

const INSTRUCTION = 'Solve the math problem.';

const spec: FileTaskSpec = {
  name: 'math500',
  description: 'MATH-500 competition problems; reward: final \\boxed{} answer equals the gold answer by value',
  file: 'math500/test.jsonl',
  columns: { promptColumn: 'problem', answerColumn: 'answer' },
  systemPrompt: {
    plain: `${INSTRUCTION} Reason step by step, then put the final answer in \\boxed{}.`,
    think: `${INSTRUCTION} ${THINK_INSTRUCTION} Put the final answer in \\boxed{}.`,
  },
  rewards: () => [{ name: 'correct', reward: mathAnswer({ answerColumn: 'answer' }), weight: 1 }],
  isCorrect: (example, completion) => verifyMathAnswer(completion, String(example.answer)),
  // The reference solution already ends in \boxed{answer}; the R1 form repeats the answer in <answer>.
  solution: (example, style) =>
    style === 'think'
      ? { reasoning: String(example.solution), answer: `\\boxed{${String(example.answer)}}` }
      : { reasoning: '', answer: String(example.solution) },
};

/** The MATH-500 task over `<dataDirectory>/math500/test.jsonl` (or `trainFile`). */
export async function math500Task(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('math500', math500OptionsSchema, options));
}
