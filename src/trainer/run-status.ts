/**
 * The `status` field of a run's summary.json and what goes with it: `running` with the process id,
 * host and start time (so a reader can tell a live run from one whose process vanished), `failed`
 * with the error as `reason`, `interrupted` with the signal as `reason`. `finished` is written by
 * the trainer with the final results.
 *
 * Is not: the reader's rule for a vanished process (dashboard/run-files.ts `inferStatus`, which
 * imports nothing from here), nor the writing of summary.json (run-folder.ts).
 */
import { hostname } from 'node:os';
import { RunFolder } from './run-folder.js';

/** Marks the run as running in this process; a reason left by an earlier failure or interruption goes. */
export function markRunning(folder: RunFolder, task: string): void {
  const { reason: _reason, endedAt: _endedAt, ...previous } = folder.readSummary();
  folder.writeSummary({ ...previous, status: 'running', task, pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString() });
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

/** Records that the run was stopped from outside (a signal), when the process still gets to say so. */
export function markInterrupted(runDirectory: string, reason: string): void {
  const folder = new RunFolder(runDirectory);
  const summary = folder.readSummary();
  if (summary.status !== 'running') return; // finished or failed already says more
  folder.writeSummary({ ...summary, status: 'interrupted', reason, endedAt: new Date().toISOString() });
}
