/**
 * SQL execution-match reward (Reasoning-SQL style): run the predicted and the gold query on a
 * fresh copy of a SQLite database (sql.js, SQLite compiled to WebAssembly) and compare result
 * sets; partial credit when the prediction at least executes.
 *
 * Queries run in a worker thread with a wall-clock limit (a runaway recursive CTE cannot block
 * the trainer: the worker is terminated and replaced) and a row cap. Every query gets its own
 * copy of the database, so `DROP TABLE` in one prediction affects nothing else.
 * Not here: SQL dialects other than SQLite, or schema-linking rewards.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { tagContent } from './format.js';
import { stringColumn, type RewardFn } from './types.js';

/** Result of one query: rows of values, or the error SQLite gave. */
export type QueryResult =
  { ok: true; columns: string[]; rows: unknown[][]; truncated: boolean } | { ok: false; error: string };

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const ready = require(workerData.sqlJsPath)();
const cache = new Map();
parentPort.on('message', async ({ id, setup, query, maxRows }) => {
  try {
    const SQL = await ready;
    parentPort.postMessage({ id, started: true });
    let image = cache.get(setup);
    if (!image) {
      const db = new SQL.Database();
      db.exec(setup);
      image = db.export();
      db.close();
      if (cache.size > 32) cache.clear();
      cache.set(setup, image);
    }
    const db = new SQL.Database(image);
    try {
      const statement = db.prepare(query);
      const rows = [];
      let truncated = false;
      while (statement.step()) {
        if (rows.length >= maxRows) { truncated = true; break; }
        rows.push(statement.get());
      }
      const columns = statement.getColumnNames();
      statement.free();
      parentPort.postMessage({ id, result: { ok: true, columns, rows, truncated } });
    } finally {
      db.close();
    }
  } catch (error) {
    parentPort.postMessage({ id, result: { ok: false, error: String(error && error.message || error) } });
  }
});
`;

/** How long a fresh worker may take to load SQLite before the query counts as failed. */
const startupTimeoutMs = 60_000;

/** Runs queries one at a time in a worker; a query over its time limit terminates the worker. */
export class SqlRunner {
  private worker: Worker | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  private readonly sqlJsPath = createRequire(import.meta.url).resolve('sql.js');

  constructor(private readonly options: { timeoutMs?: number; maxRows?: number } = {}) {}

  private ensureWorker(): Worker {
    if (!this.worker) {
      this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { sqlJsPath: this.sqlJsPath } });
      this.worker.unref(); // an idle runner must not keep the process alive
    }
    return this.worker;
  }

  /** Runs `query` against a database built by `setup` (DDL + inserts); errors come back as results. */
  run(setup: string, query: string): Promise<QueryResult> {
    const task = this.queue.then(() => this.runNow(setup, query));
    this.queue = task.catch(() => undefined);
    return task;
  }

  private runNow(setup: string, query: string): Promise<QueryResult> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    const timeoutMs = this.options.timeoutMs ?? 5000;
    return new Promise((resolve) => {
      const stop = (error: string) => {
        worker.off('message', onMessage);
        void worker.terminate();
        this.worker = null;
        resolve({ ok: false, error });
      };
      // The query's limit starts when the worker has SQLite loaded: a fresh worker's start-up
      // (compiling sql.js, slow on a busy machine) must not eat a query's time.
      let timer = setTimeout(
        () => stop(`the SQL worker did not start within ${startupTimeoutMs} ms`),
        startupTimeoutMs,
      );
      const onMessage = (message: { id: number; started?: true; result?: QueryResult }) => {
        if (message.id !== id) return;
        clearTimeout(timer);
        if (message.started) {
          timer = setTimeout(() => stop(`query timed out after ${timeoutMs} ms`), timeoutMs);
          return;
        }
        worker.off('message', onMessage);
        resolve(message.result!);
      };
      worker.on('message', onMessage);
      worker.postMessage({ id, setup, query, maxRows: this.options.maxRows ?? 10_000 });
    });
  }

  /** Stops the worker. */
  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }
}

/** The SQL in a completion: the last ```sql block (or any fenced block), else the whole text. */
export function extractSql(completion: string): string {
  const tagged = [...completion.matchAll(/```sql[ \t]*\n([\s\S]*?)```/gi)];
  if (tagged.length) return tagged[tagged.length - 1]![1]!.trim();
  const any = [...completion.matchAll(/```[\w-]*[ \t]*\n([\s\S]*?)```/g)];
  return (any.length ? any[any.length - 1]![1]! : completion).trim();
}

/**
 * The SQL of a completion: with `tag`, {@link extractSql} of the last `<tag>…</tag>` (null when there
 * is none); without, {@link extractSql} of the whole completion.
 */
export function sqlOf(completion: string, tag?: string): string | null {
  if (tag === undefined) return extractSql(completion);
  const content = tagContent(completion, tag);
  return content === null ? null : extractSql(content);
}

/** A canonical key for one row: numbers to 12 significant digits, so 0.1 + 0.2 equals 0.3. */
function rowKey(row: readonly unknown[]): string {
  return JSON.stringify(
    row.map((value) =>
      typeof value === 'number'
        ? Number(value.toPrecision(12))
        : value instanceof Uint8Array
          ? Array.from(value)
          : value,
    ),
  );
}

/** True when two results hold the same rows: in order when `ordered`, else as multisets. */
export function resultsMatch(predicted: QueryResult, gold: QueryResult, ordered: boolean): boolean {
  if (!predicted.ok || !gold.ok || predicted.truncated || gold.truncated) return false;
  if (predicted.rows.length !== gold.rows.length) return false;
  const a = predicted.rows.map(rowKey);
  const b = gold.rows.map(rowKey);
  if (!ordered) {
    a.sort();
    b.sort();
  }
  return a.every((key, index) => key === b[index]);
}

/** Options of {@link sqlExecution}. */
export interface SqlExecutionOptions {
  /** Column with the gold query (default `answer`). */
  goldColumn?: string;
  /** Column with the database as SQL (CREATE TABLE + INSERT statements) (default `schema`). */
  databaseColumn?: string;
  /** Score for a prediction that executes but returns different rows (default 0.1); 0 when it fails to execute. */
  executesScore?: number;
  /** Row order matters when the gold query has ORDER BY (default `auto`). */
  order?: 'auto' | 'ordered' | 'unordered';
  /** Read the SQL from the last `<tag>…</tag>` (Reasoning-SQL's `<answer>`); without it the prediction scores 0 (default: the whole completion). */
  tag?: string;
  timeoutMs?: number;
  maxRows?: number;
}

/**
 * 1 when the predicted query returns the gold query's rows, `executesScore` when it runs but
 * differs, 0 when it does not run. A gold query that fails is an error (the row is bad).
 * @example sqlExecution() // row: { schema: 'CREATE TABLE t(x); INSERT INTO t VALUES (1);', answer: 'SELECT x FROM t' }
 */
export function sqlExecution({
  goldColumn = 'answer',
  databaseColumn = 'schema',
  executesScore = 0.1,
  order = 'auto',
  tag,
  timeoutMs,
  maxRows,
}: SqlExecutionOptions = {}): RewardFn {
  const runner = new SqlRunner({ timeoutMs, maxRows });
  return async ({ completion, row }) => {
    const setup = stringColumn(row, databaseColumn, 'sqlExecution');
    const goldQuery = stringColumn(row, goldColumn, 'sqlExecution');
    const gold = await runner.run(setup, goldQuery);
    if (!gold.ok) throw new Error(`sqlExecution: the gold query fails: ${gold.error}`);
    const query = sqlOf(completion, tag);
    if (query === null) return 0;
    const predicted = await runner.run(setup, query);
    if (!predicted.ok) return 0;
    const ordered = order === 'ordered' || (order === 'auto' && /\border\s+by\b/i.test(goldQuery));
    return resultsMatch(predicted, gold, ordered) ? 1 : executesScore;
  };
}
