/**
 * Runs rewards over groups of completions: per-call timeout, bounded concurrency, and the failure
 * policy. Produces the per-sample × per-reward score matrix that `combine.ts` turns into one reward
 * per sample and the trainer logs.
 *
 * Failure policy: a reward that throws, times out, or returns a non-finite number other than NaN
 * marks its cell `error`/`timeout`; it is never scored 0. `combine.ts` then takes the sample out of
 * the loss and counts it. `null` (and NaN, following TRL's `nansum` convention) means "not applicable".
 *
 * Not here: weights, normalisation, anything about tensors. A synchronous reward cannot be
 * interrupted by a timeout (JavaScript has no preemption); the timeout is enforced for async work,
 * and the call's `signal` is aborted so rewards that spawn processes or requests can stop them.
 */
import {
  isBatchReward,
  isGroupReward,
  type NamedReward,
  type AnyReward,
  type RewardInput,
  type RewardValue,
} from './types.js';

/** What happened in one (sample, reward) cell. */
export type CellStatus = 'ok' | 'null' | 'error' | 'timeout';

/** One failed reward call, for logs. */
export interface RewardFailure {
  sample: number;
  reward: string;
  status: 'error' | 'timeout';
  message: string;
}

/** Scores of every reward on every sample; samples are numbered group by group, in order. */
export interface RewardMatrix {
  names: readonly string[];
  sampleCount: number;
  /** Row-major [sample × reward]; NaN where the cell is not `ok`. */
  scores: Float64Array;
  status: CellStatus[];
  failures: RewardFailure[];
  /** Sizes of the groups, so callers can recover group boundaries. */
  groupSizes: readonly number[];
}

/**
 * Scores groups of completions into the matrix: `scoreRewards` on this thread, or a worker pool's
 * `score` (workers.ts), which stops a call that never returns.
 */
export type RewardScorer = (groups: ReadonlyArray<readonly RewardInput[]>) => Promise<RewardMatrix>;

/** Knobs for {@link scoreRewards}. */
export interface ScoreRewardsOptions {
  /** Per-call wall-clock limit in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** Most reward calls in flight at once (default 8). */
  concurrency?: number;
}

/** Thrown inside the runner when a call exceeds its time limit. */
class RewardTimeout extends Error {}

/** Runs `work` with a deadline; the signal handed to `work` is aborted when the deadline passes. */
async function withTimeout<T>(work: (signal: AbortSignal) => T | Promise<T>, timeoutMs: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new RewardTimeout(`timed out after ${timeoutMs} ms`));
      reject(new RewardTimeout(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(() => work(controller.signal)), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs async tasks with at most `limit` in flight. */
async function runLimited(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      await task();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
}

/** Classifies one returned value; throws for values that are neither a finite number, NaN nor null. */
function checkValue(value: unknown): RewardValue {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number') throw new Error(`returned ${typeof value}, expected a number or null`);
  if (Number.isNaN(value)) return null;
  if (!Number.isFinite(value)) throw new Error(`returned ${value}, expected a finite number`);
  return value;
}

/**
 * The input with this call's abort signal, its accessors kept as accessors: a spread would read them,
 * and the trainer's `completionTokenTexts` is a getter that decodes every token when first read.
 */
function withSignal(input: RewardInput, signal: AbortSignal): RewardInput {
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(input)) as RewardInput;
  copy.signal = signal;
  return copy;
}

/** Scores every sample of every group with every reward. */
export async function scoreRewards(
  rewards: readonly NamedReward[],
  groups: ReadonlyArray<readonly RewardInput[]>,
  options: ScoreRewardsOptions = {},
): Promise<RewardMatrix> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const concurrency = options.concurrency ?? 8;
  const names = rewards.map((entry) => entry.name);
  if (new Set(names).size !== names.length)
    throw new Error(`scoreRewards: duplicate reward names in [${names.join(', ')}]`);
  const sampleCount = groups.reduce((total, group) => total + group.length, 0);
  const width = rewards.length;
  const scores = new Float64Array(sampleCount * width).fill(Number.NaN);
  const status: CellStatus[] = new Array<CellStatus>(sampleCount * width).fill('null');
  const failures: RewardFailure[] = [];

  const record = (sample: number, column: number, outcome: { value?: unknown; error?: unknown }): void => {
    const cell = sample * width + column;
    try {
      if (outcome.error !== undefined) throw outcome.error;
      const value = checkValue(outcome.value);
      if (value !== null) {
        scores[cell] = value;
        status[cell] = 'ok';
      }
    } catch (error) {
      const timedOut = error instanceof RewardTimeout;
      status[cell] = timedOut ? 'timeout' : 'error';
      const message = error instanceof Error ? error.message : String(error);
      failures.push({ sample, reward: names[column]!, status: status[cell] as 'error' | 'timeout', message });
    }
  };

  const tasks: Array<() => Promise<void>> = [];
  // A batch reward is one call over every sample of every group; a throw, a timeout or a list of
  // the wrong length fails all its cells, as a group reward's does for its group.
  const allInputs = groups.flat();
  rewards.forEach((entry, column) => {
    const reward = entry.reward;
    if (!isBatchReward(reward) || allInputs.length === 0) return;
    tasks.push(async () => {
      try {
        const values = await withTimeout((signal) => reward.scoreBatch(allInputs, signal), timeoutMs);
        if (!Array.isArray(values) || values.length !== allInputs.length) {
          throw new Error(
            `batched reward returned ${Array.isArray(values) ? values.length : typeof values} scores for a batch of ${allInputs.length}`,
          );
        }
        values.forEach((value, index) => record(index, column, { value }));
      } catch (error) {
        allInputs.forEach((_, index) => record(index, column, { error }));
      }
    });
  });
  let firstSample = 0;
  for (const group of groups) {
    const start = firstSample;
    rewards.forEach((entry, column) => {
      const reward = entry.reward;
      if (isBatchReward(reward)) return;
      if (isGroupReward(reward)) {
        tasks.push(async () => {
          try {
            const values = await withTimeout((signal) => reward.scoreGroup(group, signal), timeoutMs);
            if (!Array.isArray(values) || values.length !== group.length) {
              throw new Error(
                `group reward returned ${Array.isArray(values) ? values.length : typeof values} scores for a group of ${group.length}`,
              );
            }
            values.forEach((value, index) => record(start + index, column, { value }));
          } catch (error) {
            group.forEach((_, index) => record(start + index, column, { error }));
          }
        });
      } else {
        group.forEach((input, index) => {
          tasks.push(async () => {
            try {
              const value = await withTimeout((signal) => reward(withSignal(input, signal)), timeoutMs);
              record(start + index, column, { value });
            } catch (error) {
              record(start + index, column, { error });
            }
          });
        });
      }
    });
    firstSample += group.length;
  }
  await runLimited(tasks, concurrency);
  failures.sort((a, b) => a.sample - b.sample || names.indexOf(a.reward) - names.indexOf(b.reward));
  return { names, sampleCount, scores, status, failures, groupSizes: groups.map((group) => group.length) };
}

/** The score of one cell, or `null` when it is not `ok`. */
export function cellScore(matrix: RewardMatrix, sample: number, reward: string): RewardValue {
  const column = matrix.names.indexOf(reward);
  if (column < 0) throw new Error(`no reward named "${reward}"; known: ${matrix.names.join(', ')}`);
  const cell = sample * matrix.names.length + column;
  return matrix.status[cell] === 'ok' ? matrix.scores[cell]! : null;
}

/** One completion scored by any form of reward (a group or batch reward sees a list of one). */
export async function scoreOne(reward: AnyReward, input: RewardInput): Promise<RewardValue> {
  if (isBatchReward(reward)) return (await reward.scoreBatch([input]))[0] ?? null;
  if (isGroupReward(reward)) return (await reward.scoreGroup([input]))[0] ?? null;
  return reward(input);
}
