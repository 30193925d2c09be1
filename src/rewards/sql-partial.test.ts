/** Reasoning-SQL's (#33) partial rewards against hand-computed values on a small SQLite database. */
import { describe, expect, it } from 'vitest';
import { rewardFactories } from './factories.js';
import { sqlExecution } from './sql.js';
import { jaccard, sqlNgram, sqlNgrams, sqlSchemaLinking, sqlSyntax, sqlTokens } from './sql-partial.js';
import { makeRewardInput, type RewardFn } from './types.js';

const schema = `
CREATE TABLE emp (name TEXT, dept TEXT, salary INTEGER);
CREATE TABLE dept (name TEXT, city TEXT);
INSERT INTO emp VALUES ('Ada', 'sales', 50), ('Bo', 'ops', 40), ('Cy', 'sales', 70);
INSERT INTO dept VALUES ('sales', 'Oslo'), ('ops', 'Lima');
`;
const score = (reward: RewardFn, completion: string, answer: string, row: Record<string, unknown> = {}) =>
  reward(makeRewardInput({ completion, row: { schema, answer, ...row } }));

describe('sqlTokens', () => {
  it('lowercases words, unquotes identifiers, keeps literals and two-character operators', () => {
    expect(sqlTokens(`SELECT "Max Val", [x] FROM t WHERE y<=1.5 AND s='it''s'`)).toEqual([
      'select',
      'max val',
      ',',
      'x',
      'from',
      't',
      'where',
      'y',
      '<=',
      '1.5',
      'and',
      's',
      '=',
      "'it''s'",
    ]);
  });
});

describe('sql-syntax', () => {
  const reward = sqlSyntax({ timeoutMs: 5000 });
  const cases: Array<[string, number, string]> = [
    ['SELECT name FROM emp', 1, 'runs'],
    ["SELECT name FROM emp WHERE dept = 'none'", 1, 'runs with no rows: still valid'],
    ['SELECT FROM emp', 0, 'syntax error'],
    ['SELECT age FROM emp', 0, 'no such column: SQLite rejects it'],
    ['', 0, 'no SQL at all'],
  ];
  it.each(cases)('%j → %s (%s)', async (completion, expected) => {
    expect(await score(reward, completion, 'SELECT 1')).toBe(expected);
  });
  it('with tag, reads the SQL inside it and scores 0 without it', async () => {
    const tagged = sqlSyntax({ tag: 'answer', timeoutMs: 5000 });
    expect(await score(tagged, '<reasoning>emp</reasoning><answer>SELECT name FROM emp</answer>', 'SELECT 1')).toBe(1);
    expect(await score(tagged, 'SELECT name FROM emp', 'SELECT 1')).toBe(0);
  });
});

describe('sql-schema-linking', () => {
  const reward = sqlSchemaLinking({ timeoutMs: 5000 });
  const gold = "SELECT name FROM emp WHERE dept = 'sales'"; // items {name, emp, dept}
  const cases: Array<[string, number, string]> = [
    ["select NAME from EMP where DEPT = 'ops'", 1, 'same items, other case and literal'],
    ["SELECT salary FROM emp WHERE dept = 'sales'", 2 / 4, '{salary, emp, dept} vs {name, emp, dept}: 2 shared of 4'],
    ["SELECT 'name' FROM emp", 1 / 3, 'a string literal is not a column: {emp} of 3'],
    ['SELECT city FROM dept', 1 / 4, '{city, dept} vs {name, emp, dept}: 1 of 4'],
    ['SELECT 1', 0, 'no schema item at all'],
    ['SELECT nme FROM emp', 1 / 3, 'a misspelt column is no item (it does not run, but links emp)'],
  ];
  it.each(cases)('%j → %s (%s)', async (completion, expected) => {
    expect(await score(reward, completion, gold)).toBeCloseTo(expected, 12);
  });
  it('a gold query that fails, or no database, is an error naming the column', async () => {
    await expect(score(reward, 'SELECT 1', 'SELECT nothing FROM emp')).rejects.toThrow(
      /gold query \(column "answer"\) fails/,
    );
    await expect(score(reward, 'SELECT 1', 'SELECT 1', { schema: undefined })).rejects.toThrow(
      /no string column "schema"/,
    );
  });
});

describe('sql-ngram', () => {
  const cases: Array<[string, string, number, number, string]> = [
    ['SELECT b FROM t', 'SELECT a FROM t', 2, 1 / 5, '{select b, b from, from t} vs {select a, a from, from t}'],
    ['select A from T', 'SELECT a FROM t', 2, 1, 'case does not matter'],
    ['SELECT a FROM t', 'SELECT a FROM t WHERE x = 1', 2, 3 / 7, '3 shared bigrams of 7'],
    ['SELECT b FROM t', 'SELECT a FROM t', 1, 3 / 5, 'unigrams: {select, from, t} shared of 5'],
    ['', 'SELECT a FROM t', 2, 0, 'no SQL'],
  ];
  it.each(cases)('%j vs %j, n = %s → %s (%s)', async (completion, gold, n, expected) => {
    expect(await sqlNgram({ n })(makeRewardInput({ completion, row: { answer: gold } }))).toBeCloseTo(expected, 12);
  });
  it('matches the Jaccard formula on n-gram sets', () => {
    const a = sqlNgrams('SELECT a, b FROM t', 2);
    expect([...a]).toEqual(['select a', 'a ,', ', b', 'b from', 'from t']);
    expect(jaccard(a, sqlNgrams('SELECT a FROM t', 2))).toBeCloseTo(2 / 6, 12);
    expect(jaccard(new Set(), new Set())).toBe(1);
  });
});

describe('sql-execution with a tag', () => {
  it('executes the SQL in <answer>', async () => {
    const reward = sqlExecution({ tag: 'answer', timeoutMs: 5000 });
    const gold = "SELECT name FROM emp WHERE dept = 'sales'";
    expect(await score(reward, `<answer>SELECT name FROM emp WHERE salary > 45</answer>`, gold)).toBe(1);
    expect(await score(reward, `SELECT name FROM emp WHERE salary > 45`, gold)).toBe(0); // no tag
  });
});

describe('factories', () => {
  it('refuse bad options naming the field', () => {
    expect(() => rewardFactories.get('sql-ngram').create({ n: 0 })).toThrow(/reward "sql-ngram": bad options: n:/);
    expect(() => rewardFactories.get('sql-syntax').create({ goldColumn: 'x' })).toThrow(/goldColumn/);
    expect(() => rewardFactories.get('sql-schema-linking').create({ tag: 'a b' })).toThrow(/tag:/);
  });
});
