/**
 * The Game of 24 (princeton-nlp/tree-of-thought-llm `24.csv`): make 24 from four numbers with
 * + − × ÷ and parentheses, each number exactly once. Columns: `Rank`, `Puzzles` ("1 1 4 6"),
 * `AMT (s)`, `Solved rate`, …; derived: `numbers`, `target` (24), `solution`.
 * Reward and correctness: `equation`, as Countdown. Gold demonstrations come from the brute-force
 * solver; a puzzle it cannot solve is dropped at load.
 *
 * Is not: the Tree-of-Thoughts search; the rows are sorted by human difficulty (`Rank`), so a
 * seeded split, not the file order, picks the held-out puzzles.
 */
import { z } from 'zod';
import { equationAnswer } from '../../rewards/equation.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';
import { solveArithmetic } from './arithmetic-solver.js';
import { EQUATION_INSTRUCTION, equationCorrect, equationSolution } from './countdown.js';
import { fileTaskOptionsShape, loadFileTask, THINK_INSTRUCTION, type FileTaskSpec } from './file-task.js';

/** Options of the game24 task (config `taskOptions`). */
export const game24OptionsSchema = z.object(fileTaskOptionsShape).strict();

function prepare(example: Example): Example | null {
  const numbers = String(example.Puzzles).trim().split(/\s+/).map(Number);
  const solution = solveArithmetic(numbers, 24);
  if (solution === null) return null;
  return { ...example, prompt: `Numbers: ${numbers.join(', ')}. Target: 24.`, numbers, target: 24, solution };
}

const spec: FileTaskSpec = {
  name: 'game24',
  description: 'Game of 24: make 24 from four numbers with + - * / (each once); reward: the equation checks',
  file: 'game24/24.csv',
  columns: { promptColumn: 'Puzzles' },
  prepare,
  systemPrompt: {
    plain: `${EQUATION_INSTRUCTION} Give the equation on the last line.`,
    think: `${EQUATION_INSTRUCTION} ${THINK_INSTRUCTION}`,
  },
  rewards: () => [
    { name: 'correct', reward: equationAnswer({ numbersColumn: 'numbers', targetColumn: 'target' }), weight: 1 },
  ],
  isCorrect: equationCorrect,
  solution: equationSolution,
};

/** The Game-of-24 task over `<dataDirectory>/game24/24.csv` (or `trainFile`). */
export async function game24Task(options: unknown = {}): Promise<Task> {
  return loadFileTask(spec, parseTaskOptions('game24', game24OptionsSchema, options));
}
