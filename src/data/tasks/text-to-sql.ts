/**
 * Text-to-SQL on small generated SQLite databases, for Reasoning-SQL (#33): each example has its
 * own database (`schema`: CREATE TABLE + INSERT statements), a question from five templates and a
 * gold query (`answer`). The completion is `<reasoning>tables</reasoning><answer>SQL</answer>`.
 *
 * Why GRPO has work: the SFT teacher writes a plausible wrong query (an off-by-one comparison, the
 * wrong aggregate, a missing join condition) on `teacherErrorRate` of its demonstrations; execution
 * against the database tells them apart, and the partial rewards grade the near misses.
 * Held out: every database whose seed hashes into one bucket of eight is never trained on.
 * Is not: BIRD or Spider (no download here), or a benchmark of SQL skill.
 */
import { z } from 'zod';
import { tagFormat } from '../../rewards/format.js';
import { sqlExecution } from '../../rewards/sql.js';
import { sqlNgram, sqlSchemaLinking, sqlSyntax } from '../../rewards/sql-partial.js';
import { makeRewardInput } from '../../rewards/types.js';
import { parseTaskOptions, type Example, type Task } from '../task.js';

/** The options `textToSqlTask` accepts (config `taskOptions`); unknown keys are refused. */
export const textToSqlOptionsSchema = z
  .object({
    /** Fraction of SFT demonstrations whose query is a plausible mistake (default 0.5). */
    teacherErrorRate: z.number().min(0).max(1).optional(),
  })
  .strict();

const NAMES = ['ada', 'bo', 'cy', 'di', 'ed', 'flo', 'gus', 'hal'];
const DEPTS = ['ops', 'it', 'hr'];
const CITIES = ['oslo', 'lima', 'rome', 'kiev'];
/** The schema every prompt shows (the database holds these two tables). */
export const TEXT_TO_SQL_SCHEMA = 'emp(name,dept,salary) dept(name,city)';

function hash(value: number): number {
  let h = Math.imul(value + 0x6d2b79f5, 0x9e3779b1) >>> 0;
  h ^= h >>> 15;
  return Math.imul(h, 0x85ebca77) >>> 0;
}

const isHeldOut = (databaseSeed: number) => hash(databaseSeed) % 8 === 0;

/** One question with its gold query and a teacher's plausible wrong one. */
interface Question {
  question: string;
  gold: string;
  wrong: string;
  tables: string;
}

function question(kind: number, pick: (n: number) => number, cityOf: Map<string, string>): Question {
  const dept = DEPTS[pick(DEPTS.length)]!;
  const limit = 20 + pick(60);
  const city = cityOf.get(dept)!;
  const where = `WHERE dept='${dept}'`;
  const join = 'FROM emp JOIN dept ON emp.dept=dept.name';
  return [
    {
      question: `count staff in ${dept}`,
      gold: `SELECT COUNT(*) FROM emp ${where}`,
      wrong: `SELECT COUNT(*) FROM emp`,
      tables: 'emp',
    },
    {
      question: `top pay in ${dept}`,
      gold: `SELECT MAX(salary) FROM emp ${where}`,
      wrong: `SELECT MIN(salary) FROM emp ${where}`,
      tables: 'emp',
    },
    {
      question: `who earns over ${limit}`,
      gold: `SELECT name FROM emp WHERE salary>${limit}`,
      wrong: `SELECT name FROM emp WHERE salary>=${limit - 5}`,
      tables: 'emp',
    },
    {
      question: `city of ${dept}`,
      gold: `SELECT city FROM dept WHERE name='${dept}'`,
      wrong: `SELECT city FROM dept`,
      tables: 'dept',
    },
    {
      question: `who works in ${city}`,
      gold: `SELECT emp.name ${join} WHERE city='${city}'`,
      wrong: `SELECT emp.name FROM emp, dept WHERE city='${city}'`,
      tables: 'emp dept',
    },
  ][kind]!;
}

/** The example of one database seed: its database, a question and the gold query. */
export function textToSqlExample(databaseSeed: number): Example {
  let state = hash(databaseSeed) || 1;
  const pick = (n: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) % n;
  };
  const cityOf = new Map(DEPTS.map((dept) => [dept, CITIES[pick(CITIES.length)]!]));
  const staff = NAMES.filter(() => pick(3) > 0).slice(0, 5);
  const rows = staff.map((name) => `('${name}','${DEPTS[pick(DEPTS.length)]}',${10 + pick(90)})`);
  const schema = [
    'CREATE TABLE emp (name TEXT, dept TEXT, salary INTEGER);',
    'CREATE TABLE dept (name TEXT, city TEXT);',
    rows.length > 0 ? `INSERT INTO emp VALUES ${rows.join(',')};` : '',
    `INSERT INTO dept VALUES ${DEPTS.map((dept) => `('${dept}','${cityOf.get(dept)}')`).join(',')};`,
  ].join('\n');
  const asked = question(pick(5), pick, cityOf);
  return {
    prompt: `${TEXT_TO_SQL_SCHEMA}\nQ: ${asked.question}\n`,
    answer: asked.gold,
    schema,
    tables: asked.tables,
    wrong: asked.wrong,
    databaseSeed,
  };
}

function sample(count: number, seed: number, heldOut: boolean): Example[] {
  const examples: Example[] = [];
  for (let databaseSeed = seed * 7919; examples.length < count; databaseSeed++)
    if (isHeldOut(databaseSeed) === heldOut) examples.push(textToSqlExample(databaseSeed));
  return examples;
}

/** The completion shape: the tables the query reads, then the query. */
export const sqlCompletion = (tables: string, sql: string) => `<reasoning>${tables}</reasoning><answer>${sql}</answer>`;

/** The text-to-SQL task; throws naming `taskOptions.<key>` for an unknown or ill-typed option. */
export function textToSqlTask(options: Record<string, unknown> = {}): Task {
  const errorRate = parseTaskOptions('text-to-sql', textToSqlOptionsSchema, options).teacherErrorRate ?? 0.5;
  const execution = sqlExecution({ tag: 'answer', executesScore: 0 });
  const alphabet = [
    ...new Set(
      `${TEXT_TO_SQL_SCHEMA}\nQ: 0123456789 ${NAMES.join('')}${DEPTS.join('')}${CITIES.join('')}` +
        `${sqlCompletion('emp dept', '')}SELECTCOUNTMAXMINFROMWHEREJOINON(*)'=>,.` +
        'count staff in top pay who earns over city of works',
    ),
  ].join('');
  return {
    name: 'text-to-sql',
    description: 'questions over small generated SQLite databases → SQL in <answer> (Reasoning-SQL #33)',
    alphabet,
    trainExamples: (count, seed) => sample(count, seed, false),
    evalExamples: (count, seed) => sample(count, seed, true),
    demonstration: (example, draw) =>
      sqlCompletion(String(example.tables), String(draw() < errorRate ? example.wrong : example.answer)),
    rewards: () => [
      { name: 'execution', reward: execution, weight: 1 },
      { name: 'syntax', reward: sqlSyntax({ tag: 'answer' }), weight: 0.2 },
      { name: 'schema-linking', reward: sqlSchemaLinking({ tag: 'answer' }), weight: 0.2 },
      { name: 'ngram', reward: sqlNgram({ tag: 'answer' }), weight: 0.2 },
      { name: 'format', reward: tagFormat({ tags: ['reasoning', 'answer'] }), weight: 0.2 },
    ],
    isCorrect: async (example, completion) => (await execution(makeRewardInput({ completion, row: example }))) === 1,
  };
}
