/**
 * MBPP (google-research, Mostly Basic Python Problems): a one-line task and three asserts per
 * problem. Columns: `text` (the task), `code` (the reference solution), `test_list` (asserts),
 * `test_setup_code`, `challenge_test_list`, `task_id`. The prompt is the task plus its asserts, as
 * in the MBPP paper, so the model knows the function name. Reward and correctness: `code-tests`
 * in the sandbox (fraction of `test_list` passed; correct = all).
 *
 * Is not: safe to run on a machine with secrets in world-readable files (see rewards/code/sandbox.ts).
 */
import { z } from 'zod';
import { codeTests } from '../../rewards/code.js';
import { rewardPasses } from '../dataset-task.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the mbpp task (config `taskOptions`). */
export const mbppOptionsSchema = z.object(fileTaskOptionsShape).strict();

const INSTRUCTION =
  'Write a Python function for the task. It must pass the given tests. Answer with the code in a ```python block.';

const tests = codeTests({ language: 'python', testsColumn: 'test_list', setupColumn: 'test_setup_code' });

function prepare(example: Example): Example {
  const asserts = example.test_list;
  if (!Array.isArray(asserts))
    throw new Error(`mbpp: row ${String(example.task_id)} has no test_list (a list of asserts)`);
  // The reference code uses Windows line ends and tabs; keep tabs (Python indentation), drop \r.
  return {
    ...example,
    prompt: `${String(example.text)}\nYour code should pass these tests:\n${asserts.join('\n')}`,
    code: String(example.code).replace(/\r\n/g, '\n'),
  };
}

const spec: FileTaskSpec = {
  name: 'mbpp',
  description: 'MBPP basic Python problems; reward: fraction of the asserts the code passes in the sandbox',
  file: 'mbpp/mbpp.jsonl',
  columns: { promptColumn: 'text' },
  prepare,
  systemPrompt: { plain: INSTRUCTION, think: `${INSTRUCTION} ${THINK_INSTRUCTION}` },
  rewards: () => [{ name: 'tests', reward: tests, weight: 1 }],
  isCorrect: (example, completion) => rewardPasses(tests, example, completion),
  solution: (example) => ({ reasoning: '', answer: `\`\`\`python\n${String(example.code)}\n\`\`\`` }),
};

/** The MBPP task over `<dataDirectory>/mbpp/mbpp.jsonl` (or `trainFile`). */
export async function mbppTask(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('mbpp', mbppOptionsSchema, options));
}
