/**
 * HumanEval (openai/human-eval): complete a Python function from its signature and docstring.
 * Columns: `task_id`, `prompt` (the code so far — also the prompt here), `canonical_solution`
 * (the reference body), `test` (a `check(candidate)` function), `entry_point`; derived: `tests`
 * (the check called on the entry point) and `prefix` (the original code prompt). Reward and
 * correctness: `code-tests` with `prefix` prepended to the completion's code, so a completion may
 * be just the body (plain continuation) or a whole function in a ```python block.
 *
 * Is not: a training set (164 problems); the gold demonstration is the canonical body, unexplained.
 */
import { z } from 'zod';
import { codeTests, humanEvalRow } from '../../rewards/code.js';
import { rewardPasses } from '../dataset-task.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the humaneval task (config `taskOptions`). */
export const humanevalOptionsSchema = z.object(fileTaskOptionsShape).strict();

const INSTRUCTION = 'Complete the Python function.';

const tests = codeTests({ language: 'python', testsColumn: 'tests', prefixColumn: 'prefix' });

function prepare(example: Example): Example {
  if (typeof example.prompt !== 'string')
    throw new Error(
      `humaneval: row ${String(example.task_id)} has a message-list prompt; the prompt must be the code to complete`,
    );
  const row = humanEvalRow({
    prompt: example.prompt,
    test: String(example.test),
    entry_point: String(example.entry_point),
  });
  return { ...example, prefix: row.prompt, tests: row.tests };
}

const spec: FileTaskSpec = {
  name: 'humaneval',
  description: 'HumanEval Python function completion; reward: the check() tests pass in the sandbox',
  file: 'humaneval/HumanEval.jsonl.gz',
  columns: { promptColumn: 'prompt' },
  prepare,
  systemPrompt: {
    plain: `${INSTRUCTION} Continue the code with the function body.`,
    think: `${INSTRUCTION} ${THINK_INSTRUCTION} Inside <answer>, give the whole function in a \`\`\`python block.`,
  },
  rewards: () => [{ name: 'tests', reward: tests, weight: 1 }],
  isCorrect: (example, completion) => rewardPasses(tests, example, completion),
  // Plain: the body continues the prompt. R1 style: the whole function (it replaces the prefix's stub).
  solution: (example, style) =>
    style === 'think'
      ? { reasoning: '', answer: `\`\`\`python\n${String(example.prefix)}${String(example.canonical_solution)}\`\`\`` }
      : { reasoning: '', answer: String(example.canonical_solution) },
};

/** The HumanEval task over `<dataDirectory>/humaneval/HumanEval.jsonl.gz` (or `trainFile`). */
export async function humanevalTask(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('humaneval', humanevalOptionsSchema, options));
}
