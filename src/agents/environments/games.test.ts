/**
 * Tests of the built-in environments that run locally: the guess-the-number game (feedback, state
 * keys, rewards, limits, row checks) and the tool-use environment.
 */
import { describe, expect, it } from 'vitest';
import { calculatorTool } from '../tools/calculator.js';
import type { Episode } from '../types.js';
import { guessNumberEnvironment } from './guess-number.js';
import { toolUseEnvironment } from './tool-use.js';

const context = { seed: 1, episodeIndex: 0 };

describe('guessNumberEnvironment', () => {
  it('answers higher/lower, narrows the state key, scores 1 when solved', async () => {
    const game = await guessNumberEnvironment()({ target: 37 }, context);
    expect(game.stateKey!()).toBe('1..100');
    expect(await game.respond!('I guess 50')).toEqual({ observation: '50 is too high. Guess again.', done: false });
    expect(game.stateKey!()).toBe('1..49');
    expect(await game.respond!('25')).toEqual({ observation: '25 is too low. Guess again.', done: false });
    expect(game.stateKey!()).toBe('26..49');
    expect(game.done!()).toBe(false);
    expect(await game.respond!('My answer: 37')).toEqual({ observation: 'Correct!', done: true });
    expect(game.done!()).toBe(true);
    expect(await game.reward!({} as Episode)).toBe(1);
  });
  it('an answer without a number costs a guess; running out ends the game unsolved', async () => {
    const game = await guessNumberEnvironment({ low: 1, high: 10, maxGuesses: 2 })({ target: 3 }, context);
    expect(await game.respond!('hmm')).toEqual({
      observation: 'Answer with one whole number from 1 to 10.',
      done: false,
    });
    expect(game.stateKey!()).toBe('1..10'); // nothing learned
    expect(await game.respond!('9')).toEqual({ done: true });
    expect(game.done!()).toBe(true);
    expect(await game.reward!({} as Episode)).toBe(0);
  });
  it('two episodes that learned the same thing share a state key', async () => {
    const factory = guessNumberEnvironment();
    const [first, second] = await Promise.all([factory({ target: 70 }, context), factory({ target: 70 }, context)]);
    await first.respond!('50');
    await second.respond!('50');
    expect(first.stateKey!()).toBe(second.stateKey!());
    await second.respond!('60');
    expect(first.stateKey!()).not.toBe(second.stateKey!());
  });
  it('refuses a row without a valid target, naming the column', () => {
    const factory = guessNumberEnvironment({ high: 10 });
    expect(() => factory({ target: 11 }, context)).toThrow(
      /row column "target" must be a whole number from 1 to 10, got 11/,
    );
    expect(() => factory({}, context)).toThrow(/"target"/);
    expect(() => guessNumberEnvironment({ low: 5, high: 1 })).toThrow(/low ≤ high/);
  });
});

describe('toolUseEnvironment', () => {
  it('hands every episode the tools and scores with the row', async () => {
    const factory = toolUseEnvironment({
      tools: [calculatorTool()],
      reward: (episode, row) => (episode.messages.at(-1)?.content === row.answer ? 1 : 0),
    });
    const environment = await factory({ answer: '42' }, context);
    expect(environment.tools!.map((tool) => tool.name)).toEqual(['calculator']);
    const episode = { messages: [{ role: 'assistant', content: '42' }] } as unknown as Episode;
    expect(await environment.reward!(episode)).toBe(1);
  });
  it('chooses tools per row and refuses two tools with one name', async () => {
    const factory = toolUseEnvironment({ tools: (row) => (row.calculator ? [calculatorTool()] : []) });
    expect((await factory({ calculator: false }, context)).tools).toEqual([]);
    expect(() => toolUseEnvironment({ tools: [calculatorTool(), calculatorTool()] })).toThrow(
      /two tools are named "calculator"/,
    );
  });
});
