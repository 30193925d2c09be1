/**
 * The `status` field of a run's summary.json and what goes with it: `running` with the process id,
 * host and start time (so a reader can tell a live run from one whose process vanished), and
 * `failed` with the error as `reason`. `finished` is written by the trainer with the final results.
 *
 * Is not: `interrupted`. A killed process writes nothing, and a signal handler would not run until
 * the loop next yields to the event loop (a step can take minutes), so Ctrl-C and SIGTERM keep
 * their default action; readers (dashboard/run-files.ts `inferStatus`) infer `interrupted` from
 * the recorded pid. Nor the writing of summary.json itself (run-folder.ts).
 */
import { hostname } from 'node:os';
import { RunFolder } from './run-folder.js';

/** Marks the run as running in this process; a reason left by an earlier failure or interruption goes. */
export function markRunning(folder: RunFolder, task: string): void {
  const { reason: _reason, endedAt: _endedAt, ...previous } = folder.readSummary();
  folder.writeSummary({
    ...previous,
    status: 'running',
    task,
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
  });
}

/** Records that the run stopped on an error; never throws, so the original error is what the caller sees. */
export function markFailed(folder: RunFolder, error: unknown): void {
  const reason = error instanceof Error ? error.message : String(error);
  try {
    folder.writeSummary({ ...folder.readSummary(), status: 'failed', reason, endedAt: new Date().toISOString() });
  } catch {
    // The summary cannot be written (disk full, folder gone); the error itself still propagates.
  }
}
