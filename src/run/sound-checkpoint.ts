/**
 * Which checkpoint a resume continues from, for text and flow runs alike: the newest sound one
 * (trainer-state.json passes its schema and every file has the size and SHA-256 recorded at save),
 * each newer damaged one skipped with its reason printed even in quiet runs. When every one is
 * damaged the resume stops and changes nothing, unless asked to start over (`restartDamaged`),
 * since starting over empties the logs.
 *
 * Is not: the restoring of weights and optimiser state (trainer/restore.ts, flow/flow-checkpoint.ts)
 * or the checks themselves (trainer-state.ts).
 */
import type { ProgressReporter } from './progress.js';
import type { RunFolder } from './run-folder.js';

/** Options of a resume. */
export interface ResumeOptions {
  /** When every checkpoint is damaged, start over from step 0 (emptying the logs) instead of stopping. */
  restartDamaged?: boolean;
}

/**
 * The newest sound checkpoint's step, with a warning for each newer one skipped; null when there is
 * none to resume from. Throws when checkpoints exist but all are damaged, unless `restartDamaged`.
 */
export function soundCheckpoint(
  folder: RunFolder,
  progress: Pick<ProgressReporter, 'warn'>,
  options: ResumeOptions,
): number | null {
  const steps = folder.stepFolders().reverse();
  const damaged: string[] = [];
  for (const step of steps) {
    const problem = folder.checkpointProblem(step);
    if (problem === null) return step;
    damaged.push(`step-${step}: ${problem}`);
    progress.warn(`skipping damaged checkpoint step-${step}: ${problem}`);
  }
  if (steps.length === 0) return null;
  if (!options.restartDamaged)
    throw new Error(
      `${folder.checkpointsDirectory}: every checkpoint is damaged (${damaged.join('; ')}); nothing was changed. Restore a checkpoint, or resume with --restart-damaged to start the run over from step 0 (this empties metrics.jsonl and samples.jsonl)`,
    );
  progress.warn(`every checkpoint is damaged; starting ${folder.directory} over from step 0 (--restart-damaged)`);
  return null;
}
