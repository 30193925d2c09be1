/** Tests of the dataset-backed Task: deterministic disjoint splits, seeded draws, rewards by name, correctness, option errors. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDatasetTask, splitExamples } from './dataset-task.js';
import { exampleMessages, exampleText } from './examples.js';
import { taskRegistry } from './index.js';
import type { Example } from './task.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-dataset-task-'));
const rows = Array.from({ length: 50 }, (_, i) => ({
  question: `What is ${i} + 1?`,
  answer: `${i} + 1 = ${i + 1}\n#### ${i + 1}`,
}));
const trainFile = join(directory, 'train.jsonl');
writeFileSync(trainFile, rows.map((row) => JSON.stringify(row)).join('\n'));
const options = { trainFile, promptColumn: 'question', rewards: [{ name: 'math-answer' }] };
const prompts = (examples: Example[]) => examples.map((example) => example.prompt);

describe('splitExamples', () => {
  const examples = rows.map((row) => ({ prompt: row.question }));
  it('holds out the fraction, disjoint from the rest, the same for a seed and different for another', () => {
    const split = splitExamples(examples, 0.2, 7);
    expect(split.eval.length).toBe(10);
    expect(split.train.length).toBe(40);
    expect(new Set([...prompts(split.train), ...prompts(split.eval)]).size).toBe(50);
    expect(splitExamples(examples, 0.2, 7)).toEqual(split);
    expect(prompts(splitExamples(examples, 0.2, 8).eval)).not.toEqual(prompts(split.eval));
  });

  it('always keeps at least one row on each side, and refuses a single row', () => {
    expect(splitExamples(examples.slice(0, 3), 0.01, 0).eval.length).toBe(1);
    expect(splitExamples(examples.slice(0, 3), 0.99, 0).train.length).toBe(1);
    expect(() => splitExamples(examples.slice(0, 1), 0.5, 0)).toThrow(/cannot hold out/);
  });
});

describe('loadDatasetTask', () => {
  it('draws train and held-out examples deterministically, never mixing them', async () => {
    const task = await loadDatasetTask({ ...options, evalFraction: 0.2, splitSeed: 3 });
    const held = new Set(prompts(task.evalExamples(100, 0)));
    expect(held.size).toBe(10); // capped at the held-out pool
    const train = task.trainExamples(120, 5); // more than the pool: repeated in fresh permutations
    expect(train.length).toBe(120);
    expect(train.some((example) => held.has(example.prompt))).toBe(false);
    expect(new Set(prompts(train)).size).toBe(40);
    expect(prompts(task.trainExamples(10, 5))).toEqual(prompts(train.slice(0, 10)));
    expect(prompts(task.trainExamples(10, 6))).not.toEqual(prompts(train.slice(0, 10)));
    expect(
      prompts((await loadDatasetTask({ ...options, evalFraction: 0.2, splitSeed: 3 })).evalExamples(10, 0)),
    ).toEqual(prompts(task.evalExamples(10, 0)));
  });

  it('uses an eval file when given; rewards by name; correctness from the first reward', async () => {
    const evalFile = join(directory, 'eval.csv');
    writeFileSync(evalFile, 'question,answer\nWhat is 100 + 1?,101\n');
    const task = await loadDatasetTask({
      ...options,
      evalFile,
      rewards: [
        { name: 'math-answer' },
        { name: 'length-budget', weight: 0, options: { budget: 40, unit: 'characters' } },
      ],
    });
    const [held] = task.evalExamples(5, 0);
    expect(held).toMatchObject({ prompt: 'What is 100 + 1?', answer: '101' });
    expect(task.trainExamples(50, 0).length).toBe(50);
    expect(task.rewards().map(({ name, weight }) => [name, weight])).toEqual([
      ['math-answer', 1],
      ['length-budget', 0],
    ]);
    expect(await task.isCorrect(held!, 'so #### 101')).toBe(true);
    expect(await task.isCorrect(held!, 'so #### 102')).toBe(false);
    expect(task.demonstration(held!, Math.random)).toBe('101'); // no completion column: the answer
    expect(task.alphabet).toContain('W');
  });

  it('a separate correctness reward with a threshold', async () => {
    const task = await loadDatasetTask({
      ...options,
      correctness: { name: 'length-budget', options: { budget: 5, unit: 'characters' }, threshold: 1 },
    });
    const [example] = task.evalExamples(1, 0);
    expect(await task.isCorrect(example!, 'short')).toBe(true);
    expect(await task.isCorrect(example!, 'far too long')).toBe(false);
  });

  it('bad options name taskOptions.<key>; an unknown reward lists the known ones; a bad row names its line', async () => {
    await expect(loadDatasetTask({ ...options, evalFraction: 1.5 })).rejects.toThrow(/taskOptions\.evalFraction/);
    await expect(loadDatasetTask({ ...options, colour: 'red' })).rejects.toThrow(/taskOptions\.colour: not an option/);
    await expect(loadDatasetTask({ ...options, rewards: [{ name: 'nope' }] })).rejects.toThrow(
      /Unknown reward "nope". Known rewards: math-answer/,
    );
    await expect(loadDatasetTask({ ...options, promptColumn: 'problem' })).rejects.toThrow(
      'train.jsonl line 1: no prompt — the row has no column "problem"',
    );
  });

  it('a conversational file keeps message-list prompts end to end (registered as task "dataset")', async () => {
    const chatFile = join(directory, 'chat.jsonl');
    const chatRows = Array.from({ length: 4 }, (_, i) => ({
      messages: [
        { role: 'user', content: `Add ${i} and 1` },
        { role: 'assistant', content: `#### ${i + 1}` },
      ],
      answer: String(i + 1),
    }));
    writeFileSync(chatFile, chatRows.map((row) => JSON.stringify(row)).join('\n'));
    const task = await taskRegistry.load('dataset', {
      trainFile: chatFile,
      systemPrompt: 'Answer after ####.',
      rewards: [{ name: 'math-answer' }],
    });
    const [example] = task.trainExamples(1, 0);
    expect(example!.prompt).toEqual([
      { role: 'system', content: 'Answer after ####.' },
      { role: 'user', content: expect.stringMatching(/^Add \d and 1$/) },
    ]);
    expect(exampleMessages(example!)).toBe(example!.prompt);
    expect(() => exampleText(example!)).toThrow(/chat template/);
    expect(task.demonstration(example!, Math.random)).toMatch(/^#### \d$/);
    expect(await task.isCorrect(example!, task.demonstration(example!, Math.random))).toBe(true);
    // String(messages) would bring "[object Object]" ('[', 'j'), JSON.stringify '{' and '"'; the contents have none.
    expect(task.alphabet).not.toMatch(/[[\]{}"j]/);
    expect(task.alphabet).toContain('#');
    expect(task.alphabet).toContain('A');
  });
});
