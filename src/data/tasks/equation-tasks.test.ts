/**
 * The countdown and game24 tasks on the real data (`../shared/data`): solutions built by this
 * test's own brute-force solver (floating point over every bracketing of every ordering, then
 * checked exactly by the reward) score 1 on every solvable puzzle, the tasks' gold demonstrations
 * score 1, and wrong equations 0.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeRewardInput, type RewardFn } from '../../rewards/types.js';
import { taskRegistry } from '../index.js';
import type { Example, Task } from '../task.js';
import { sharedData } from '../../../test/helpers/fixtures.js';

const dataDirectory = sharedData;

/** Every expression over `numbers` (each once) as [value, text]; floating point, so the reward's exact check decides. */
function expressions(numbers: number[]): Array<[number, string]> {
  if (numbers.length === 1) return [[numbers[0]!, String(numbers[0])]];
  const results: Array<[number, string]> = [];
  // Split the numbers into two non-empty groups by bitmask; each side is any expression of its group.
  for (let mask = 1; mask < (1 << numbers.length) - 1; mask++) {
    const left = numbers.filter((_, i) => mask & (1 << i));
    const right = numbers.filter((_, i) => !(mask & (1 << i)));
    for (const [a, textA] of expressions(left)) {
      for (const [b, textB] of expressions(right)) {
        results.push(
          [a + b, `(${textA} + ${textB})`],
          [a - b, `(${textA} - ${textB})`],
          [a * b, `(${textA} * ${textB})`],
        );
        if (b !== 0) results.push([a / b, `(${textA} / ${textB})`]);
      }
    }
  }
  return results;
}

const solve = (numbers: number[], target: number): string | null =>
  expressions(numbers).find(([value]) => Math.abs(value - target) < 1e-9)?.[1] ?? null;

function allExamples(task: Task, rows: number): Example[] {
  return [...new Set(task.trainExamples(rows, 0)), ...new Set(task.evalExamples(rows, 0))];
}

describe.each([
  [
    'countdown',
    'countdown/countdown_cd3_test.jsonl',
    (line: string) => JSON.parse(line) as { input: string },
    (row: { input: string }) => row.input.split(',').map(Number),
  ],
  [
    'game24',
    'game24/24.csv',
    (line: string) => ({ input: line.split(',')[1]! }),
    (row: { input: string }) => row.input.split(' ').map(Number),
  ],
] as const)('%s over the real data', (name, file, parseLine, numbersOf) => {
  const lines = readFileSync(`${dataDirectory}/${file}`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(name === 'game24' ? 1 : 0);

  it("the test solver's solutions score 1 on every solvable puzzle; the task keeps exactly the solvable ones", async () => {
    const task = await taskRegistry.load(name, { dataDirectory });
    const examples = allExamples(task, lines.length);
    const reward = task.rewards()[0]!.reward as RewardFn;
    const solvable = lines.filter((line) => {
      const numbers = numbersOf(parseLine(line));
      return solve(numbers, name === 'game24' ? 24 : Number(JSON.parse(line).output)) !== null;
    }).length;
    console.log(
      `${name}: ${lines.length} puzzles, ${solvable} solvable with every number once, ${examples.length} kept by the task`,
    );
    expect(examples.length).toBe(solvable);
    let correct = 0;
    for (const example of examples) {
      const solution = solve(example.numbers as number[], example.target as number)!;
      if (
        (await reward(makeRewardInput({ completion: `${solution} = ${String(example.target)}`, row: example }))) === 1
      )
        correct++;
    }
    console.log(`${name}: test-solver solutions scored correct: ${correct}/${examples.length}`);
    expect(correct).toBe(examples.length);
  });

  it.each(['plain', 'think'])(
    'gold demonstrations in %s style are all correct; wrong equations score 0',
    async (style) => {
      const task = await taskRegistry.load(name, { dataDirectory, style });
      const examples = allExamples(task, lines.length);
      let demonstrations = 0;
      let wrong = 0;
      for (const example of examples) {
        if (await task.isCorrect(example, task.demonstration(example, Math.random))) demonstrations++;
        const numbers = example.numbers as number[];
        // Adding every number is wrong unless the sum happens to be the target; dropping a number is always wrong.
        const sum = numbers.join(' + ');
        if (numbers.reduce((a, b) => a + b) !== example.target && (await task.isCorrect(example, sum))) wrong++;
        if (await task.isCorrect(example, `${numbers.slice(1).join(' * ')} = ${String(example.target)}`)) wrong++;
      }
      console.log(`${name} (${style}): gold demonstrations correct: ${demonstrations}/${examples.length}`);
      expect(demonstrations).toBe(examples.length);
      expect(wrong).toBe(0);
      expect(task.demonstration(examples[0]!, Math.random)).toMatch(
        style === 'think' ? /^<think>\n.+ = \d+\n<\/think>\n<answer>\n.+\n<\/answer>$/ : /^[\d ()+\-*/]+ = \d+$/,
      );
    },
  );
});
