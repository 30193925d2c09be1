/**
 * What the sandbox knows about processes and files from /proc, for the cases the kernel does not
 * clean up by itself: counting a uid's tasks (RLIMIT_NPROC), sweeping a fresh uid or a work dir
 * when there is no PID namespace, and waiting for a PID namespace to be torn down.
 *
 * Not the policy (sandbox.ts decides when each applies), and nothing here runs untrusted code.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Tasks (threads count, as RLIMIT_NPROC counts them) of a uid, from /proc. */
export function tasksOfUid(uid: number): number {
  let tasks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status))
        tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // ended while we looked
    }
  }
  return tasks;
}

/** Live processes (by pid; zombies are already dead) whose real uid is one of `uids`, from /proc. */
export function processesOfUids(uids: number[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      if (uids.includes(uid) && !/^State:\s+Z/m.test(status)) pids.push(Number(entry));
    } catch {
      // ended while we looked
    }
  }
  return pids;
}

/** Whether any thread of `pid` is still running: an exiting init's leader is a zombie while another of its threads tears the namespace down. */
function anyThreadAlive(pid: string): boolean {
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (!/^[ZX]/.test(readFileSync(`/proc/${pid}/task/${thread}/stat`, 'utf8').split(') ').pop()!)) return true;
    } catch {
      // the thread ended while we looked
    }
  }
  return false;
}

/**
 * Waits until the supervisor (found by its process name, `title`) and every process naming the
 * run's work dir have no running thread left. Killing `unshare` returns before the kernel has
 * torn the PID namespace down; the supervisor is its init and ends only after everything in it.
 * Its command line reads empty while it exits, its name does not, hence the name.
 */
export async function settle(title: string, marker: string): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < 5000) {
    const pids = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
      .filter((entry) => {
        try {
          const ours =
            readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === title ||
            readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker);
          return ours && anyThreadAlive(entry);
        } catch {
          return false;
        }
      });
    if (pids.length === 0) return;
    if (Date.now() - started > 1000) for (const pid of pids) killQuietly(Number(pid)); // should not happen; never wait forever
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Without namespaces or a fresh uid: kills the caller's processes still working in the work dir (a daemon that left it escapes). */
export function sweepWorkDir(workDir: string): void {
  for (let round = 0; round < 20; round++) {
    const pids = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
      .filter((entry) => {
        try {
          const cwd = readlinkSync(`/proc/${entry}/cwd`);
          return cwd === workDir || cwd.startsWith(`${workDir}/`);
        } catch {
          return false; // another user's, or gone
        }
      });
    if (pids.length === 0) return;
    for (const pid of pids) killQuietly(Number(pid));
  }
}

/** Without a private tmpfs: what a fresh uid left in the shared temporary directories is its own, and goes. */
export function removeFilesOfUids(uids: number[]): void {
  for (const directory of ['/tmp', '/dev/shm', '/var/tmp']) {
    let entries: string[] = [];
    try {
      entries = readdirSync(directory);
    } catch {
      continue;
    }
    for (const entry of entries) {
      try {
        if (uids.includes(lstatSync(join(directory, entry)).uid))
          rmSync(join(directory, entry), { recursive: true, force: true });
      } catch {
        // gone already
      }
    }
  }
}

export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Kills every process of a fresh uid. `kill -1` run as that uid reaches them all in one pass of
 * the kernel's task list, which a fork bomb cannot outrun the way it outruns a /proc scan.
 */
export function sweepUid(uid: number): void {
  for (let round = 0; round < 20 && processesOfUids([uid]).length > 0; round++) {
    spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'kill', '-KILL', '-1'], {
      stdio: 'ignore',
      env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    });
    for (const pid of processesOfUids([uid])) killQuietly(pid);
  }
}
