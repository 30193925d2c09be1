/**
 * Runs untrusted code (model completions) in separate processes under a wall-clock timeout, a
 * memory limit, a process-count limit, an output cap, a clean environment (PATH, LANG, HOME = the
 * work dir) and a work directory removed afterwards. For test runs a trusted grader runs beside
 * the code, in a process the code cannot see, signal or patch (see `harness.ts`).
 *
 * Which layers hold depends on the machine (docs/sandbox.md states each mode's guarantees):
 * - root with namespaces: PID, network and mount namespaces; the code runs as a fresh uid in a
 *   nested PID namespace (getppid() is 0, the grader is invisible), RLIMIT_NPROC per fresh uid.
 * - unprivileged with user namespaces: the same namespaces, owned by a user namespace; the code
 *   runs in a nested user + PID namespace whose own process count RLIMIT_NPROC caps.
 * - no namespaces: a fresh uid as root, else the caller's uid; rlimits, /proc tracking of
 *   descendants and an intermediate parent. No network or unix-socket isolation.
 * In every mode descriptors the training process leaked are closed (supervisor.ts).
 *
 * What it is not: a VM or gVisor. The kernel is shared, and the code can read the host's
 * world-readable files (as the caller's uid in the unprivileged modes, minus /home, /root, /run).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { killQuietly, removeFilesOfUids, settle, sweepUid, sweepWorkDir, tasksOfUid } from './processes.js';
import { SUPERVISOR_SCRIPT } from './supervisor.js';

/** Languages the sandbox can run. */
export type SandboxLanguage = 'python' | 'javascript';

/** Options of {@link runSandboxed}. */
export interface SandboxOptions {
  language: SandboxLanguage;
  /** Wall-clock limit (default 5000 ms); every process of the run is killed when it passes. */
  timeoutMs?: number;
  /** Memory of the run in MiB (default 512): the program's address space (Python) or data segment (JavaScript) plus the scratch tmpfs. */
  memoryMb?: number;
  /** Part of `memoryMb` given to the private /tmp and /dev/shm (default a quarter, at most 64 MiB). */
  scratchMb?: number;
  /** stdout + stderr kept, in bytes (default 64 KiB); producing more kills the run. */
  maxOutputBytes?: number;
  /** Most processes (threads) the code may hold at once (default 16). */
  maxProcesses?: number;
  /** Largest file the code may write, in bytes (default 16 MiB). */
  maxFileBytes?: number;
  /** Extra files written into the work directory before the run (name → content). */
  files?: Record<string, string>;
  /** Text written to the program's standard input (not used with a grader). */
  stdin?: string;
  /** A trusted program in the same language run beside the code; see {@link SandboxResult.graderOutput}. */
  grader?: { code: string; input: string };
  /** Aborting it kills the run. */
  signal?: AbortSignal;
}

/** What happened in a sandboxed run. */
export interface SandboxResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** What the grader wrote on its fd 3 (empty without a grader); the code has no way to write there. */
  graderOutput: string;
  timedOut: boolean;
  outputTruncated: boolean;
  durationMs: number;
}

/** Which containment layers this machine offers. */
export interface SandboxCapabilities {
  /** PID + network + mount namespaces (as root directly, otherwise inside a user namespace). */
  namespaces: boolean;
  /** The namespaces are owned by an unprivileged user namespace (the caller is not root). */
  userNamespaces: boolean;
  /** The code and the grader run as fresh unprivileged uids (root only). */
  separateUser: boolean;
  /** rlimits through `prlimit`. */
  resourceLimits: boolean;
  /** The sandbox is killed if this process dies mid-run (`setpriv --pdeathsig`). */
  parentDeathSignal: boolean;
}

const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';
const HIDDEN_DIRECTORIES = ['/home', '/root', '/run', '/var/tmp'];
const NODE_THREADS = 16;
let capabilities: SandboxCapabilities | undefined;

function works(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 5000, env: { PATH: SANDBOX_PATH } });
  return result.status === 0;
}

/**
 * Detects (once) which containment layers are available. `GRPO_SANDBOX_NAMESPACES=0` turns the
 * namespaces off, to exercise the fallback or where `unshare` misbehaves.
 */
export function sandboxCapabilities(): SandboxCapabilities {
  if (!capabilities) {
    const linux = process.platform === 'linux';
    const root = linux && process.getuid?.() === 0;
    const allowed = linux && process.env.GRPO_SANDBOX_NAMESPACES !== '0';
    const rootNamespaces =
      root &&
      allowed &&
      works('unshare', ['--pid', '--fork', '--kill-child', '--net', '--mount', '--mount-proc', 'true']);
    // the nested user + PID namespace the code runs in must work too, and tmpfs must mount
    const nested =
      'mount -t tmpfs tmpfs /tmp && unshare --user --map-root-user --pid --fork --kill-child --mount --mount-proc true';
    const userNamespaces =
      !root &&
      allowed &&
      works('unshare', [
        '--user',
        '--map-root-user',
        '--pid',
        '--fork',
        '--kill-child',
        '--net',
        '--mount',
        '--mount-proc',
        'sh',
        '-c',
        nested,
      ]);
    capabilities = {
      namespaces: rootNamespaces || userNamespaces,
      userNamespaces,
      separateUser: root && works('setpriv', ['--reuid=1', '--regid=1', '--clear-groups', 'true']),
      resourceLimits: linux && works('prlimit', ['--nofile=64', 'true']),
      parentDeathSignal: linux && works('setpriv', ['--pdeathsig=SIGKILL', '--', 'true']),
    };
  }
  return capabilities;
}

let uidCounter = 0;

/** A uid unique to this process and call (no passwd entry needed), so RLIMIT_NPROC and the final sweep are per run. */
function freshUid(): number {
  uidCounter = (uidCounter + 1) % 4096;
  return 1_500_000_000 + (((process.pid % 100_000) * 4096 + uidCounter) % 400_000_000);
}

/** The python3 the sandbox's PATH finds, resolved, so hiding directories never hides it. */
function python(): string {
  for (const directory of SANDBOX_PATH.split(':'))
    if (existsSync(join(directory, 'python3'))) return realpathSync(join(directory, 'python3'));
  return 'python3';
}

/** The interpreter command line for a program (a file, or code given inline for the grader). */
function interpreter(
  language: SandboxLanguage,
  memoryMb: number,
  program: { file: string } | { code: string },
): string[] {
  if (language === 'python')
    return ['python3', '-I', '-B', ...('file' in program ? [program.file] : ['-c', program.code])];
  return [
    process.execPath,
    `--max-old-space-size=${Math.max(16, Math.floor(memoryMb / 2))}`,
    ...('file' in program ? [program.file] : ['-e', program.code]),
  ];
}

interface Limits {
  language: SandboxLanguage;
  timeoutMs: number;
  memoryMb: number;
  scratchMb: number;
  maxProcesses: number;
  maxFileBytes: number;
}

/** prlimit arguments (without the process count) for the program or the grader. */
function rlimits(limits: Limits, memoryMb: number): string[] {
  if (!sandboxCapabilities().resourceLimits) return [];
  const bytes = memoryMb * 1024 * 1024;
  const cpuSeconds = Math.ceil(limits.timeoutMs / 1000) + 1; // backstop if the wall-clock kill were missed
  return [
    'prlimit',
    limits.language === 'python' ? `--as=${bytes}` : `--data=${bytes}`,
    `--fsize=${limits.maxFileBytes}`,
    `--cpu=${cpuSeconds}`,
    '--core=0',
    '--nofile=64',
  ];
}

/** The command lines the supervisor runs for the program and the grader, per mode. */
function commands(
  limits: Limits,
  program: string[],
  grader: string[] | null,
  uids: { program: number; grader: number } | null,
) {
  const layers = sandboxCapabilities();
  const memory = rlimits(limits, limits.memoryMb - limits.scratchMb);
  // Node's own threads (V8 workers, libuv) count as tasks too, so JavaScript gets them on top
  const nproc = (count: number) =>
    memory.length ? [...memory, `--nproc=${count + (limits.language === 'javascript' ? NODE_THREADS : 0)}`, '--'] : [];
  const asUser = (uid: number) => [
    'setpriv',
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--pdeathsig=SIGKILL',
    '--',
  ];
  const graderLimits = rlimits(limits, limits.memoryMb);
  const graderCommand = grader && [
    ...(uids ? asUser(uids.grader) : []),
    ...(graderLimits.length ? [...graderLimits, '--'] : []),
    ...grader,
  ];
  if (layers.namespaces && uids) {
    // nested PID namespace: the program cannot see the grader or the supervisor; its own uid caps its processes
    return {
      program: [
        'unshare',
        '--pid',
        '--fork',
        '--kill-child',
        '--mount',
        '--mount-proc',
        '--',
        ...nproc(limits.maxProcesses),
        ...asUser(uids.program),
        ...program,
      ],
      grader: graderCommand,
    };
  }
  if (layers.namespaces) {
    // a nested user namespace counts its own processes (plus the unshare parent that entered it) and locks the read-only mounts
    return {
      program: [
        ...nproc(limits.maxProcesses + 1),
        'unshare',
        '--user',
        '--map-root-user',
        '--pid',
        '--fork',
        '--kill-child',
        '--mount',
        '--mount-proc',
        '--',
        ...program,
      ],
      grader: graderCommand,
    };
  }
  if (uids)
    return { program: [...nproc(limits.maxProcesses), ...asUser(uids.program), ...program], grader: graderCommand };
  // the caller's uid: RLIMIT_NPROC counts all its tasks, so the budget is added to what runs now;
  // `sh` stands between so that killing getppid() hits it, not the supervisor
  const budget = tasksOfUid(process.getuid?.() ?? 0) + 64 + limits.maxProcesses;
  const death = layers.parentDeathSignal ? ['setpriv', '--pdeathsig=SIGKILL', '--'] : [];
  const clean = 'env -i PATH="$PATH" LANG="$LANG" HOME="$HOME"'; // sh would add PWD
  return {
    program: [...nproc(budget), ...death, 'sh', '-c', `${death.join(' ')} ${clean} "$@"; exit $?`, 'sh', ...program],
    grader: graderCommand,
  };
}

/** Runs `code` as a Python or JavaScript program under the sandbox; never throws for the program's own failures. */
export async function runSandboxed(code: string, options: SandboxOptions): Promise<SandboxResult> {
  const memoryMb = options.memoryMb ?? 512;
  const limits: Limits = {
    language: options.language,
    timeoutMs: options.timeoutMs ?? 5000,
    memoryMb,
    scratchMb: options.scratchMb ?? Math.min(64, Math.floor(memoryMb / 4)),
    maxProcesses: options.maxProcesses ?? 16,
    maxFileBytes: options.maxFileBytes ?? 16 * 1024 * 1024,
  };
  if (limits.scratchMb < 1 || limits.scratchMb >= memoryMb)
    throw new Error(`sandbox: scratchMb must be at least 1 and below memoryMb (${memoryMb})`);
  const layers = sandboxCapabilities();
  const uids = layers.separateUser ? { program: freshUid(), grader: freshUid() } : null;
  const hostWorkDir = mkdtempSync(join(tmpdir(), `grpo-sandbox-${process.pid}-`)); // the pid lets a test find only its own leftovers
  const workDir = layers.namespaces ? join('/tmp', basename(hostWorkDir)) : hostWorkDir;
  const title = `gs-${randomBytes(6).toString('hex')}`; // the supervisor's process name (15 characters at most)
  try {
    const file = join(workDir, options.language === 'python' ? 'main.py' : 'main.js');
    writeFileSync(join(hostWorkDir, basename(file)), code);
    for (const [name, content] of Object.entries(options.files ?? {})) {
      if (!/^[\w.-]+$/.test(name) || name.startsWith('.') || name.startsWith('supervisor.'))
        throw new Error(`sandbox: file name "${name}" must be a plain name`);
      writeFileSync(join(hostWorkDir, name), content);
    }
    const grader = options.grader ? interpreter(options.language, memoryMb, { code: options.grader.code }) : null;
    // niced, so that a program spinning on every core cannot starve the trainer's timers and kills
    const argv = commands(
      limits,
      ['nice', '-n', '10', ...interpreter(options.language, limits.memoryMb - limits.scratchMb, { file })],
      grader,
      uids,
    );
    const config = {
      title,
      path: SANDBOX_PATH,
      workDir,
      scratchBytes: layers.namespaces ? limits.scratchMb * 1024 * 1024 : null,
      hide: [...HIDDEN_DIRECTORIES, homedir()],
      keep: [realpathSync(process.execPath), python()],
      owner: uids?.program ?? null,
      program: { argv: argv.program, stdin: options.stdin ?? '', detached: layers.namespaces },
      grader: argv.grader && { argv: argv.grader, input: options.grader!.input },
      maxReplyBytes: 16 * 1024 * 1024,
      sweep: { poll: !layers.namespaces && !uids, uids: !layers.namespaces && uids ? [uids.program, uids.grader] : [] },
    };
    writeFileSync(join(hostWorkDir, 'supervisor.json'), JSON.stringify(config));
    writeFileSync(join(hostWorkDir, 'supervisor.cjs'), SUPERVISOR_SCRIPT);
    const command: string[] = [];
    if (layers.parentDeathSignal) command.push('setpriv', '--pdeathsig=SIGKILL', '--'); // dies with us, taking the namespaces along
    if (layers.namespaces) {
      command.push(
        'unshare',
        ...(layers.userNamespaces ? ['--user', '--map-root-user'] : []),
        '--pid',
        '--fork',
        '--kill-child',
        '--net',
        '--mount',
        '--mount-proc',
        '--',
      );
    }
    command.push(process.execPath, '--max-old-space-size=64', join(hostWorkDir, 'supervisor.cjs'));
    return await execute(command, hostWorkDir, limits.timeoutMs, options.maxOutputBytes ?? 64 * 1024, options.signal);
  } finally {
    await settle(title, basename(hostWorkDir));
    if (uids) for (const uid of [uids.program, uids.grader]) sweepUid(uid); // belt and braces: nothing of these uids survives
    if (uids && !layers.namespaces) removeFilesOfUids([uids.program, uids.grader]);
    if (!uids && !layers.namespaces) sweepWorkDir(hostWorkDir);
    rmSync(hostWorkDir, { recursive: true, force: true });
  }
}

/** Spawns the supervisor and enforces time and output limits; resolves when it has exited, without waiting for stray pipe holders. */
function execute(
  command: string[],
  workDir: string,
  timeoutMs: number,
  maxOutputBytes: number,
  signal: AbortSignal | undefined,
): Promise<SandboxResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd: workDir,
      env: { PATH: SANDBOX_PATH, LANG: 'C.UTF-8', HOME: workDir },
      detached: true, // its own process group, killed as a whole
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const streams = {
      stdout: child.stdio[1] as Readable,
      stderr: child.stdio[2] as Readable,
      grader: child.stdio[3] as Readable,
    };
    const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[], grader: [] as Buffer[] };
    let kept = 0;
    let timedOut = false;
    let outputTruncated = false;
    const killTree = (): void => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL'); // the group: unshare and the supervisor; the namespaces die with it
        } catch {
          killQuietly(child.pid);
        }
      }
    };
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const room = maxOutputBytes - kept;
      if (room <= 0 || chunk.length > room) {
        if (room > 0) chunks[stream].push(chunk.subarray(0, room));
        kept = maxOutputBytes;
        if (!outputTruncated) {
          outputTruncated = true;
          killTree();
        }
        return;
      }
      chunks[stream].push(chunk);
      kept += chunk.length;
    };
    streams.stdout.on('data', collect('stdout'));
    streams.stderr.on('data', collect('stderr'));
    streams.grader.on('data', (chunk: Buffer) => chunks.grader.push(chunk));
    streams.grader.on('error', () => {});
    const timer = setTimeout(() => {
      timedOut = true;
      killTree();
    }, timeoutMs);
    const onAbort = (): void => killTree();
    signal?.addEventListener('abort', onAbort);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`sandbox: could not start ${command[0]}: ${error.message}`));
    });
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      killTree(); // anything left in the group
      // output already written is drained; a stray process still holding a pipe is not waited for
      const ended = Object.values(streams).map(
        (stream) =>
          new Promise((done) => (stream.readableEnded || stream.destroyed ? done(null) : stream.once('close', done))),
      );
      const grace = new Promise((done) => setTimeout(done, 200));
      void Promise.race([Promise.all(ended), grace]).then(() => {
        for (const stream of Object.values(streams)) stream.destroy();
        resolve({
          exitCode,
          stdout: Buffer.concat(chunks.stdout).toString('utf8'),
          stderr: Buffer.concat(chunks.stderr).toString('utf8'),
          graderOutput: Buffer.concat(chunks.grader).toString('utf8'),
          timedOut,
          outputTruncated,
          durationMs: Date.now() - started,
        });
      });
    });
  });
}

/** A random marker the program cannot guess, for result lines (see `code.ts`). */
export function newNonce(): string {
  return randomBytes(12).toString('hex');
}
