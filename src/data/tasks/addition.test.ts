/*
 * The addition task's options: the zod schema refuses unknown and ill-typed `taskOptions` with a
 * message naming the field and listing the known options, both through the registry (what a
 * config reaches) and when the factory is called from code. The task's behaviour is covered by
 * the trainer tests.
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
