/**
 * Reasoning-SQL's (#33) partial rewards, beside `sql-execution` (sql.ts): they give a prediction
 * that is not (yet) right credit for what it got right, so a group whose samples all fail execution
 * still has a signal.
 *   - `sql-syntax`: the predicted query runs on the database (1) or SQLite rejects it (0).
 *   - `sql-schema-linking`: Jaccard similarity of the schema items (table and column names) the
 *     predicted and gold queries mention.
 *   - `sql-ngram`: Jaccard similarity of the two queries' token n-gram sets (bigrams by default).
 *
 * Tokens: SQL words and keywords lowercased, quoted identifiers unquoted and lowercased, string
 * literals kept whole (with their quotes), numbers, and operators (`<=`, `<>`, `||`, single
 * characters). Schema items are read from the database itself (sqlite_master and table_info), so a
 * word is a schema item only when the database has a table or column of that name.
 *
 * Is not: the AI-feedback (LLM judge) reward of the paper (`llm-judge` over an endpoint is the
 * built-in for that), or a SQL parser: names are matched as words, not resolved to their tables.
 */
import { SqlRunner, sqlOf } from './sql.js';
import { stringColumn, type RewardFn } from './types.js';

/** Where the SQL rewards find the query and the database; shared options. */
export interface SqlPartialOptions {
  /** Column with the gold query (default `answer`). */
  goldColumn?: string;
  /** Column with the database as SQL (CREATE TABLE + INSERT statements) (default `schema`). */
  databaseColumn?: string;
  /** Read the SQL from the last `<tag>…</tag>`; without it the prediction scores 0 (default: the whole completion). */
  tag?: string;
  timeoutMs?: number;
}

/** The tokens of a SQL text (see the file header); an unterminated literal runs to the end. */
export function sqlTokens(sql: string): string[] {
  const pattern =
    /'(?:[^']|'')*'?|"((?:[^"]|"")*)"?|`([^`]*)`?|\[([^\]]*)\]?|[A-Za-z_][A-Za-z0-9_$]*|\d+(?:\.\d*)?|\.\d+|<=|>=|<>|!=|==|\|\||\S/g;
  const tokens: string[] = [];
  for (const match of sql.matchAll(pattern)) {
    const text = match[0];
    const quoted = match[1] ?? match[2] ?? match[3];
    if (quoted !== undefined) tokens.push(quoted.replace(/""/g, '"').toLowerCase());
    else if (text.startsWith("'")) tokens.push(text);
    else tokens.push(text.toLowerCase());
  }
  return tokens;
}

/** |a ∩ b| / |a ∪ b|; 1 when both are empty (nothing to link is linked exactly). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const item of a) if (b.has(item)) shared++;
  return shared / (a.size + b.size - shared);
}

/** The set of token n-grams of a SQL text, each joined with a space. */
export function sqlNgrams(sql: string, n: number): Set<string> {
  const tokens = sqlTokens(sql);
  const grams = new Set<string>();
  for (let start = 0; start + n <= tokens.length; start++) grams.add(tokens.slice(start, start + n).join(' '));
  return grams;
}

/** The schema items of `sql`: its identifier tokens that name a table or column in `schemaItems`. */
export function schemaItemsUsed(sql: string, schemaItems: ReadonlySet<string>): Set<string> {
  return new Set(sqlTokens(sql).filter((token) => !token.startsWith("'") && schemaItems.has(token)));
}

const SCHEMA_QUERY =
  "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p WHERE m.type IN ('table', 'view')";

/** Runs the gold query (it must run: a failing gold query is a bad row) and returns it. */
async function goldQuery(runner: SqlRunner, setup: string, row: Record<string, unknown>, column: string, name: string) {
  const query = stringColumn(row, column, name);
  const result = await runner.run(setup, query);
  if (!result.ok) throw new Error(`${name}: the gold query (column "${column}") fails: ${result.error}`);
  return query;
}

/**
 * 1 when the predicted query runs on the row's database (any rows, or none), 0 when SQLite
 * rejects it or there is no SQL (Reasoning-SQL's syntax-check reward).
 * @example sqlSyntax({ tag: 'answer' }) // "<answer>SELECT x FROM t</answer>" → 1, "<answer>SELECT FROM</answer>" → 0
 */
export function sqlSyntax({
  databaseColumn = 'schema',
  tag,
  timeoutMs,
}: Omit<SqlPartialOptions, 'goldColumn'> = {}): RewardFn {
  const runner = new SqlRunner({ timeoutMs, maxRows: 1 });
  return async ({ completion, row }) => {
    const setup = stringColumn(row, databaseColumn, 'sql-syntax');
    const query = sqlOf(completion, tag);
    if (query === null || query === '') return 0;
    return (await runner.run(setup, query)).ok ? 1 : 0;
  };
}

/**
 * Jaccard similarity of the table and column names the predicted and gold queries use
 * (Reasoning-SQL's schema-linking reward). 0 when there is no SQL.
 * @example sqlSchemaLinking() // gold "SELECT name FROM emp", predicted "SELECT age FROM emp" → |{emp}| / |{emp, name, age}| = 1/3
 */
export function sqlSchemaLinking({
  goldColumn = 'answer',
  databaseColumn = 'schema',
  tag,
  timeoutMs,
}: SqlPartialOptions = {}): RewardFn {
  const runner = new SqlRunner({ timeoutMs, maxRows: 100_000 });
  const cache = new Map<string, Set<string>>();
  const itemsOf = async (setup: string): Promise<Set<string>> => {
    const cached = cache.get(setup);
    if (cached) return cached;
    const result = await runner.run(setup, SCHEMA_QUERY);
    if (!result.ok)
      throw new Error(`sql-schema-linking: cannot read the schema of column "${databaseColumn}": ${result.error}`);
    const items = new Set(result.rows.flatMap((pair) => pair.map((name) => String(name).toLowerCase())));
    if (cache.size > 32) cache.clear();
    cache.set(setup, items);
    return items;
  };
  return async ({ completion, row }) => {
    const setup = stringColumn(row, databaseColumn, 'sql-schema-linking');
    const gold = await goldQuery(runner, setup, row, goldColumn, 'sql-schema-linking');
    const predicted = sqlOf(completion, tag);
    if (predicted === null || predicted === '') return 0;
    const items = await itemsOf(setup);
    return jaccard(schemaItemsUsed(predicted, items), schemaItemsUsed(gold, items));
  };
}

/** Options of {@link sqlNgram}. */
export interface SqlNgramOptions {
  goldColumn?: string;
  tag?: string;
  /** n-gram size (default 2). */
  n?: number;
}

/**
 * Jaccard similarity of the predicted and gold queries' token n-gram sets (Reasoning-SQL's n-gram
 * similarity reward). Needs no database. 0 when there is no SQL.
 * @example sqlNgram() // gold "SELECT a FROM t", predicted "SELECT b FROM t" → |{from t}| / 5 = 0.2
 */
export function sqlNgram({ goldColumn = 'answer', tag, n = 2 }: SqlNgramOptions = {}): RewardFn {
  return ({ completion, row }) => {
    const gold = stringColumn(row, goldColumn, 'sql-ngram');
    const predicted = sqlOf(completion, tag);
    if (predicted === null || predicted === '') return 0;
    return jaccard(sqlNgrams(predicted, n), sqlNgrams(gold, n));
  };
}
