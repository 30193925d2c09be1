/**
 * Learning-rate schedules as plain functions of the step: constant, linear warmup then constant,
 * linear decay, and cosine decay — each with optional warmup and a floor.
 *
 * Is not: stateful. The trainer asks `learningRateAt(schedule, step)` each step, so resume needs no
 * schedule state.
 */

export interface ScheduleConfig {
  kind: 'constant' | 'linear' | 'cosine';
  /** Peak learning rate reached after warmup. */
  learningRate: number;
  /** Steps of linear warmup from 0 (0 = start at the peak). */
  warmupSteps?: number;
  /** Total steps, needed by the decaying kinds. */
  totalSteps?: number;
  /** Final learning rate as a fraction of the peak (decaying kinds). */
  minRatio?: number;
}

export const scheduleKinds = ['constant', 'linear', 'cosine'] as const;

/** The learning rate for 0-based `step` (the step about to be taken). */
export function learningRateAt(schedule: ScheduleConfig, step: number): number {
  const warmup = schedule.warmupSteps ?? 0;
  const peak = schedule.learningRate;
  if (step < warmup) return (peak * (step + 1)) / warmup;
  if (schedule.kind === 'constant') return peak;
  const total = schedule.totalSteps;
  if (!total || total <= warmup) {
    throw new Error(
      `schedule: kind "${schedule.kind}" needs totalSteps greater than warmupSteps (${warmup}), got ${total}`,
    );
  }
  const minimum = peak * (schedule.minRatio ?? 0);
  const progress = Math.min(1, (step - warmup) / (total - warmup));
  if (schedule.kind === 'linear') return minimum + (peak - minimum) * (1 - progress);
  if (schedule.kind === 'cosine') return minimum + (peak - minimum) * 0.5 * (1 + Math.cos(Math.PI * progress));
  throw new Error(`schedule: unknown kind "${String(schedule.kind)}"; known kinds: ${scheduleKinds.join(', ')}`);
}
