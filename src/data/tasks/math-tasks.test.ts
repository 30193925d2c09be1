/**
 * The gsm8k and math500 tasks on the real data (`../shared/data`): the reward scores each data
 * set's own reference solutions correct, the tasks' gold demonstrations (plain and R1 style) too,
 * and wrong answers 0; the split is disjoint and covers every row.
 */
import { describe, expect, it } from 'vitest';
import { makeRewardInput, type RewardFn } from '../../rewards/types.js';
import { taskRegistry } from '../index.js';
import type { Example, Task } from '../task.js';
import { sharedData } from '../../../test/helpers/fixtures.js';

const dataDirectory = sharedData;

/** Every example of a task: the whole train pool and the whole held-out pool. */
function allExamples(task: Task, rows: number): { train: Example[]; held: Example[] } {
  return { train: [...new Set(task.trainExamples(rows, 0))], held: [...new Set(task.evalExamples(rows, 0))] };
}

async function rate(
  examples: readonly Example[],
  check: (example: Example) => Promise<boolean> | boolean,
): Promise<number> {
  let passed = 0;
  for (const example of examples) if (await check(example)) passed++;
  return passed / examples.length;
}

const scoreWith = (task: Task) => async (example: Example, completion: string) => {
  const reward = task.rewards()[0]!.reward as RewardFn;
  return reward(makeRewardInput({ prompt: example.prompt, completion, row: example }));
};

describe.each([
  ['gsm8k', 1319, 'answer', 0.995],
  ['math500', 500, 'solution', 0.98],
])('%s over the real data', (name, rowCount, goldColumn, minimum) => {
  it(`every row is in exactly one split; the reward scores the data set's own ${goldColumn} ≥ ${minimum * 100}% and wrong answers 0`, async () => {
    const task = await taskRegistry.load(name, { dataDirectory });
    const { train, held } = allExamples(task, rowCount);
    expect(train.length + held.length).toBe(rowCount);
    expect(held.length).toBe(Math.round(rowCount * 0.1));
    expect(train.some((example) => held.includes(example))).toBe(false);
    const examples = [...train, ...held];
    const score = scoreWith(task);
    const goldRate = await rate(examples, async (example) => (await score(example, String(example[goldColumn]))) === 1);
    console.log(
      `${name}: reward on the data set's own ${goldColumn}: ${(goldRate * 100).toFixed(2)}% of ${examples.length}`,
    );
    expect(goldRate).toBeGreaterThanOrEqual(minimum);
    // A wrong final answer: 2|N| + 1 for GSM8K's N (not N + 1: the verifier's relative tolerance of
    // 1e-6 takes 1450001 for 1,450,000); for MATH an answer no problem has.
    const wrong = (example: Example) =>
      name === 'gsm8k'
        ? `#### ${Math.abs(Number(String(example.answer).split('####')[1]!.replace(/,/g, ''))) * 2 + 1}`
        : '\\boxed{\\frac{98765}{4321}}';
    expect(await rate(examples, async (example) => (await score(example, wrong(example))) !== 0)).toBe(0);
    expect(await rate(examples, (example) => task.isCorrect(example, wrong(example)))).toBe(0);
  });

  it.each(['plain', 'think'])(
    'the gold demonstrations in %s style are correct and use only the alphabet',
    async (style) => {
      const task = await taskRegistry.load(name, { dataDirectory, style });
      const { train, held } = allExamples(task, rowCount);
      const examples = [...train, ...held];
      const demonstrationRate = await rate(examples, (example) =>
        task.isCorrect(example, task.demonstration(example, Math.random)),
      );
      console.log(
        `${name} (${style}): gold demonstrations correct: ${(demonstrationRate * 100).toFixed(2)}% of ${examples.length}`,
      );
      expect(demonstrationRate).toBeGreaterThanOrEqual(minimum);
      const alphabet = new Set(task.alphabet);
      expect([...task.demonstration(examples[0]!, Math.random)].every((character) => alphabet.has(character))).toBe(
        true,
      );
      if (style === 'think') {
        expect(task.rewards().map((reward) => reward.name)).toEqual(['correct', 'format']);
        expect(task.demonstration(examples[0]!, Math.random)).toMatch(
          /^<think>\n[\s\S]+\n<\/think>\n<answer>\n[\s\S]+\n<\/answer>$/,
        );
      }
    },
  );
});

describe('file task options', () => {
  it('a missing data folder names the file; bad options name taskOptions.<key>; get() points to load()', async () => {
    await expect(taskRegistry.load('gsm8k', { dataDirectory: '/nonexistent' })).rejects.toThrow(
      /\/nonexistent\/gsm8k\/test\.jsonl/,
    );
    await expect(taskRegistry.load('gsm8k', { style: 'r1' })).rejects.toThrow(/taskOptions\.style/);
    await expect(taskRegistry.load('math500', { dataDirectory, colour: 1 })).rejects.toThrow(
      /taskOptions\.colour: not an option of task "math500"/,
    );
    expect(() => taskRegistry.get('gsm8k')).toThrow(/use taskRegistry\.load\("gsm8k", options\)/);
    expect((await taskRegistry.load('addition')).name).toBe('addition');
  });

  it('a system prompt goes with a text prompt as its own field; maxRows and evalFile are honoured', async () => {
    const task = await taskRegistry.load('gsm8k', {
      dataDirectory,
      maxRows: 20,
      systemPrompt: 'Be brief.',
      evalFile: `${dataDirectory}/gsm8k/test.jsonl`,
    });
    const [example] = task.trainExamples(1, 0);
    expect(typeof example!.prompt).toBe('string');
    expect(example!.system).toBe('Be brief.');
    expect(new Set(task.trainExamples(100, 0)).size).toBe(20);
    expect(task.evalExamples(5000, 0).length).toBe(20);
  });
});
