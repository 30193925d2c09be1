/**
 * MixGRPO's sliding window (Li et al. 2025, arXiv:2507.21802; `FlowMatchSlidingWindowScheduler`,
 * 'progressive' strategy): only the steps inside a window of `size` consecutive sampler steps are
 * stochastic (SDE) and trained; every other step is the deterministic Euler (ODE) step, so a rollout
 * costs no log-probs there and training touches only `size` steps. The window starts at step 0 and
 * moves `stride` steps later every `shiftEvery` RL iterations; at the end of the schedule it stays
 * there, or with `rollBack` starts again from 0.
 *
 * Is: the window's position and the per-step sampler names. Is not: the loss (flow-grpo.ts).
 */

/** The window's shape and motion. */
export interface SlidingWindow {
  /** Steps inside the window (MixGRPO: 4 of 25). */
  size: number;
  /** RL iterations between moves (MixGRPO's iters_per_group: 25). */
  shiftEvery: number;
  /** Steps moved each time (MixGRPO's prog_overlap_step: 1). */
  stride: number;
  /** Start again from step 0 after the last position. */
  rollBack: boolean;
}

/** Throws naming the field when the window cannot fit the schedule. */
export function checkSlidingWindow(window: SlidingWindow, stepCount: number): void {
  for (const field of ['size', 'shiftEvery', 'stride'] as const)
    if (!Number.isInteger(window[field]) || window[field] < 1)
      throw new Error(`window.${field} must be a positive integer, got ${window[field]}`);
  if (window.size > stepCount)
    throw new Error(`window.size ${window.size} is larger than the ${stepCount} sampler steps`);
}

/** The window's steps at RL iteration `iteration` (0-based), and the sampler name of every step. */
export function slidingWindowAt(
  window: SlidingWindow,
  stepCount: number,
  iteration: number,
  stochasticStep: string,
): { trained: number[]; steps: string[] } {
  checkSlidingWindow(window, stepCount);
  const positions = stepCount - window.size + 1;
  const moved = Math.floor(iteration / window.shiftEvery) * window.stride;
  const start = window.rollBack ? moved % positions : Math.min(moved, positions - 1);
  const trained = Array.from({ length: window.size }, (_, k) => start + k);
  const steps = Array.from({ length: stepCount }, (_, index) =>
    index >= start && index < start + window.size ? stochasticStep : 'ode',
  );
  return { trained, steps };
}
