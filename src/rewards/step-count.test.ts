/**
 * Tests of `step-count` (PROF #126): the steps the authors' PRM input gets from a response
 * (`[s.strip() for s in text.strip().split('\n\n') if s.strip()]`, one step when none, at most
 * max_steps), as a case table, and its registration by name.
 */
import { describe, expect, it } from 'vitest';
import { rewardFactories } from './factories.js';
import { stepCount } from './step-count.js';
import { makeRewardInput } from './types.js';

const count = (completion: string, maxSteps?: number) =>
  stepCount({ maxSteps })(makeRewardInput({ completion, row: {} }));

describe('step-count', () => {
  it.each([
    ['a\n\nb\n\nc', 3], // three blank-line separated steps
    ['a\nb\nc', 1], // single newlines do not separate steps
    ['a\n\n\n\nb', 2], // an empty piece between two separators is dropped
    ['a\n\n  \n\nb', 2], // so is a piece of spaces only
    ['\n\na\n\nb\n\n', 2], // leading and trailing separators are trimmed away first
    ['a\n\n\nb', 2], // "\n\n" then "\nb": the second piece is trimmed to "b"
    ['', 1], // no piece: the whole (empty) response is one step
    ['   ', 1], // likewise
  ])('%j has %i steps', (completion, steps) => {
    expect(count(completion)).toBe(steps);
  });
  it('counts at most maxSteps (the PRM scores no step after its 100th)', () => {
    const long = Array.from({ length: 120 }, (_, k) => `step ${k}`).join('\n\n');
    expect(count(long)).toBe(100);
    expect(count(long, 30)).toBe(30);
  });
  it('is a built-in reward by name, with strict options', () => {
    const reward = rewardFactories.get('step-count').create({ maxSteps: 2 });
    expect(typeof reward === 'function' && reward(makeRewardInput({ completion: 'a\n\nb\n\nc', row: {} }))).toBe(2);
    expect(() => rewardFactories.get('step-count').create({ max: 2 })).toThrow(/reward "step-count": bad options/);
  });
});
