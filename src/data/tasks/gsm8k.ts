/**
 * GSM8K (openai/grade-school-math): grade-school word problems whose reference solutions end in
 * `#### N`. Columns: `question` (the prompt), `answer` (the worked solution, gold answer after ####).
 * Reward and correctness: `math-answer` (the completion's final number equals N by value).
 *
 * The gold demonstration is the reference solution with its calculator annotations `<<48/2=24>>`
 * removed (they are tool calls in the original, noise for a model that has no calculator).
 * Is not: the GSM8K training split unless you point `trainFile` at it; the shared data has the test set.
 */
import { z } from 'zod';
import { goldAnswer, mathAnswer, verifyMathAnswer } from '../../rewards/math.js';
import { parseTaskOptions, type Task } from '../task.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the gsm8k task (config `taskOptions`). */
export const gsm8kOptionsSchema = z.object(fileTaskOptionsShape).strict();

const INSTRUCTION = 'Solve the math word problem.';

/** The reasoning of a GSM8K solution: the text before `####`, calculator annotations removed. */
export function gsm8kReasoning(solution: string): string {
  return solution
    .replace(/####[\s\S]*$/, '')
    .replace(/<<[^>]*>>/g, '')
    .trim();
}

const spec: FileTaskSpec = {
  name: 'gsm8k',
  description: 'GSM8K grade-school math word problems; reward: final answer equals the #### number',
  file: 'gsm8k/test.jsonl',
  columns: { promptColumn: 'question', answerColumn: 'answer' },
  systemPrompt: {
    plain: `${INSTRUCTION} Reason step by step, then write the final answer as a number on the last line after "####".`,
    think: `${INSTRUCTION} ${THINK_INSTRUCTION}`,
  },
  rewards: () => [{ name: 'correct', reward: mathAnswer({ answerColumn: 'answer' }), weight: 1 }],
  isCorrect: (example, completion) => verifyMathAnswer(completion, String(example.answer)),
  solution: (example, style) => {
    const solution = String(example.answer);
    return {
      reasoning: gsm8kReasoning(solution),
      answer: style === 'think' ? goldAnswer(solution) : `#### ${goldAnswer(solution)}`,
    };
  },
};

/** The GSM8K task over `<dataDirectory>/gsm8k/test.jsonl` (or `trainFile`). */
export async function gsm8kTask(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('gsm8k', gsm8kOptionsSchema, options));
}
