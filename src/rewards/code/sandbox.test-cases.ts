/**
 * Hostile completions for the sandbox, Python and JavaScript, and a runner that plays the
 * training process: it runs each case, then notes what ended it (the program's own exit, or the
 * sandbox's time or output limit), whether any process of the sandbox is left, and whether the
 * case was contained. Nothing is judged by the clock: a case that never ends by itself must come
 * back saying which limit stopped it, and a daemon's output from after its limit must not appear.
 * `sandbox.test.ts` bundles this file and runs it as root and as `nobody`, with and without
 * namespaces.
 *
 * Not shipped (tsconfig.build excludes `*.test-*.ts`) and not a vitest file itself: it must run
 * as a plain script under another uid, where vitest and the source tree may not be readable.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { runSandboxed, runTests, sandboxCapabilities, type SandboxResult } from '../code.js';
import type { SandboxLanguage } from './sandbox.js';

/** What the test hands the runner: things to attack that live outside the sandbox. */
export interface HostileTargets {
  port: number;
  unixPath: string;
  abstractName: string;
  /** A descriptor of a file the runner's uid could not open, leaked to the runner without close-on-exec. */
  secretFd: number;
  secret: string;
}

/**
 * What ended a run. `watchdog` is the runner's backstop (WATCHDOG_MS, far past any case's limit):
 * it means the sandbox neither ended the run nor let the program end it, and never passes.
 */
export type Ending = 'exit' | 'time limit' | 'output limit' | 'watchdog';

/** One case's outcome as the runner saw it. */
export interface HostileOutcome {
  name: string;
  language: SandboxLanguage;
  contained: boolean;
  detail: string;
  /** What ended the run: the program (it exited), the sandbox's time or output limit, or the test's backstop. */
  ending: Ending;
  /** What had to end it (see HostileCase.endsBy). */
  mustEndBy: Ending;
  /** pid, start of /proc/pid/stat and NSpid of each. */
  leftovers: string[];
  /** Files the program wrote to the host's /tmp or /dev/shm that outlived the run. */
  filesLeft: string[];
}

interface HostileCase {
  name: string;
  language: SandboxLanguage;
  timeoutMs: number;
  /** A program run alone, or a wrong solution run against tests it must not pass. */
  program?: (targets: HostileTargets) => string;
  solution?: string;
  /** For a program: contained when this holds for its result. */
  check?: (result: SandboxResult, targets: HostileTargets) => boolean;
  /**
   * What must end it: the sandbox's time or output limit for a program that never ends by itself,
   * else its own exit (so a case cannot pass only because a busy machine ran it out of time).
   */
  endsBy: Exclude<Ending, 'watchdog'>;
}

const TESTS = {
  python: ['assert add(1, 2) == 3', 'assert add(2, 2) == 4'],
  javascript: ['assert.strictEqual(add(1, 2), 3)', 'assert.strictEqual(add(2, 2), 4)'],
};
const MEMORY_MB = 256;
const SCRATCH_MB = 32;
const FILE_BYTES = 8 * 1024 * 1024;
/**
 * The runner's backstop, only so that a sandbox that fails to stop a case gives a named failure
 * instead of a hung test. A case's own limit (2 or 20 s) is a timer set just after this one and
 * due at least 40 s earlier, so it always fires first, however busy the machine: this ends a run
 * only when the sandbox did not (its limit removed or its kill broken), or a killed run took 40 s
 * to report back.
 */
const WATCHDOG_MS = 60_000;
/** Printed by a daemon case's background process once it has slept 60 s: in a result, it means the run waited for it. */
const LATE = 'LATE-DAEMON-OUTPUT';
/**
 * The time limit of a case that ends by itself (or by its output limit): far above its run time,
 * so that a busy machine cannot turn it into a timeout (which could also pass a case vacuously:
 * a wrong solution killed before its tests ran passes none). Only the fork bombs, which never end,
 * keep a short limit, and must be stopped by it.
 */
const OWN_PACE_MS = 20_000;
const notConnected = (result: SandboxResult) =>
  !result.stdout.includes('connected') || result.stdout.includes('not connected');
const wroteAtMost = (limit: number) => (result: SandboxResult) =>
  Math.max(0, ...[...result.stdout.matchAll(/wrote (\d+)/g)].map((match) => Number(match[1]))) <= limit;

const PYTHON_CASES: HostileCase[] = [
  {
    name: 'fork bomb',
    language: 'python',
    timeoutMs: 2000,
    program: () =>
      'import os\nwhile True:\n    try:\n        if os.fork() == 0:\n            os.setsid()\n    except OSError:\n        pass',
    check: () => true,
    endsBy: 'time limit',
  },
  {
    name: 'setsid double-fork daemon',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      `import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(60)\n        print('${LATE}', flush=True)\n    os._exit(0)\nprint("parent done")`,
    check: (result) => result.stdout.includes('parent done') && !result.stdout.includes(LATE),
    endsBy: 'exit',
  },
  {
    name: 'kill(getppid(), SIGKILL)',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      'import os\ntry:\n    os.kill(os.getppid(), 9)\nexcept OSError as error:\n    print("refused", error)\nprint("after kill")',
    check: () => true,
    endsBy: 'exit',
  },
  {
    name: 'TCP to 127.0.0.1',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${t.port}), timeout=1)\n    print('connected')\nexcept OSError as error:\n    print('not connected', error)`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'host unix socket (path)',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect(${JSON.stringify(t.unixPath)})\n    print('connected')\nexcept OSError as error:\n    print('not connected', error)`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'host unix socket (abstract)',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect('\\0${t.abstractName}'.ljust(108, '\\0'))  # libuv binds the whole padded sun_path\n    print('connected')\nexcept OSError as error:\n    print('not connected', error)`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'read an inherited fd',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `import os\nfound = ''\nfor fd in os.listdir('/proc/self/fd'):\n    try:\n        with open('/proc/self/fd/' + fd, 'rb') as handle:\n            found += handle.read(100).decode(errors='replace')\n    except Exception:\n        pass\ntry:\n    found += os.pread(${t.secretFd}, 100, 0).decode(errors='replace')\nexcept OSError:\n    pass\nprint('fds', os.listdir('/proc/self/fd'))\nprint(found)`,
    check: (result, t) => !result.stdout.includes(t.secret),
    endsBy: 'exit',
  },
  {
    // regular files only: reading another process's pipes can steal libuv's lock byte and hang it
    name: "read another process's fds",
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      `import os\nfound = ''\nfor pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n    try:\n        fds = os.listdir('/proc/%s/fd' % pid)\n    except OSError:\n        continue\n    for fd in fds:\n        path = '/proc/%s/fd/%s' % (pid, fd)\n        try:\n            if os.path.isfile(path):\n                with open(path, 'rb') as handle:\n                    found += handle.read(100).decode(errors='replace')\n        except Exception:\n            pass\nprint(found)`,
    check: (result, t) => !result.stdout.includes(t.secret),
    endsBy: 'exit',
  },
  {
    name: 'large /dev/shm write',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () => writer('python', '/dev/shm/grpo-hostile-shm'),
    check: wroteAtMost(FILE_BYTES),
    endsBy: 'exit',
  },
  {
    name: 'large /tmp write',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () => writer('python', '/tmp/grpo-hostile-tmp'),
    check: wroteAtMost(FILE_BYTES),
    endsBy: 'exit',
  },
  {
    name: 'memory bomb',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      'blocks = []\ntry:\n    while True:\n        blocks.append(bytearray(16 * 1024 * 1024))\nexcept MemoryError:\n    pass\nprint("held", 16 * len(blocks), "MiB")',
    check: (result) => Number(/held (\d+)/.exec(result.stdout)?.[1] ?? 0) <= MEMORY_MB,
    endsBy: 'exit',
  },
  {
    name: 'output flood',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    program: () => 'while True:\n    print("x" * 10000)',
    check: (result) => result.outputTruncated && result.stdout.length <= 50_000,
    endsBy: 'output limit',
  },
  {
    name: 'replace builtins.exec',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    solution: 'import builtins\nbuiltins.exec = lambda *args, **kwargs: None\ndef add(a, b):\n    return a - b',
    endsBy: 'exit',
  },
  {
    name: 'nonce from __main__, gc and frames',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    solution:
      'import __main__, gc, re, sys\nseen = set(v for v in vars(__main__).values() if isinstance(v, str))\nseen |= set(o for o in gc.get_objects() if isinstance(o, str))\nframe = sys._getframe()\nwhile frame:\n    seen |= set(v for v in frame.f_globals.values() if isinstance(v, str))\n    frame = frame.f_back\nfor nonce in [s for s in seen if re.fullmatch("[0-9a-f]{24}", s)]:\n    for i in range(2):\n        print(nonce, "pass", i, flush=True)\ndef add(a, b):\n    return a - b',
    endsBy: 'exit',
  },
  {
    name: 'sys.exit(0) before the tests',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    solution: 'import sys\nsys.exit(0)',
    endsBy: 'exit',
  },
  {
    name: 'patch assert helpers and AssertionError, always-equal result',
    language: 'python',
    timeoutMs: OWN_PACE_MS,
    solution:
      'import builtins, unittest\nunittest.TestCase.assertEqual = lambda *args: None\nbuiltins.AssertionError = type("Fake", (Exception,), {})\nclass Same(int):\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Same(0)',
    endsBy: 'exit',
  },
];

const JAVASCRIPT_CASES: HostileCase[] = [
  {
    name: 'fork bomb',
    language: 'javascript',
    timeoutMs: 2000,
    program: () =>
      "const { spawn } = require('child_process');\nsetInterval(() => { for (let i = 0; i < 20; i++) { try { spawn('/bin/sh', ['-c', 'sleep 60'], { detached: true, stdio: 'ignore' }).on('error', () => {}); } catch {} } }, 1);",
    check: () => true,
    endsBy: 'time limit',
  },
  {
    name: 'setsid double-fork daemon',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      `const { spawn } = require('child_process');\nspawn('/bin/sh', ['-c', '(sleep 60; echo ${LATE}) & exit 0'], { detached: true, stdio: ['ignore', 1, 2] }).unref();\nconsole.log('parent done');`,
    check: (result) => result.stdout.includes('parent done') && !result.stdout.includes(LATE),
    endsBy: 'exit',
  },
  {
    name: 'kill(ppid, SIGKILL)',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      "try { process.kill(process.ppid, 'SIGKILL'); } catch (error) { console.log('refused', error.code); }\nconsole.log('after kill');",
    check: () => true,
    endsBy: 'exit',
  },
  {
    name: 'TCP to 127.0.0.1',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `require('net').connect(${t.port}, '127.0.0.1').on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => console.log('not connected', e.code));`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'host unix socket (path)',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `require('net').connect(${JSON.stringify(t.unixPath)}).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => console.log('not connected', e.code));`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'host unix socket (abstract)',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `require('net').connect('\\0${t.abstractName}').on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => console.log('not connected', e.code));`,
    check: notConnected,
    endsBy: 'exit',
  },
  {
    name: 'read an inherited fd',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: (t) =>
      `const fs = require('fs');\nlet found = '';\nfor (const fd of fs.readdirSync('/proc/self/fd')) { try { if (fs.statSync('/proc/self/fd/' + fd).isFile()) found += fs.readFileSync('/proc/self/fd/' + fd, 'utf8').slice(0, 100); } catch {} }\ntry { const b = Buffer.alloc(100); found += b.toString('utf8', 0, fs.readSync(${t.secretFd}, b, 0, 100, 0)); } catch {}\nconsole.log('fds', fs.readdirSync('/proc/self/fd').join(' '), found);`,
    check: (result, t) => !result.stdout.includes(t.secret),
    endsBy: 'exit',
  },
  {
    name: 'large /dev/shm write',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () => writer('javascript', '/dev/shm/grpo-hostile-shm'),
    check: wroteAtMost(FILE_BYTES),
    endsBy: 'exit',
  },
  {
    name: 'large /tmp write',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () => writer('javascript', '/tmp/grpo-hostile-tmp'),
    check: wroteAtMost(FILE_BYTES),
    endsBy: 'exit',
  },
  {
    name: 'memory bomb',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () =>
      "const blocks = [];\ntry { for (;;) { blocks.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log('held', 16 * blocks.length, 'MiB'); } } catch {}",
    check: (result) => Math.max(0, ...[...result.stdout.matchAll(/held (\d+)/g)].map((m) => Number(m[1]))) <= MEMORY_MB,
    endsBy: 'exit',
  },
  {
    name: 'output flood',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    program: () => "const line = 'x'.repeat(10000) + '\\n';\nfor (;;) require('fs').writeSync(1, line);",
    check: (result) => result.outputTruncated && result.stdout.length <= 50_000,
    endsBy: 'output limit',
  },
  {
    name: 'replace assert',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    solution: 'globalThis.assert = new Proxy({}, { get: () => () => {} });\nfunction add(a, b) { return a - b; }',
    endsBy: 'exit',
  },
  {
    name: 'replace vm.runInThisContext',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    solution:
      "process.getBuiltinModule('vm').runInThisContext = () => undefined;\nfunction add(a, b) { return a - b; }",
    endsBy: 'exit',
  },
  {
    name: 'process.exit(0) before the tests',
    language: 'javascript',
    timeoutMs: OWN_PACE_MS,
    solution: 'process.exit(0);',
    endsBy: 'exit',
  },
];

/** Every hostile case, Python first. */
export const HOSTILE_CASES: readonly HostileCase[] = [...PYTHON_CASES, ...JAVASCRIPT_CASES];

/** A program that writes 1 MiB blocks to `path` until refused, printing how much it wrote. */
function writer(language: SandboxLanguage, path: string): string {
  if (language === 'python') {
    return `written = 0\ntry:\n    with open(${JSON.stringify(path)}, 'wb') as handle:\n        for _ in range(200):\n            handle.write(b'x' * 1048576)\n            handle.flush()\n            written += 1048576\n            print('wrote', written, flush=True)\nexcept OSError as error:\n    print('refused', error)`;
  }
  return `const fs = require('fs');\nlet written = 0;\ntry { const fd = fs.openSync(${JSON.stringify(path)}, 'w'); const block = Buffer.alloc(1048576, 120); for (let i = 0; i < 200; i++) { fs.writeSync(fd, block); written += block.length; console.log('wrote', written); } } catch (error) { console.log('refused', error.code); }`;
}

/** Whether `uid` is one of the fresh uids `sandbox.ts` hands out in process `pid` (so other runs on the machine are not counted). */
export function ownUid(uid: number, pid: number): boolean {
  const offset = uid - 1_500_000_000;
  return (
    offset >= 0 &&
    offset < 400_000_000 &&
    (((offset - (pid % 100_000) * 4096) % 400_000_000) + 400_000_000) % 400_000_000 < 4096
  );
}

/** Live processes of this sandbox run: its fresh uids (root), the caller's uid (otherwise), or its work-dir marker. */
function leftovers(): string[] {
  const uid = process.getuid?.() ?? 0;
  const marker = `grpo-sandbox-${process.pid}-`;
  const pids: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const owner = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      const sandboxUid = uid === 0 ? ownUid(owner, process.pid) : owner === uid;
      if (sandboxUid || readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker))
        pids.push(
          `${entry} ${readFileSync(`/proc/${entry}/stat`, 'utf8').slice(0, 60)} ${/^NSpid:.*$/m.exec(status)?.[0]}`,
        );
    } catch {
      // ended while we looked
    }
  }
  return pids;
}

/** Runs one case and judges it; a wrong solution is contained when it passes no test while the right one passes all. */
async function runCase(hostile: HostileCase, targets: HostileTargets): Promise<HostileOutcome> {
  const watchdog = new AbortController();
  const backstop = setTimeout(() => watchdog.abort(), WATCHDOG_MS);
  const limits = { timeoutMs: hostile.timeoutMs, memoryMb: MEMORY_MB, signal: watchdog.signal };
  let contained = false;
  let detail: string;
  let result: SandboxResult | null = null;
  try {
    if (hostile.program) {
      result = await runSandboxed(hostile.program(targets), {
        language: hostile.language,
        ...limits,
        scratchMb: SCRATCH_MB,
        maxFileBytes: FILE_BYTES,
        maxOutputBytes: 50_000,
      });
      contained = hostile.check!(result, targets);
      detail = `exit ${result.exitCode}${result.timedOut ? ' timed out' : ''}${result.outputTruncated ? ' truncated' : ''} after ${result.durationMs} ms: ${(result.stdout + result.stderr).slice(0, 200).replace(/\s+/g, ' ')}`;
    } else {
      const run = await runTests(hostile.solution!, TESTS[hostile.language], { language: hostile.language, ...limits });
      result = run.sandbox;
      contained = run.passed === 0;
      detail = `passed ${run.passed}/${run.total}, load error ${run.loadError}, after ${result.durationMs} ms`;
    }
  } catch (error) {
    if (!watchdog.signal.aborted) throw error;
    detail = `stopped by the runner's ${WATCHDOG_MS} ms backstop: ${String(error)}`; // runTests throws when aborted
  } finally {
    clearTimeout(backstop);
  }
  // A limit ended the run only if its flag is set and the sandbox died of the SIGKILL that comes
  // with it (exit code null): a flag alone is set before the kill, which might not happen.
  const killed = result !== null && result.exitCode === null;
  const ending: Ending = watchdog.signal.aborted
    ? 'watchdog' // the backstop fired before the result came back: the sandbox did not end the run
    : killed && result!.timedOut
      ? 'time limit'
      : killed && result!.outputTruncated
        ? 'output limit'
        : 'exit';
  // files a program without a private /tmp may leave behind are noted, then cleared for the next case
  const filesLeft = ['/dev/shm/grpo-hostile-shm', '/tmp/grpo-hostile-tmp'].filter((path) => existsSync(path));
  for (const path of filesLeft) rmSync(path, { force: true });
  return {
    name: hostile.name,
    language: hostile.language,
    contained,
    detail,
    ending,
    mustEndBy: hostile.endsBy,
    leftovers: leftovers(),
    filesLeft,
  };
}

/** Runs every case in turn, printing one JSON line per outcome, then a summary line with the layers used. */
export async function runHostileCases(targets: HostileTargets): Promise<void> {
  const control = await Promise.all(
    (['python', 'javascript'] as const).map((language) =>
      runTests(
        language === 'python' ? 'def add(a, b):\n    return a + b' : 'function add(a, b) { return a + b; }',
        TESTS[language],
        { language, timeoutMs: OWN_PACE_MS },
      ),
    ),
  );
  for (const hostile of HOSTILE_CASES) console.log(JSON.stringify(await runCase(hostile, targets)));
  console.log(
    JSON.stringify({
      done: true,
      uid: process.getuid?.(),
      capabilities: sandboxCapabilities(),
      controlPassed: control.map((run) => run.passed),
    }),
  );
}

if (process.argv[2] === '--run-hostile-cases') await runHostileCases(JSON.parse(process.argv[3]!) as HostileTargets);
