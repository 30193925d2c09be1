/**
 * Med-R1's recipes (#55, recipes/papers/med-r1.ts and med-r1-nothink.ts): the rewards as the authors'
 * grpo_vqa.py / grpo_vqa_nothink.py (`accuracy_reward`, `format_reward`), the multiple-choice rows and
 * their demonstrations, and SFT then GRPO through `grpo train` at a tiny size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { medR1Accuracy, medR1Format, medR1Recipe, medR1Task } from '../../recipes/papers/med-r1.js';
import { runTrainCommand } from './train-command.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-med-r1-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('Med-R1 rewards', () => {
  it('accuracy_reward: first one-line <answer> of completion and solution, stripped, equal', () => {
    const solution = '<answer> B </answer>'; // as their Splits/*.json
    expect(medR1Accuracy('<think>3 red squares</think><answer>B</answer>', solution)).toBe(1);
    expect(medR1Accuracy('<think>x</think><answer>C</answer>', solution)).toBe(0);
    expect(medR1Accuracy('<answer>A</answer><answer>B</answer>', solution)).toBe(0); // the first answer counts
    expect(medR1Accuracy('<answer>\nB</answer>', solution)).toBe(0); // one line: no match, the whole text ≠ B
    expect(medR1Accuracy(' B ', solution)).toBe(1); // untagged: the whole completion, stripped
    expect(medR1Accuracy('B', 'B')).toBe(1); // an untagged solution: the whole solution
    expect(medR1Accuracy('<answer>b</answer>', solution)).toBe(0); // case matters
  });

  it('accuracy_reward: Math-Verify first, so an equal number in another form counts', () => {
    expect(medR1Accuracy('the answer is 0.5', '1/2')).toBe(1);
    expect(medR1Accuracy('the answer is 0.6', '1/2')).toBe(0);
  });

  it('format_reward: think then answer (thinking) or the answer alone (No-Thinking), fullmatch', () => {
    expect(medR1Format('<think>1</think><answer>A</answer>', true)).toBe(1);
    expect(medR1Format('<think>a\nb</think>\n <answer>\nA</answer>', true)).toBe(1); // DOTALL, \s* between
    expect(medR1Format('<answer>A</answer>', true)).toBe(0);
    expect(medR1Format('<think>1</think><answer>A</answer>.', true)).toBe(0);
    expect(medR1Format(' \n<answer>A</answer>', false)).toBe(1); // leading \s* allowed
    expect(medR1Format('<think>1</think><answer>A</answer>', false)).toBe(0);
    expect(medR1Format('<answer>A</answer> ', false)).toBe(0);
  });

  it('rows: four distinct count options, the truth and the shape-blind count among them, the template after', () => {
    for (const think of [true, false]) {
      const task = medR1Task(think);
      for (const row of [...task.trainExamples(40, 3), ...task.evalExamples(10, 3)]) {
        const listed = [...String(row.prompt).matchAll(/([A-D])\)(\d)/g)].map((match) => Number(match[2]));
        expect(new Set(listed).size).toBe(4);
        expect(listed).toContain(row.count);
        expect(listed).toContain(row.shapeBlindCount);
        const letter = /<answer> ([A-D]) <\/answer>/.exec(String(row.answer))?.[1];
        expect(listed['ABCD'.indexOf(String(letter))]).toBe(row.count);
        expect(String(row.prompt)).toMatch(think ? /Think in <think>/ : /nothing else\.$/);
      }
    }
    const task = medR1Task(true);
    const rows = task.trainExamples(40, 3);
    const blind = rows.find((row) => row.count !== row.shapeBlindCount);
    expect(blind).toBeDefined();
    if (!blind) return;
    // The shape-blind teacher (draw below its rate) answers its own count's letter: a wrong answer.
    const wrong = task.demonstration(blind, () => 0);
    expect(wrong).toMatch(new RegExp(`^<think>${String(blind.shapeBlindCount)}</think><answer>[A-D]</answer>$`));
    expect(task.isCorrect(blind, wrong)).toBe(false);
    const right = task.demonstration(blind, () => 0.99);
    expect(task.isCorrect(blind, right)).toBe(true);
    expect(medR1Task(false).demonstration(blind, () => 0.99)).toMatch(/^<answer>[A-D]<\/answer>$/);
  });

  it('every character of a demonstration is in the task alphabet (the tokenizer drops others)', () => {
    for (const think of [true, false]) {
      const task = medR1Task(think);
      const alphabet = new Set(task.alphabet);
      for (const row of task.trainExamples(50, 5))
        for (const draw of [0, 0.99])
          for (const character of task.demonstration(row, () => draw)) expect(alphabet.has(character)).toBe(true);
    }
  });

  it('every demonstration and its stop token fit the recipe sampling.maxNewTokens (a character per token)', () => {
    for (const think of [true, false]) {
      const recipe = medR1Recipe(think);
      const task = medR1Task(think);
      for (const row of task.trainExamples(50, 5))
        for (const draw of [0, 0.99])
          expect(task.demonstration(row, () => draw).length + 1).toBeLessThanOrEqual(
            (recipe.config as { sampling: { maxNewTokens: number } }).sampling.maxNewTokens,
          );
    }
  });

  it.each([
    ['recipes/papers/med-r1.ts', 'med-r1-choice'],
    ['recipes/papers/med-r1-nothink.ts', 'med-r1-choice-nothink'],
  ])(
    '%s trains through grpo train: SFT, then GRPO on accuracy + format',
    async (recipe, taskName) => {
      const set = [
        'sft.steps=2',
        'sft.batchSize=4',
        'grpo.steps=2',
        'grpo.promptsPerStep=2',
        'grpo.microBatchSize=8',
        'evaluation.examples=2',
        'evaluation.every=0',
        `logging.runsDirectory=${JSON.stringify(scratch)}`,
      ];
      expect(await runTrainCommand({ recipe, set, runName: taskName, quiet: true })).toBe(0);
      const run = join(scratch, taskName);
      expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')).status).toBe('finished');
      const config = JSON.parse(readFileSync(join(run, 'config.json'), 'utf8'));
      expect(config).toMatchObject({
        task: taskName,
        sampling: { groupSize: 4 },
        algorithm: { klCoefficient: 0.04, aggregation: 'seq-mean-token-mean', advantageOptions: { epsilon: 1e-4 } },
      });
      const lines = readFileSync(join(run, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.filter((line) => 'reward/accuracy/mean' in line && 'reward/format/mean' in line).length).toBe(2);
    },
    180_000,
  );
});
