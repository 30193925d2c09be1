/**
 * The mbpp and humaneval tasks on the real data (`../shared/data`): in the sandbox, the data
 * sets' canonical solutions (the tasks' gold demonstrations) pass their tests, and a wrong
 * solution passes none. Sandbox runs cost ~0.1 s each on a shared 2-core machine, so this runs a
 * fixed, seeded sample of each set (60 problems, 30 in R1 style; GRPO_CODE_TASK_SAMPLE=974 runs all),
 * four sandboxes at a time.
 */
import { describe, expect, it } from 'vitest';
import { makeRewardInput, type RewardFn } from '../../rewards/types.js';
import { taskRegistry } from '../index.js';
import type { Example, Task } from '../task.js';
import { sharedData } from '../../../test/helpers/fixtures.js';

const dataDirectory = sharedData;
const SAMPLE = Number(process.env.GRPO_CODE_TASK_SAMPLE ?? 60);

/** Runs `check` over the examples, `width` at a time (a new one starts as soon as one ends), and counts the trues. */
async function countPassing(
  examples: readonly Example[],
  check: (example: Example) => Promise<boolean>,
  width = 4,
): Promise<number> {
  let passed = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < examples.length) if (await check(examples[next++]!)) passed++;
  };
  await Promise.all(Array.from({ length: width }, worker));
  return passed;
}

function sampleOf(task: Task, rows: number): Example[] {
  const all = [...new Set(task.trainExamples(rows, 0)), ...new Set(task.evalExamples(rows, 0))];
  expect(all.length).toBe(rows);
  return task.trainExamples(Math.min(SAMPLE, rows), 1);
}

describe.each([
  ['humaneval', 164, 'return None'],
  ['mbpp', 974, 'return None'],
])('%s over the real data', (name, rows, wrongBody) => {
  it.each(['plain', 'think'])(
    `canonical solutions in %s style pass ≥ 98% of a sample; a wrong solution passes no test`,
    async (style) => {
      const task = await taskRegistry.load(name, { dataDirectory, style });
      const examples = style === 'plain' ? sampleOf(task, rows) : task.trainExamples(Math.min(SAMPLE, rows) / 2, 2);
      const passed = await countPassing(examples, async (example) =>
        task.isCorrect(example, task.demonstration(example, Math.random)),
      );
      console.log(`${name} (${style}): canonical solutions correct: ${passed}/${examples.length}`);
      expect(passed / examples.length).toBeGreaterThanOrEqual(0.98);
      const reward = task.rewards()[0]!.reward as RewardFn;
      // The tested function, defined with the right name, returning nothing useful.
      const wrong = (example: Example) => {
        if (name === 'humaneval') return `    ${wrongBody}\n`;
        const tested = [...String(example.code).matchAll(/def (\w+)/g)]
          .map((match) => match[1]!)
          .find((defined) => String((example.test_list as string[])[0]).includes(`${defined}(`));
        if (tested === undefined) throw new Error(`no tested function found in ${String(example.task_id)}`);
        return `\`\`\`python\ndef ${tested}(*args, **kwargs):\n    ${wrongBody}\n\`\`\``;
      };
      const scores = await Promise.all(
        examples
          .slice(0, 8)
          .map(async (example) => reward(makeRewardInput({ completion: wrong(example), row: example }))),
      );
      expect(scores).toEqual(scores.map(() => 0));
    },
    120_000,
  );
});
