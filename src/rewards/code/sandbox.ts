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
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { killQuietly, removeFilesOfUids, settle, sweepUid, sweepWorkDir } from './processes.js';
import {
  HIDDEN_DIRECTORIES,
  SANDBOX_PATH,
  commands,
  freshUid,
  interpreter,
  python,
  sandboxCapabilities,
  type Limits,
} from './sandbox-commands.js';
import { SUPERVISOR_SCRIPT } from './supervisor.js';

export { sandboxCapabilities } from './sandbox-commands.js';

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
