/** Table-driven tests of the format rewards; each case says why it scores what it scores. */
import { describe, expect, it } from 'vitest';
import {
  exactMatch,
  extractChoice,
  jsonSchema,
  jsonValid,
  multipleChoice,
  regexMatch,
  requiredSections,
  tagFormat,
  thinkFormat,
} from './format.js';
import { makeRewardInput, type RewardFn } from './types.js';

const score = (reward: RewardFn, completion: string, row: Record<string, unknown> = {}) =>
  reward(makeRewardInput({ completion, row }));

describe('thinkFormat (§5.2)', () => {
  const cases: Array<[string, number, string]> = [
    ['<think>a</think>b', 1, '§5.2 vector: one think block then text'],
    ['<think>a<think>b</think>', 0, '§5.2 vector: a second <think> is refused'],
    ['<think>line\nline</think>\nanswer', 1, 'DOTALL: newlines inside and after'],
    ['x<think>a</think>', 0, 'must start with <think>'],
    ['<think>a', 0, 'never closed'],
  ];
  it.each(cases)('%j → %d (%s)', (completion, expected) => expect(score(thinkFormat(), completion)).toBe(expected));
});

describe('tagFormat', () => {
  const cases: Array<[string, number, string]> = [
    ['<think>x</think>\n<answer>4</answer>', 1, 'both tags, in order'],
    ['<answer>4</answer><think>x</think>', 0, 'wrong order'],
    ['<think>x</think>', 0, 'answer missing'],
    ['<think>x</think><answer>4</answer><answer>5</answer>', 0, 'answer twice'],
    ['hi <think>x</think><answer>4</answer>', 0, 'text outside the tags'],
  ];
  it.each(cases)('%j → %d (%s)', (completion, expected) => expect(score(tagFormat(), completion)).toBe(expected));
  it('allowOutside accepts surrounding text', () =>
    expect(score(tagFormat({ allowOutside: true }), 'hi <think>x</think><answer>4</answer> bye')).toBe(1));
  it('rejects bad tag names', () => expect(() => tagFormat({ tags: ['a b'] })).toThrow(/tags must be/));
});

describe('regexMatch and requiredSections', () => {
  it('regex matches are 1/0 and a global flag keeps no state between calls', () => {
    const reward = regexMatch({ pattern: '\\d+', flags: 'g' });
    expect([score(reward, 'a1'), score(reward, 'a1'), score(reward, 'none')]).toEqual([1, 1, 0]);
  });
  it('sections score the fraction present, case-insensitively', () => {
    const reward = requiredSections({ sections: ['## Plan', '## Answer'] });
    expect(score(reward, '## plan\n...\n## ANSWER')).toBe(1); // both, case ignored
    expect(score(reward, '## Plan only')).toBe(0.5); // one of two
  });
});

describe('jsonValid and jsonSchema', () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
    required: ['name'],
    additionalProperties: false,
  };
  const cases: Array<[string, number, number, string]> = [
    ['{"name": "Ada", "age": 36}', 1, 1, 'valid and conforming'],
    ['```json\n{"name": "Ada"}\n```', 1, 1, 'fenced block is extracted'],
    ['{"age": 3}', 1, 0.5, 'parses, but the required name is missing'],
    ['{"name": "Ada", "age": -1}', 1, 0.5, 'minimum violated'],
    ['{"name": "Ada", "extra": 1}', 1, 0.5, 'additional property refused'],
    ['{"name": "Ada",}', 0, 0, 'trailing comma is not JSON'],
    ['Sure! {"name": "Ada"}', 0, 0, 'prose around JSON is not JSON'],
  ];
  it.each(cases)('%j → valid %d, schema %d (%s)', (completion, valid, conforming) => {
    expect(score(jsonValid(), completion)).toBe(valid);
    expect(score(jsonSchema({ schema, validJsonScore: 0.5 }), completion)).toBe(conforming);
  });
  it('takes the schema from a row column (object or JSON string)', () => {
    const reward = jsonSchema();
    expect(score(reward, '[1, 2]', { schema: JSON.stringify({ type: 'array', items: { type: 'number' } }) })).toBe(1);
    expect(score(reward, '[1, "x"]', { schema: { type: 'array', items: { type: 'number' } } })).toBe(0);
    expect(() => score(reward, '[1]', {})).toThrow(/no "schema" column/);
  });
});

describe('exactMatch', () => {
  const cases: Array<[string, string, number, string]> = [
    ['The Paris.', 'paris', 1, 'case, article and punctuation normalised'],
    ['<answer> Paris </answer>', 'Paris', 1, 'tag content compared'],
    ['Paris, France', 'Paris', 0, 'extra words'],
  ];
  it.each(cases)('%j vs %j → %d (%s)', (completion, answer, expected) =>
    expect(score(exactMatch({ tag: 'answer' }), completion, { answer })).toBe(expected),
  );
  it('normalise: false compares exactly', () =>
    expect(score(exactMatch({ normalise: false }), 'paris', { answer: 'Paris' })).toBe(0));
});

describe('multipleChoice', () => {
  const cases: Array<[string, string | null, string]> = [
    ['The answer is (C).', 'C', '"answer is (C)"'],
    ['Answer: b', 'B', 'lower-case label'],
    ['so \\boxed{D}', 'D', 'boxed letter'],
    ['I think it is A or B...\n(B)', 'B', 'last parenthesised letter'],
    ['B', 'B', 'a lone letter'],
    ['Answer: Z', null, 'Z is not an option'],
    ['no choice made', null, 'nothing chosen'],
  ];
  it.each(cases)('%j → %j (%s)', (completion, expected) => expect(extractChoice(completion)).toBe(expected));
  it('scores against the row letter, with or without parentheses', () => {
    expect(score(multipleChoice(), 'Answer: (C)', { answer: '(C)' })).toBe(1);
    expect(score(multipleChoice(), 'Answer: (C)', { answer: 'D' })).toBe(0);
  });
});
