/*
 * The typed reward's compiling and scoring (reward-function.ts), in Node: each problem is one
 * sentence naming the completion; null and NaN leave a completion out; async rewards are awaited.
 */
import { describe, expect, it } from 'vitest';
import { compileReward, scoreCompletions, type TypedRewardInput } from './reward-function.js';

const input = (completion: string): TypedRewardInput => ({
  prompt: 'One day, a happy',
  completion,
  row: { prompt: 'One day, a happy', answer: '' },
  group: [completion],
  indexInGroup: 0,
  step: 0,
  truncated: false,
});

describe('compileReward', () => {
  it('compiles an arrow or a function expression', async () => {
    expect(await scoreCompletions(compileReward('({ completion }) => completion.length'), [input('dog')])).toEqual([3]);
    expect(await scoreCompletions(compileReward('function reward(x) { return x.step + 1 }'), [input('')])).toEqual([1]);
  });

  it('compiles TypeScript: annotations, an interface, `as` and generics are stripped, not checked', async () => {
    const typed = [
      'interface Input { completion: string; step: number }',
      '(({ completion, step }: Input): number => (completion as string).length + step) satisfies (x: Input) => number',
    ].join('\n');
    expect(await scoreCompletions(compileReward(typed), [input('dog')])).toEqual([3]);
    const generic =
      'function reward<T extends { completion: string }>(x: T): number { return x.completion === "a" ? 1 : 0 }';
    expect(await scoreCompletions(compileReward(generic), [input('a'), input('b')])).toEqual([1, 0]);
    // A type error is not this box's business (nothing checks types), a syntax error is, with its place.
    expect(() => compileReward('({ completion }: Input) => completion.length +')).toThrow(
      /^the reward does not compile as JavaScript \(.+\) nor as TypeScript \(.*\(1:\d+\)\)$/,
    );
  });

  it('refuses an empty box, a syntax error and a value that is not a function, each in one sentence', () => {
    expect(() => compileReward('  ')).toThrow(/^the reward box is empty: write a function such as /);
    expect(() => compileReward('({ completion }) => completion.length +')).toThrow(/^the reward does not compile as /);
    expect(() => compileReward('42')).toThrow(/^the reward box must hold a function such as .*, not a number$/);
    // Two statements are not one expression: refused by the parser, not run.
    expect(() => compileReward('globalThis.ran = 1; () => 0')).toThrow(/^the reward does not compile/);
    expect((globalThis as { ran?: number }).ran).toBeUndefined();
  });
});

describe('scoreCompletions', () => {
  it('stops at a reward that throws, naming the completion', async () => {
    const reward = compileReward('({ completion }) => { if (completion === "b") throw new Error("no dog"); return 1 }');
    await expect(scoreCompletions(reward, [input('a'), input('b')])).rejects.toThrow(
      'the reward threw on completion 2 of 2 ("b"): no dog',
    );
  });

  it('stops at a value that is not a finite number', async () => {
    await expect(scoreCompletions(compileReward('() => "1"'), [input('a')])).rejects.toThrow(
      'the reward returned a string for completion 1 of 1 ("a"); it must return a finite number (or null to leave the completion out)',
    );
    await expect(scoreCompletions(compileReward('() => Infinity'), [input('a')])).rejects.toThrow(
      /^the reward returned Infinity for completion 1 of 1/,
    );
  });

  it('leaves out null, undefined and NaN, and awaits an async reward', async () => {
    const reward = compileReward('async ({ completion }) => ({ a: null, b: NaN, c: undefined })[completion] ?? 0.5');
    expect(await scoreCompletions(reward, [input('a'), input('b'), input('d')])).toEqual([0.5, null, 0.5]);
    const nulls = compileReward('({ completion }) => (completion === "a" ? null : NaN)');
    expect(await scoreCompletions(nulls, [input('a'), input('b')])).toEqual([null, null]);
  });
});
