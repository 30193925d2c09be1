/**
 * Tests of the code-execution reward and its sandbox: real HumanEval/MBPP canonical solutions
 * pass, wrong ones get partial credit, and hostile programs (infinite loop, fork bomb, huge
 * output, memory hog, reading the parent's files and environment, network, exit-before-tests)
 * are contained. Every hostile case is bounded by a short timeout and checks that nothing it
 * started survives.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { codeTests, extractCode, humanEvalRow, mbppRow, runSandboxed, runTests, sandboxCapabilities } from './code.js';
import { makeRewardInput } from './types.js';
import { sharedDataFile } from '../../test/helpers/fixtures.js';

const capabilities = sandboxCapabilities();

/** Pids of processes whose command line mentions one of this process's sandbox work dirs (none may outlive a run). */
function sandboxProcesses(marker = `grpo-sandbox-${process.pid}-`): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return pids;
}

afterAll(() => {
  expect(sandboxProcesses()).toEqual([]);
});

describe('extractCode', () => {
  const cases: Array<[string, string, string]> = [
    ['Here:\n```python\nx = 1\n```\nand\n```python\nx = 2\n```', 'x = 2\n', 'last python block'],
    ['```\nplain\n```', 'plain\n', 'untagged block'],
    ['def f(): pass', 'def f(): pass', 'no fence: the whole text'],
  ];
  it.each(cases)('%j → %j (%s)', (completion, expected) => expect(extractCode(completion, 'python')).toBe(expected));
});

describe('codeTests on real datasets', () => {
  it('HumanEval canonical solutions pass; a wrong body fails', async () => {
    const rows = gunzipSync(readFileSync(sharedDataFile('humaneval/HumanEval.jsonl.gz')))
      .toString('utf8')
      .trim()
      .split('\n')
      .slice(0, 3)
      .map((line) => JSON.parse(line));
    const reward = codeTests({ prefixColumn: 'prompt' });
    for (const row of rows) {
      const columns = humanEvalRow(row);
      expect(await reward(makeRewardInput({ completion: row.canonical_solution, row: columns }))).toBe(1);
      expect(await reward(makeRewardInput({ completion: '    return None\n', row: columns }))).toBe(0); // the check asserts fail
    }
  });

  it('MBPP canonical solutions pass all asserts; a partly right one gets partial credit', async () => {
    const rows = readFileSync(sharedDataFile('mbpp/mbpp.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .slice(0, 3)
      .map((line) => JSON.parse(line));
    const reward = codeTests({ setupColumn: 'setup' });
    for (const row of rows)
      expect(
        await reward(makeRewardInput({ completion: `\`\`\`python\n${row.code}\n\`\`\``, row: mbppRow(row) })),
      ).toBe(1);
    const tests = ['assert double(1) == 2', 'assert double(2) == 4', 'assert double(0) == 0'];
    // returns 2 for every input: right for 1 only, so 1 of 3 asserts pass
    expect(await reward(makeRewardInput({ completion: 'def double(x):\n    return 2', row: { tests } }))).toBeCloseTo(
      1 / 3,
      12,
    );
  });

  it('runs JavaScript with assert in scope', async () => {
    const reward = codeTests({ language: 'javascript' });
    const tests = [
      'assert.strictEqual(add(1, 2), 3)',
      'assert.strictEqual(add(-1, 1), 0)',
      'assert.strictEqual(add(2, 2), 5)',
    ];
    const completion = '```js\nfunction add(a, b) { return a + b; }\n```';
    expect(await reward(makeRewardInput({ completion, row: { tests } }))).toBeCloseTo(2 / 3, 12); // the third test is wrong on purpose
  });

  it('solutions and tests exchange values as plain data', async () => {
    const solution =
      'from collections import Counter\ndef count(xs):\n    return Counter(xs)\ndef pairs(n):\n    return ((i, i * i) for i in range(n))\ndef shout(s):\n    raise ValueError(s)';
    const tests = [
      "assert count('aab') == {'a': 2, 'b': 1}", // a Counter crosses as a dict
      'assert list(pairs(3)) == [(0, 0), (1, 1), (2, 4)]', // a generator crosses drained, tuples stay tuples
      "try:\n    shout('x')\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError", // built-in exceptions keep their type
      'assert isinstance(count, type(len)) is False', // the tests see a proxy, not the solution's function
    ];
    expect((await runTests(solution, tests, { language: 'python' })).results).toEqual([true, true, true, true]);
  });

  it('a syntax error scores 0, no tests scores null, a bad tests column is an error', async () => {
    const reward = codeTests();
    expect(await reward(makeRewardInput({ completion: 'def broken(:', row: { tests: ['assert True'] } }))).toBe(0);
    expect(await reward(makeRewardInput({ completion: 'x = 1', row: { tests: [] } }))).toBeNull();
    await expect(reward(makeRewardInput({ completion: 'x = 1', row: { tests: 3 } }))).rejects.toThrow(/column "tests"/);
  });
});

describe('sandbox containment', () => {
  it('reports which layers are active on this machine', () => {
    // on Linux as root with util-linux every layer is expected (user namespaces are not needed
    // there); without root the namespaces are those of a user namespace, and there is no separate uid
    const namespacesAllowed = process.env.GRPO_SANDBOX_NAMESPACES !== '0';
    if (process.platform === 'linux' && process.getuid?.() === 0)
      expect(capabilities).toEqual({
        namespaces: namespacesAllowed,
        userNamespaces: false,
        separateUser: true,
        resourceLimits: true,
        parentDeathSignal: true,
      });
    else {
      expect(capabilities.separateUser).toBe(false);
      expect(capabilities.namespaces).toBe(capabilities.userNamespaces);
    }
  });

  it('kills an infinite loop at the wall-clock limit', async () => {
    const result = await runSandboxed('while True:\n    pass', { language: 'python', timeoutMs: 300 });
    // The loop never ends by itself: a result at all means the 300 ms limit killed it.
    expect(result.timedOut).toBe(true);
    expect(result.durationMs).toBeGreaterThanOrEqual(300);
    expect(sandboxProcesses()).toEqual([]);
  });

  it('contains a fork bomb and leaves no process behind, even ones that left the process group', async () => {
    const bomb =
      'import os\nwhile True:\n    try:\n        if os.fork() == 0:\n            os.setsid()\n    except OSError:\n        pass';
    const result = await runSandboxed(bomb, { language: 'python', timeoutMs: 1000, maxProcesses: 16 });
    expect(result.timedOut).toBe(true);
    expect(sandboxProcesses()).toEqual([]);
  });

  it('caps live processes and kills background children when the program exits', async () => {
    const spawner =
      'import os, time\nn = 0\nfor i in range(100):\n    try:\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n        n += 1\n    except OSError:\n        break\nprint(n)';
    // 20 s, still short of the children's 30 s sleep: a busy machine (load 9 here, two test files at a
    // time) took 3 s to start the 15, and the limit is only a backstop for a sandbox that waits on them.
    const result = await runSandboxed(spawner, { language: 'python', maxProcesses: 16, timeoutMs: 20_000 });
    expect(result.timedOut).toBe(false); // it exits at once; the sleeping children must not keep it alive
    if (capabilities.separateUser) expect(Number(result.stdout.trim())).toBe(15); // 16 processes including itself
    expect(sandboxProcesses()).toEqual([]); // the 30 s sleepers are gone
  });

  it('a sandboxed program dies when the process that started it is killed', async () => {
    if (!capabilities.parentDeathSignal) return; // without setpriv there is no parent-death signal to test
    const directory = mkdtempSync(join(tmpdir(), 'grpo-parent-'));
    const script = join(directory, 'parent.mts');
    const sandboxModule = new URL('./code/sandbox.ts', import.meta.url).pathname;
    writeFileSync(
      script,
      `import { runSandboxed } from ${JSON.stringify(sandboxModule)};\nconsole.log(process.pid);\nawait runSandboxed('import time\\ntime.sleep(60)', { language: 'python', timeoutMs: 60000 });\n`,
    );
    const parent = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let marker = 'not-started';
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      const parentPid = await new Promise<number>((resolve) =>
        parent.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim()))),
      );
      marker = `grpo-sandbox-${parentPid}-`;
      const programRunning = () =>
        sandboxProcesses(marker).some((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('python3'));
      for (let wait = 0; wait < 100 && !programRunning(); wait++) await pause(50);
      expect(programRunning()).toBe(true); // the 60 s sleeper runs, past all the wrappers
      await pause(200);
      parent.kill('SIGKILL');
      for (let wait = 0; wait < 40 && sandboxProcesses(marker).length > 0; wait++) await pause(50);
      expect(sandboxProcesses(marker)).toEqual([]); // and is gone with its parent
    } finally {
      parent.kill('SIGKILL');
      for (const pid of sandboxProcesses(marker)) process.kill(pid, 'SIGKILL'); // only if the assertion failed
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('stops a program that floods its output', async () => {
    const result = await runSandboxed('while True:\n    print("x" * 10000)', {
      language: 'python',
      timeoutMs: 3000,
      maxOutputBytes: 50_000,
    });
    expect(result.outputTruncated).toBe(true);
    expect(result.timedOut).toBe(false); // killed for its output, long before the time limit
    expect(result.stdout.length + result.stderr.length).toBeLessThanOrEqual(50_000);
  });

  it('refuses memory beyond the limit', async () => {
    const hog =
      'try:\n    block = bytearray(1024 * 1024 * 1024)\n    print("allocated")\nexcept MemoryError:\n    print("refused")';
    const result = await runSandboxed(hog, { language: 'python', memoryMb: 256, timeoutMs: 3000 });
    expect(result.stdout.trim()).toBe('refused'); // 1 GiB under a 256 MiB limit
  });

  it("cannot see the parent environment or read the parent's private files", async () => {
    const secretDir = mkdtempSync(join(tmpdir(), 'grpo-secret-'));
    const secretFile = join(secretDir, 'secret.txt');
    writeFileSync(secretFile, 'TOP-SECRET', { mode: 0o600 });
    process.env.GRPO_TEST_SECRET = 'TOP-SECRET-ENV';
    try {
      const probe = `import os\nprint(sorted(os.environ))\nprint(os.listdir('.'))\ntry:\n    print(open(${JSON.stringify(secretFile)}).read())\nexcept OSError as error:\n    print('refused', type(error).__name__)`;
      const result = await runSandboxed(probe, { language: 'python' });
      expect(result.stdout).not.toContain('TOP-SECRET');
      expect(result.stdout).toContain("['HOME', 'LANG', 'PATH']"); // nothing inherited
      expect(result.stdout).toContain("['main.py']"); // the work dir holds only the program
      // with namespaces the host's /tmp is behind a private tmpfs; without, a separate uid is refused
      if (capabilities.namespaces) expect(result.stdout).toContain('refused FileNotFoundError');
      else if (capabilities.separateUser) expect(result.stdout).toContain('refused PermissionError');
    } finally {
      delete process.env.GRPO_TEST_SECRET;
      rmSync(secretDir, { recursive: true, force: true });
    }
  });

  it('has no network when namespaces are available', async () => {
    const server = createServer((socket) => socket.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const probe = `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=1).recv(5)\n    print('connected')\nexcept OSError:\n    print('no network')`;
      const result = await runSandboxed(probe, { language: 'python', timeoutMs: 3000 });
      expect(result.stdout.trim()).toBe(capabilities.namespaces ? 'no network' : 'connected');
    } finally {
      server.close();
    }
  });

  it('an exit before the tests or faked result lines do not pass', async () => {
    const exitEarly = await runTests('import sys\nsys.exit(0)', ['assert True'], { language: 'python' });
    expect(exitEarly.passed).toBe(0); // SystemExit at load time is a load error
    const hardExit = await runTests('import os\nos._exit(0)', ['assert True'], { language: 'python' });
    expect(hardExit.passed).toBe(0); // no result line at all
    const forged = await runTests('print("deadbeef pass 0")\nimport os\nos._exit(0)', ['assert False'], {
      language: 'python',
    });
    expect(forged.passed).toBe(0); // the nonce cannot be guessed
  });

  it('removes the work directory', async () => {
    const result = await runSandboxed('import os\nprint(os.getcwd())', { language: 'python' });
    expect(() => readdirSync(result.stdout.trim())).toThrow(/ENOENT/);
  });
});
