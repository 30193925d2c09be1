/**
 * Example 04b: execution rewards. Score Python completions against MBPP asserts in the sandbox
 * (partial credit = fraction of asserts passed) and SQL completions by execution match on SQLite.
 * Run: `npx tsx examples/04-code-and-sql-reward.ts`. Needs python3 on PATH for the code part.
 */
import { codeTests, makeRewardInput, sandboxCapabilities, sqlExecution } from '../src/rewards/index.js';

console.log('sandbox layers on this machine:', sandboxCapabilities());

const tests = ['assert square(2) == 4', 'assert square(-3) == 9', 'assert square(0) == 0'];
const code = codeTests({ language: 'python', timeoutMs: 3000 });
for (const completion of [
  '```python\ndef square(x):\n    return x * x\n```', // all three pass
  '```python\ndef square(x):\n    return abs(x) * 2\n```', // square(2) and square(0) pass: 2/3
  '```python\ndef square(x):\n    while True: pass\n```', // killed at the time limit: 0
]) {
  console.log(
    'code score',
    await code(makeRewardInput({ completion, row: { tests } })),
    JSON.stringify(completion.split('\n')[2]),
  );
}

const schema =
  "CREATE TABLE city (name TEXT, population INTEGER); INSERT INTO city VALUES ('A', 10), ('B', 200), ('C', 3000);";
const sql = sqlExecution();
for (const completion of [
  'SELECT name FROM city WHERE population > 100',
  'SELECT name FROM city',
  'SELEC name FROM city',
]) {
  console.log(
    'sql score',
    await sql(
      makeRewardInput({ completion, row: { schema, answer: "SELECT name FROM city WHERE name IN ('B', 'C')" } }),
    ),
    completion,
  );
}
