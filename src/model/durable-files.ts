/**
 * The file-system steps that make a write survive a crash: write-then-fsync of a file, fsync of a
 * folder (so a rename or a new entry is on disk), rename, mkdir and removal of a folder. Checkpoint
 * and run-folder writers use only these, so every step they take is counted in one place.
 *
 * The count exists for fault-injection tests: with `GRPO_FAULT_INJECT_AT=N` the process SIGKILLs
 * itself just before its N-th step (1-based); with `GRPO_FAULT_INJECT_LOG=<file>` each step is
 * appended there as `N kind path`. Neither is set in normal use and then the hook does nothing.
 *
 * Is not: a general fs wrapper. Reads, and the appends to metrics.jsonl, use node:fs directly.
 */
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmdirSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** The kinds of counted step, as they appear in the fault-injection log. */
export type FileStepKind = 'mkdir' | 'write' | 'fsync' | 'fsync-dir' | 'rename' | 'unlink' | 'rmdir';

const killAt = Number(process.env.GRPO_FAULT_INJECT_AT ?? 0);
const stepLog = process.env.GRPO_FAULT_INJECT_LOG;
let stepsTaken = 0;

/** Counts one step; kills the process right before it when it is the one GRPO_FAULT_INJECT_AT names. */
function faultPoint(kind: FileStepKind, path: string): void {
  stepsTaken++;
  if (stepLog) appendFileSync(stepLog, `${stepsTaken} ${kind} ${path}\n`);
  // SIGKILL, not an exception: no catch, finally or exit handler may tidy up, as in a real crash.
  if (stepsTaken === killAt) process.kill(process.pid, 'SIGKILL');
}

/** Creates (or truncates) `file`, writes all of `data` and fsyncs it before closing. */
export function writeFileDurably(file: string, data: Uint8Array | string): void {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const descriptor = openSync(file, 'w');
  try {
    faultPoint('write', file);
    let done = 0;
    while (done < bytes.length) done += writeSync(descriptor, bytes, done, bytes.length - done);
    faultPoint('fsync', file);
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
}

/** Fsyncs an existing file's contents (e.g. a log before a checkpoint records its length). */
export function syncFile(file: string): void {
  faultPoint('fsync', file);
  const descriptor = openSync(file, 'r');
  try {
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
}

/** Fsyncs a folder, which makes the entries created, renamed or removed in it durable. */
export function syncDirectory(directory: string): void {
  faultPoint('fsync-dir', directory);
  const descriptor = openSync(directory, 'r');
  try {
    fsyncSync(descriptor);
  } finally {
    closeSync(descriptor);
  }
}

/** Creates a folder (and missing parents); the parent is fsynced so the new entry survives a power cut. */
export function makeDirectory(directory: string): void {
  faultPoint('mkdir', directory);
  mkdirSync(directory, { recursive: true });
  syncDirectory(dirname(directory));
}

/** Renames atomically (same file system); the caller fsyncs the folders involved. */
export function renamePath(from: string, to: string): void {
  faultPoint('rename', to);
  renameSync(from, to);
}

/**
 * Removes a folder tree one entry at a time, so a kill can stop it halfway. Callers only remove
 * folders that carry a temporary name, never a published checkpoint under its final name.
 */
export function removeTree(path: string): void {
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
    faultPoint('unlink', path);
    unlinkSync(path);
    return;
  }
  for (const entry of entries) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) {
      removeTree(child);
    } else {
      faultPoint('unlink', child);
      unlinkSync(child);
    }
  }
  faultPoint('rmdir', path);
  rmdirSync(path);
}
