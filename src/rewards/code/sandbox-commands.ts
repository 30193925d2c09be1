/**
 * The sandbox's command lines: which containment layers this machine offers (detected once), the
 * fresh uids, the interpreter and prlimit arguments, and the supervisor's argv for the program and
 * the grader in each mode (docs/sandbox.md). Pure construction: nothing here spawns the program.
 *
 * Is not: the runner (sandbox.ts spawns the supervisor and enforces the limits) or the supervisor.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { tasksOfUid } from './processes.js';
import type { SandboxCapabilities, SandboxLanguage } from './sandbox.js';

export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';
export const HIDDEN_DIRECTORIES = ['/home', '/root', '/run', '/var/tmp'];
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
export function freshUid(): number {
  uidCounter = (uidCounter + 1) % 4096;
  return 1_500_000_000 + (((process.pid % 100_000) * 4096 + uidCounter) % 400_000_000);
}

/** The python3 the sandbox's PATH finds, resolved, so hiding directories never hides it. */
export function python(): string {
  for (const directory of SANDBOX_PATH.split(':'))
    if (existsSync(join(directory, 'python3'))) return realpathSync(join(directory, 'python3'));
  return 'python3';
}

/** The interpreter command line for a program (a file, or code given inline for the grader). */
export function interpreter(
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

export interface Limits {
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
export function commands(
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
