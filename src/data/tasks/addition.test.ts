/*
 * The addition task's options: the zod schema refuses unknown and ill-typed `taskOptions` with a
 * message naming the field and listing the known options, both through the registry (what a
 * config reaches) and when the factory is called from code. The generated problems cover the
 * grid (both parities of each operand and of the sum: an earlier generator made every sum odd).
 * The task's learning behaviour is covered by the trainer tests.
 */
import { describe, expect, it } from 'vitest';
import { taskRegistry } from '../index.js';
import { additionTask, withoutCarry } from './addition.js';

describe('addition taskOptions', () => {
  it.each([
    // [options, the field named in the error]
    [{ bogus: 1 }, 'taskOptions.bogus: not an option of task "addition"'], // unknown key
    [{ teacherCarryErrorRate: 'abc' }, 'taskOptions.teacherCarryErrorRate: '], // wrong type
    [{ teacherCarryErrorRate: 1.5 }, 'taskOptions.teacherCarryErrorRate: '], // a rate above 1
    [5, 'taskOptions: '], // not an object at all
  ])('refuses %j naming the field and listing the known options', (options, field) => {
    const create = () => taskRegistry.get('addition')(options as Record<string, unknown>);
    expect(create).toThrow(field);
    expect(create).toThrow('known options of task "addition": teacherCarryErrorRate');
  });

  it('accepts a valid rate and uses it for the demonstrations', () => {
    const alwaysWrong = additionTask({ teacherCarryErrorRate: 1 });
    const carry = { prompt: '19+19=', answer: '38', a: 19, b: 19 }; // 9 + 9 needs a carry
    expect(alwaysWrong.demonstration(carry, () => 0.5)).toBe(withoutCarry(19, 19));
    expect(additionTask({ teacherCarryErrorRate: 0 }).demonstration(carry, () => 0.5)).toBe('38');
  });
});

describe('the generated problems', () => {
  it('cover both parities of each operand and of the sum, in the training and the held-out split', () => {
    const task = additionTask();
    for (const examples of [task.trainExamples(400, 0), task.evalExamples(200, 0), task.trainExamples(400, 7)]) {
      const parities = (pick: (example: (typeof examples)[number]) => number) =>
        new Set(examples.map((example) => pick(example) % 2));
      expect(parities((example) => Number(example.a))).toEqual(new Set([0, 1]));
      expect(parities((example) => Number(example.b))).toEqual(new Set([0, 1]));
      expect(parities((example) => Number(example.answer))).toEqual(new Set([0, 1]));
      // every tens digit of each operand, and pairs spread over the 90 × 90 grid
      expect(new Set(examples.map((example) => Math.floor(Number(example.a) / 10))).size).toBe(9);
      expect(new Set(examples.map((example) => example.prompt)).size).toBeGreaterThan(examples.length * 0.9);
    }
  });
});
