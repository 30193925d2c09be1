/**
 * Countdown (the 3-number test set of dllm-reasoning/d1, as in TinyZero): reach a target from
 * three numbers with + − × ÷ and parentheses, each number used exactly once. Columns: `input`
 * ("30,100,93"), `output` (the target, "23"); derived: `numbers`, `target`, `solution`.
 * Reward and correctness: `equation`. Gold demonstrations come from a brute-force solver; a puzzle
 * it cannot solve with every number once is dropped at load.
 *
 * Is not: the countdown training generator of TinyZero (only the shared test file is read).
 */
import { z } from 'zod';
import { equationAnswer } from '../../rewards/equation.js';
import { makeRewardInput } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';
import { solveArithmetic } from './arithmetic-solver.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the countdown task (config `taskOptions`). */
export const countdownOptionsSchema = z.object(fileTaskOptionsShape).strict();

export const EQUATION_INSTRUCTION =
  'Write an equation that uses each given number exactly once, with only + - * / and parentheses, and equals the target.';

const equation = equationAnswer({ numbersColumn: 'numbers', targetColumn: 'target' });

/** 1/0 from the equation reward, for `isCorrect`. */
export const equationCorrect = async (example: Example, completion: string): Promise<boolean> =>
  (await equation(makeRewardInput({ completion, row: example }))) === 1;

/** An equation task's gold solution: the solver's expression, as "expr = target" in plain style. */
export function equationSolution(example: Example, style: 'plain' | 'think'): { reasoning: string; answer: string } {
  const statement = `${String(example.solution)} = ${String(example.target)}`;
  return style === 'think'
    ? { reasoning: statement, answer: String(example.solution) }
    : { reasoning: '', answer: statement };
}

function prepare(example: Example): Example | null {
  const numbers = String(example.input).split(',').map(Number);
  const target = Number(example.output);
  const solution = solveArithmetic(numbers, target);
  if (solution === null) return null;
  return { ...example, prompt: `Numbers: ${numbers.join(', ')}. Target: ${target}.`, numbers, target, solution };
}

const spec: FileTaskSpec = {
  name: 'countdown',
  description: 'Countdown: reach the target from three numbers with + - * / (each once); reward: the equation checks',
  file: 'countdown/countdown_cd3_test.jsonl',
  columns: { promptColumn: 'input' },
  prepare,
  systemPrompt: {
    plain: `${EQUATION_INSTRUCTION} Give the equation on the last line.`,
    think: `${EQUATION_INSTRUCTION} ${THINK_INSTRUCTION}`,
  },
  rewards: () => [{ name: 'correct', reward: equation, weight: 1 }],
  isCorrect: equationCorrect,
  solution: equationSolution,
};

/** The Countdown task over `<dataDirectory>/countdown/countdown_cd3_test.jsonl` (or `trainFile`). */
export async function countdownTask(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('countdown', countdownOptionsSchema, options));
}
