/**
 * The checks that stop a run rather than let it train on nothing: non-finite steps in a row, and
 * reward failures (printed once per distinct message, warned when a step had no valid sample,
 * fatal after `limit` such steps in a row). They count in `TrainerState`, so they survive a resume.
 *
 * Is not: the reward runner (rewards/run.ts), which records the failures this reads.
 */
import type { ProgressReporter } from '../run/progress.js';
import type { TrainerState } from '../run/run-folder.js';
import type { StepBatch } from './step-batch.js';

/**
 * Reward failures are loud: each distinct message is printed once (and every failed cell is kept in
 * samples.jsonl), a step whose samples all lack a valid reward warns, and `limit` such steps in a row
 * stop the run — a broken reward must not train on nothing while the run reports success.
 */
export function reportRewardFailures(
  batch: StepBatch,
  state: TrainerState,
  progress: ProgressReporter,
  reported: Set<string>,
  limit: number,
): void {
  for (const errors of batch.errors) {
    for (const [reward, message] of Object.entries(errors ?? {})) {
      const key = `${reward}\u0000${message}`;
      if (reported.has(key)) continue;
      reported.add(key);
      progress.warn(
        `grpo: reward "${reward}" failed at step ${state.step + 1}: ${message} (its samples leave the loss; counted in reward/${reward}/invalid)`,
      );
    }
  }
  const noneValid = batch.samples.length > 0 && batch.valid.every((valid) => !valid);
  state.invalidSteps = noneValid ? (state.invalidSteps ?? 0) + 1 : 0;
  if (!noneValid) return;
  const firstError = Object.entries(batch.errors.find((errors) => errors !== null) ?? {})[0];
  const cause = firstError ? `reward "${firstError[0]}": ${firstError[1]}` : 'no reward applied';
  if (state.invalidSteps >= limit)
    throw new Error(
      `stopping: ${state.invalidSteps} consecutive steps had no sample with a valid reward (${cause}); fix the reward`,
    );
  progress.warn(
    `grpo: warning: step ${state.step + 1} had no sample with a valid reward (${cause}); nothing was learned`,
  );
}

/**
 * At the end of GRPO: a run none of whose steps had a sample with a valid reward learned nothing,
 * however few steps it had (too few to reach the consecutive-step limit), so it fails instead of
 * finishing (summary.json `failed`, exit code 1 from the CLI).
 */
export function refuseAllInvalid(state: TrainerState): void {
  if (state.phaseStep === 0 || (state.invalidSteps ?? 0) < state.phaseStep) return;
  throw new Error(
    `failed: none of the ${state.phaseStep} GRPO steps had a sample with a valid reward, so nothing was learned; fix the reward (its errors are printed above and kept in samples.jsonl)`,
  );
}

/** Counts a skipped (non-finite) step; `limit` in a row stop the run. */
export function guardSkips(state: TrainerState, applied: boolean, limit: number): void {
  state.consecutiveSkips = applied ? 0 : state.consecutiveSkips + 1;
  if (state.consecutiveSkips >= limit) {
    throw new Error(
      `stopping: ${state.consecutiveSkips} consecutive steps had a non-finite loss or gradient (step ${state.step}); lower the learning rate or check the rewards`,
    );
  }
}
