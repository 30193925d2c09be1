/**
 * The `status` field of a run's summary.json and what goes with it: `running` with the process id,
 * host and start time (so a reader can tell a live run from one whose process vanished), `failed`
 * with the error as `reason`, and `interrupted` when the caller's AbortSignal stopped the run (the
 * CLI aborts it on SIGINT/SIGTERM). `finished` is written by the trainer with the final results.
 *
 * A signal handler runs only when the loop yields to the event loop, and a step's compute does not:
 * so the trainer yields and checks the signal at step boundaries (`stopIfAborted`), where no
 * checkpoint is being written. A process killed outright (SIGKILL) still writes nothing; readers
 * (dashboard/run-files.ts `inferStatus`) infer `interrupted` from the recorded pid.
 * Is not: the writing of summary.json itself (run-folder.ts).
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

/** Thrown by {@link stopIfAborted}: the run stopped because its AbortSignal fired. */
export class RunInterrupted extends Error {
  constructor(
    readonly reason: string,
    /** Steps completed when the run stopped. */
    readonly step: number,
  ) {
    super(`run interrupted by ${reason} after step ${step}`);
  }
}

/**
 * Yields to the event loop (so a pending signal handler can run), then throws RunInterrupted if
 * `signal` has fired. Called between steps only, never while a checkpoint is being written.
 */
export async function stopIfAborted(signal: AbortSignal | undefined, step: number): Promise<void> {
  if (!signal) return;
  await new Promise((resolve) => setImmediate(resolve));
  if (signal.aborted) throw new RunInterrupted(String(signal.reason ?? 'abort'), step);
}

/** Records that the run was stopped on request; never throws, like markFailed. */
export function markInterrupted(folder: RunFolder, interruption: RunInterrupted): void {
  try {
    folder.writeSummary({
      ...folder.readSummary(),
      status: 'interrupted',
      reason: `stopped by ${interruption.reason} after step ${interruption.step}; the last checkpoint is kept (grpo train --resume continues)`,
      endedAt: new Date().toISOString(),
    });
  } catch {
    // As in markFailed: the interruption itself still propagates.
  }
}
