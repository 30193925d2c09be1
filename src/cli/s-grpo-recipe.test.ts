/**
 * S-GRPO's recipe (#25, recipes/papers/s-grpo.ts) end to end through `grpo train` at a tiny size:
 * SFT, then two GRPO steps whose groups come from the recipe's serial early-exit rollout and are
 * scored by `s-grpo`. The groups written to samples.jsonl are checked against the paper's serial
 * group: the full completion last; before it, exits that keep a prefix of its thought no longer than
 * the thought, in non-decreasing order, then the inducer, then their own answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inProcessCli, tinyRunFlags } from '../../test/helpers/cli-in-process.js';

const root = new URL('../../', import.meta.url).pathname;
const recipe = join(root, 'recipes/papers/s-grpo.ts');
const { runs, grpo } = inProcessCli('grpo-s-grpo-');

interface Group {
  phase: string;
  completions: { text: string; advantage: number }[];
}

describe('recipes/papers/s-grpo.ts', () => {
  it('trains two GRPO steps of serial early-exit groups with s-grpo through grpo train', async () => {
    // groupSize stays the recipe's 16: 15 exits and the full completion.
    await grpo(
      'train',
      recipe,
      '--run-name',
      's-grpo',
      ...tinyRunFlags(runs, { 'sampling.groupSize': undefined, 'grpo.microBatchSize': 16 }),
    );
    const config = JSON.parse(readFileSync(join(runs, 's-grpo', 'config.json'), 'utf8'));
    expect(config.algorithm.advantage).toBe('s-grpo');
    const groups = readFileSync(join(runs, 's-grpo', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Group)
      .filter((group) => group.phase === 'grpo');
    expect(groups.length).toBeGreaterThanOrEqual(2);
    for (const group of groups) {
      expect(group.completions).toHaveLength(16);
      const full = group.completions.at(-1)!.text;
      const marker = full.indexOf('</think>');
      const thought = marker >= 0 ? marker : full.length;
      let previous = 0;
      for (const { text } of group.completions.slice(0, -1)) {
        const exit = text.indexOf('</think>\n'); // the inducer: the prefix before it never holds the marker
        expect(exit).toBeGreaterThanOrEqual(0);
        expect(full.startsWith(text.slice(0, exit))).toBe(true);
        expect(exit).toBeLessThanOrEqual(thought);
        expect(exit).toBeGreaterThanOrEqual(previous);
        previous = exit;
      }
      const advantages = group.completions.map((completion) => completion.advantage);
      expect(Math.abs(advantages.reduce((a, b) => a + b, 0))).toBeLessThan(1e-5); // A = r − mean(r)
    }
  });

  it("the teacher's thought holds the sum before its check, so an exit right after the sum is right", async () => {
    const { task, teacherThought } = await import(recipe);
    expect(teacherThought(37, 45)).toBe('7+5=12,3+4+1=8,82;82-45=37');
    for (const row of task.trainExamples(20, 1)) {
      const thought: string = teacherThought(row.a, row.b);
      expect(
        task.isCorrect(
          row,
          task.demonstration(row, () => 0),
        ),
      ).toBe(true);
      const early = `<think>${thought.slice(0, thought.indexOf(';'))}</think>\n${row.answer}`;
      expect(task.isCorrect(row, early)).toBe(true);
      expect(task.isCorrect(row, `<think>${thought}`)).toBe(false); // the thought never closed
    }
  });
});
