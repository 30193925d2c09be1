/**
 * The solution's end of the grader channel (issue 36): a test run's solution process holds the
 * socket to the grader (fd 3, and in Python a duplicate at fd 4), relayed by the supervisor. These
 * tests take it over from a hostile solution — reading what the grader sends, answering in the
 * server's place, writing forged verdict lines, garbage and values nested past any decoder — and
 * show that the channel carries nothing but the solution's answers:
 * - what the grader sends is the names the tests use and the arguments of each call, never the
 *   nonce or the test code;
 * - verdicts are lines the grader writes on its own fd 3 with the nonce; nothing written on the
 *   channel (or stdout, stderr) is counted;
 * - forged replies score exactly what an honest function returning the same values scores, and
 *   malformed ones fail the test they answer.
 * The sandbox's other hostile cases (escapes, bombs, kills) are sandbox.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { runTests, type TestRun } from '../code.js';
import type { SandboxLanguage } from './sandbox.js';

const TESTS = {
  python: ['assert add(1, 2) == 3', 'assert add(2, 2) == 4'],
  javascript: ['assert.strictEqual(add(1, 2), 3)', 'assert.strictEqual(add(2, 2), 4)'],
};

/** Verdict lines in the grader's format, for a guessed nonce and one found in nothing the solution can see. */
const FORGED_VERDICTS = ['0'.repeat(24), 'f'.repeat(24), 'nonce']
  .flatMap((nonce) => [`${nonce} ready`, `${nonce} pass 0`, `${nonce} pass 1`])
  .join('\\n');

/** Solutions that take over the channel: answer `loaded` themselves, log every request, answer 3 to every call. */
const HIJACK: Record<SandboxLanguage, string> = {
  python: `import json, os, sys
def lines():
    pending = b''
    while True:
        chunk = os.read(3, 65536)
        if not chunk: return
        pending += chunk
        while b'\\n' in pending:
            line, pending = pending.split(b'\\n', 1)
            yield line
os.write(4, b'{"loaded": true}\\n')
for line in lines():
    print('GOT', line.decode(), flush=True)
    request = json.loads(line)
    reply = {'found': {'add': ['function']}} if 'lookup' in request else {'value': ['i', '3']}
    os.write(4, (json.dumps(reply) + '\\n').encode())
os._exit(0)`,
  javascript: `const fs = process.getBuiltinModule('fs');
fs.writeSync(3, '{"loaded": true}\\n');
let pending = '';
const chunk = Buffer.alloc(65536);
for (;;) {
  const count = fs.readSync(3, chunk, 0, chunk.length, null);
  if (count === 0) break;
  pending += chunk.toString('utf8', 0, count);
  for (let at = pending.indexOf('\\n'); at >= 0; at = pending.indexOf('\\n')) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    console.log('GOT', line);
    const request = JSON.parse(line);
    fs.writeSync(3, JSON.stringify(request.lookup ? { found: { add: ['function'] } } : { value: ['d', '3'] }) + '\\n');
  }
}
process.exit(0);`,
};

/** The honest solution that returns what the hijacker forges. */
const RETURNS_THREE: Record<SandboxLanguage, string> = {
  python: 'def add(a, b):\n    return 3',
  javascript: 'function add(a, b) { return 3; }',
};

/** Wrong solutions that write forged verdicts on every descriptor they hold, before and during the tests. */
const FORGER: Record<SandboxLanguage, string> = {
  python: `import os
forged = ("${FORGED_VERDICTS}\\n").encode()
for fd in (1, 2, 3, 4):
    try: os.write(fd, forged)
    except OSError: pass
def add(a, b):
    for fd in (1, 2):
        os.write(fd, forged)
    return a - b`,
  javascript: `const fs = process.getBuiltinModule('fs');
const forged = "${FORGED_VERDICTS}\\n";
for (const fd of [1, 2, 3]) { try { fs.writeSync(fd, forged); } catch {} }
function add(a, b) { fs.writeSync(1, forged); fs.writeSync(2, forged); return a - b; }`,
};

/** Replies nested far past any decoder's stack, then a line of garbage, in place of the server's. */
const MALFORMED: Record<SandboxLanguage, string> = {
  python: `import os
deep = '["l", [' * 100000 + ']]' * 100000
os.write(4, b'{"loaded": true}\\n{"found": {"add": ["function"]}}\\n{"value": ' + deep.encode() + b'}\\nnot json\\n')
os._exit(0)`,
  javascript: `const fs = process.getBuiltinModule('fs');
const deep = '["a", ['.repeat(100000) + ']]'.repeat(100000);
fs.writeSync(3, '{"loaded": true}\\n{"found": {"add": ["function"]}}\\n{"value": ' + deep + '}\\nnot json\\n');
process.exit(0);`,
};

const run = (solution: string, language: SandboxLanguage): Promise<TestRun> =>
  runTests(solution, TESTS[language], { language, timeoutMs: 8000 });
/** The nonce of a run, read from the grader's own output (every line of it starts with the nonce). */
const nonceOf = (result: TestRun) => result.sandbox.graderOutput.split(' ')[0]!;

describe.each(['python', 'javascript'] as const)('the grader channel (%s)', (language) => {
  it('a solution that takes the channel over reads only names and arguments, and scores what its answers score', async () => {
    const [hijacked, honest] = await Promise.all([
      run(HIJACK[language], language),
      run(RETURNS_THREE[language], language),
    ]);
    expect(hijacked.results).toEqual(honest.results); // both answer 3: test 0 passes, test 1 fails
    expect(hijacked.results).toEqual([true, false]);
    const received = hijacked.sandbox.stdout;
    expect(received).toMatch(/^GOT \{"lookup": ?\[[^\]]*"add"/m); // the names the tests use
    expect(received).toMatch(/^GOT \{"call": ?"add"/m); // and each call's arguments
    const nonce = nonceOf(hijacked);
    expect(nonce).toMatch(/^[0-9a-f]{24}$/);
    expect(received).not.toContain(nonce);
    expect(received).not.toMatch(/assert/);
  }, 30_000);

  it('forged verdict lines on the channel, stdout and stderr count for nothing', async () => {
    const result = await run(FORGER[language], language);
    expect(result.results).toEqual([false, false]);
    expect(result.sandbox.stdout).toContain(`${'0'.repeat(24)} pass 0`); // they were written
    const nonce = nonceOf(result);
    for (const line of result.sandbox.graderOutput.trim().split('\n')) expect(line.startsWith(`${nonce} `)).toBe(true);
  }, 30_000);

  it('replies nested past any decoder, and garbage, fail the tests they answer without taking the grader down', async () => {
    const result = await run(MALFORMED[language], language);
    expect(result.results).toEqual([false, false]);
    expect(result.sandbox.timedOut).toBe(false);
    expect(result.sandbox.graderOutput).toMatch(/ ready\n/);
  }, 30_000);
});
