/** Table-driven tests of the SQL execution-match reward on a small SQLite database. */
import { afterAll, describe, expect, it } from 'vitest';
import { extractSql, sqlExecution, SqlRunner } from './sql.js';
import { makeRewardInput } from './types.js';

const schema = `
CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Ada', 'UK', 36), (2, 'Bo', 'US', 25), (3, 'Cy', 'UK', 41), (4, 'Di', 'FR', 25);
`;

describe('sqlExecution', () => {
  const reward = sqlExecution({ timeoutMs: 2000 });
  const score = (completion: string, answer: string) =>
    reward(makeRewardInput({ completion, row: { schema, answer } }));
  const cases: Array<[string, string, number, string]> = [
    [
      'SELECT name FROM singer WHERE country = "UK"',
      "SELECT name FROM singer WHERE country = 'UK'",
      1,
      'same rows, different quoting',
    ],
    [
      'SELECT name FROM singer WHERE age > 30',
      "SELECT name FROM singer WHERE country = 'UK'",
      1,
      'different query, same result set',
    ],
    ['SELECT name FROM singer ORDER BY name DESC', 'SELECT name FROM singer', 1, 'gold has no ORDER BY: order ignored'],
    [
      'SELECT name FROM singer ORDER BY name DESC',
      'SELECT name FROM singer ORDER BY name',
      0.1,
      'gold orders: wrong order is wrong, but it ran',
    ],
    ['SELECT name FROM singer', "SELECT name FROM singer WHERE country = 'UK'", 0.1, 'runs, extra rows'],
    ['SELECT COUNT(*) FROM singer', 'SELECT count(id) FROM singer', 1, 'same count'],
    ['SELECT AVG(age) FROM singer', 'SELECT SUM(age) * 1.0 / COUNT(*) FROM singer', 1, 'floats compared to 12 digits'],
    ['SELEC name FROM singer', 'SELECT name FROM singer', 0, 'syntax error: 0'],
    ['SELECT nme FROM singer', 'SELECT name FROM singer', 0, 'unknown column: 0'],
    [
      '```sql\nSELECT name FROM singer WHERE id = 2\n```',
      'SELECT name FROM singer WHERE id = 2',
      1,
      'fenced SQL extracted',
    ],
  ];
  it.each(cases)('%j vs %j → %d (%s)', async (completion, answer, expected) => {
    expect(await score(completion, answer)).toBe(expected);
  });

  it("a destructive prediction does not touch the next query's database", async () => {
    expect(await score('DROP TABLE singer', 'SELECT name FROM singer')).toBe(0.1); // it ran (no rows), so partial
    expect(await score('SELECT name FROM singer', 'SELECT name FROM singer')).toBe(1); // the table is still there
  });

  it('a broken gold query is an error, not a score', async () => {
    await expect(score('SELECT 1', 'SELECT nothing FROM nowhere')).rejects.toThrow(/gold query fails/);
  });
});

describe('SqlRunner limits', () => {
  const runner = new SqlRunner({ timeoutMs: 300, maxRows: 100 });
  afterAll(() => runner.close());
  it('stops a runaway recursive query and keeps working afterwards', async () => {
    const forever = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c';
    // The query never ends by itself: an answer at all means the 300 ms limit stopped it.
    expect(await runner.run(schema, forever)).toEqual({ ok: false, error: 'query timed out after 300 ms' });
    expect(await runner.run(schema, 'SELECT 1 + 1')).toMatchObject({ ok: true, rows: [[2]] }); // a fresh worker took over
  });
  it('caps returned rows', async () => {
    const many = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 500) SELECT x FROM c';
    expect(await runner.run(schema, many)).toMatchObject({ ok: true, truncated: true });
  });
});

describe('extractSql', () => {
  it('takes the last sql block, else the text', () => {
    expect(extractSql('a\n```sql\nSELECT 1\n```\n```sql\nSELECT 2;\n```')).toBe('SELECT 2;');
    expect(extractSql('  SELECT 3 ')).toBe('SELECT 3');
  });
});
