/**
 * Runs untrusted code (model completions) in a separate process with a wall-clock timeout, a
 * memory limit, a process-count limit, an output cap, an empty temporary working directory that
 * is removed afterwards, and a clean environment (PATH, LANG and HOME = the work dir only).
 *
 * What it contains, on Linux, when it runs as root with util-linux present (`unshare`,
 * `prlimit`, `setpriv`): the code runs as a fresh unprivileged uid unique to the run (so it cannot
 * read files that are not world-readable, and RLIMIT_NPROC caps its processes), in its own PID
 * namespace (killing the namespace's init kills every descendant, even ones that called setsid;
 * `/proc` shows only the sandbox's processes) and its own network namespace (no network at all).
 * Without root it falls back to a process group, rlimits and the clean environment. With
 * `setpriv --pdeathsig` the run is killed even when this process itself dies mid-run.
 *
 * What it does NOT contain: it is process isolation, not a security boundary like a VM or
 * gVisor. The code still sees the host filesystem's world-readable files (e.g. /etc, the source
 * tree if it is world-readable), can write to world-writable places such as /tmp (bounded by the
 * file-size limit and the time limit), can use CPU up to the timeout, and shares the kernel.
 * Do not put secrets in world-readable files on a machine that runs untrusted code.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Languages the sandbox can run. */
export type SandboxLanguage = 'python' | 'javascript';

/** Options of {@link runSandboxed}. */
export interface SandboxOptions {
  language: SandboxLanguage;
  /** Wall-clock limit (default 5000 ms); the whole process tree is killed when it passes. */
  timeoutMs?: number;
  /** Address-space (Python) or data-segment (JavaScript) limit in MiB (default 512). */
  memoryMb?: number;
  /** stdout + stderr kept, in bytes (default 64 KiB); producing more kills the run. */
  maxOutputBytes?: number;
  /** Most processes the run may hold at once (default 16; enforced when a separate uid is used). */
  maxProcesses?: number;
  /** Largest file the code may write, in bytes (default 16 MiB). */
  maxFileBytes?: number;
  /** Extra files written into the work directory before the run (name → content). */
  files?: Record<string, string>;
  /** Text written to the program's standard input. */
  stdin?: string;
  /** Aborting it kills the run. */
  signal?: AbortSignal;
}

/** What happened in a sandboxed run. */
export interface SandboxResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  outputTruncated: boolean;
  durationMs: number;
}

/** Which containment layers this machine offers. */
export interface SandboxCapabilities {
  /** PID + network (+ mount for /proc) namespaces through `unshare`. */
  namespaces: boolean;
  /** Running the code as a separate unprivileged uid through `setpriv`. */
  separateUser: boolean;
  /** rlimits through `prlimit`. */
  resourceLimits: boolean;
  /** The sandbox is killed if this process dies mid-run (`setpriv --pdeathsig`). */
  parentDeathSignal: boolean;
}

const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';
let capabilities: SandboxCapabilities | undefined;

function works(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 5000, env: { PATH: SANDBOX_PATH } });
  return result.status === 0;
}

/** Detects (once) which containment layers are available. */
export function sandboxCapabilities(): SandboxCapabilities {
  if (!capabilities) {
    const root = process.platform === 'linux' && process.getuid?.() === 0;
    capabilities = {
      namespaces: root && works('unshare', ['--pid', '--fork', '--kill-child', '--net', '--mount-proc', 'true']),
      separateUser: root && works('setpriv', ['--reuid=1', '--regid=1', '--clear-groups', 'true']),
      resourceLimits: process.platform === 'linux' && works('prlimit', ['--nofile=64', 'true']),
      parentDeathSignal: process.platform === 'linux' && works('setpriv', ['--pdeathsig=SIGKILL', '--', 'true']),
    };
  }
  return capabilities;
}

let runCounter = 0;

/** A uid unique to this run (no passwd entry needed), so RLIMIT_NPROC and leftovers are per run. */
function freshUid(): number {
  runCounter = (runCounter + 1) % 4096;
  return 1_500_000_000 + ((process.pid % 100_000) * 4096 + runCounter) % 400_000_000;
}

/** Processes (by pid) whose real uid is `uid`, from /proc. */
function processesOfUid(uid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status)) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** The interpreter command line for a program file. */
function interpreter(language: SandboxLanguage, file: string, memoryMb: number): string[] {
  if (language === 'python') return ['python3', '-I', '-B', file];
  return ['node', `--max-old-space-size=${Math.max(16, Math.floor(memoryMb / 2))}`, file];
}

/** Builds the wrapped command: [unshare …] [prlimit …] [setpriv …] interpreter. */
function wrappedCommand(options: Required<Pick<SandboxOptions, 'language' | 'memoryMb' | 'maxProcesses' | 'maxFileBytes' | 'timeoutMs'>>, file: string, uid: number | null): string[] {
  const layers = sandboxCapabilities();
  const command: string[] = [];
  if (layers.parentDeathSignal) command.push('setpriv', '--pdeathsig=SIGKILL', '--'); // dies with us, taking the namespace along
  if (layers.namespaces) command.push('unshare', '--pid', '--fork', '--kill-child', '--net', '--mount-proc', '--');
  if (layers.resourceLimits) {
    const bytes = options.memoryMb * 1024 * 1024;
    const cpuSeconds = Math.ceil(options.timeoutMs / 1000) + 1; // backstop if the wall-clock kill were missed
    command.push('prlimit', options.language === 'python' ? `--as=${bytes}` : `--data=${bytes}`, `--fsize=${options.maxFileBytes}`, `--cpu=${cpuSeconds}`, '--core=0', '--nofile=64');
    if (uid !== null) command.push(`--nproc=${options.maxProcesses}`);
    command.push('--');
  }
  // changing uid clears the parent-death signal, so the program (the namespace's init) sets it again
  if (uid !== null) command.push('setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--pdeathsig=SIGKILL', '--');
  command.push(...interpreter(options.language, file, options.memoryMb));
  return command;
}

/** Runs `code` as a Python or JavaScript program under the sandbox; never throws for the program's own failures. */
export async function runSandboxed(code: string, options: SandboxOptions): Promise<SandboxResult> {
  const settings = {
    language: options.language,
    timeoutMs: options.timeoutMs ?? 5000,
    memoryMb: options.memoryMb ?? 512,
    maxProcesses: options.maxProcesses ?? 16,
    maxFileBytes: options.maxFileBytes ?? 16 * 1024 * 1024,
  };
  const maxOutputBytes = options.maxOutputBytes ?? 64 * 1024;
  const uid = sandboxCapabilities().separateUser ? freshUid() : null;
  const workDir = mkdtempSync(join(tmpdir(), `grpo-sandbox-${process.pid}-`)); // the pid lets a test find only its own leftovers
  try {
    const file = join(workDir, options.language === 'python' ? 'main.py' : 'main.js');
    writeFileSync(file, code);
    for (const [name, content] of Object.entries(options.files ?? {})) {
      if (!/^[\w.-]+$/.test(name) || name.startsWith('.')) throw new Error(`sandbox: file name "${name}" must be a plain name`);
      writeFileSync(join(workDir, name), content);
    }
    if (uid !== null) {
      for (const name of readdirSync(workDir)) chownSync(join(workDir, name), uid, uid);
      chownSync(workDir, uid, uid);
    }
    chmodSync(workDir, 0o700);
    return await execute(wrappedCommand(settings, file, uid), workDir, settings.timeoutMs, maxOutputBytes, options);
  } finally {
    if (uid !== null) for (const pid of processesOfUid(uid)) killQuietly(pid); // belt and braces: nothing of this uid survives
    rmSync(workDir, { recursive: true, force: true });
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Spawns the wrapped command and enforces time and output limits. */
function execute(command: string[], workDir: string, timeoutMs: number, maxOutputBytes: number, options: SandboxOptions): Promise<SandboxResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd: workDir,
      env: { PATH: SANDBOX_PATH, LANG: 'C.UTF-8', HOME: workDir },
      detached: true, // its own process group, killed as a whole
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let kept = 0;
    let timedOut = false;
    let outputTruncated = false;
    const killTree = (): void => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL'); // the group: unshare, the namespace init, and the program
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
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    child.stdin.on('error', () => {}); // the program may exit without reading its input
    child.stdin.end(options.stdin ?? '');
    const timer = setTimeout(() => {
      timedOut = true;
      killTree();
    }, timeoutMs);
    const onAbort = (): void => killTree();
    options.signal?.addEventListener('abort', onAbort);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`sandbox: could not start ${command[0]}: ${error.message}`));
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      killTree(); // anything left in the group (a background child of a program that exited)
      resolve({
        exitCode,
        stdout: Buffer.concat(chunks.stdout).toString('utf8'),
        stderr: Buffer.concat(chunks.stderr).toString('utf8'),
        timedOut,
        outputTruncated,
        durationMs: Date.now() - started,
      });
    });
  });
}

/** A random marker the program cannot guess, for result lines (see `code.ts`). */
export function newNonce(): string {
  return randomBytes(12).toString('hex');
}
