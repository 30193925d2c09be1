/**
 * The inside of one reward worker thread (workers.ts starts it, for `grpo serve-rewards` or training): it
 * builds the rewards from the pool's source (a module's export called with plain-data arguments,
 * since functions cannot cross threads), says which it has, then scores one call at a time with
 * `scoreRewards` (per-call timeout and failure policy as in training) and posts the cells back.
 *
 * Is not: the time limit of last resort. A synchronous reward that never returns holds this
 * thread; the pool sees the call overrun and terminates the whole worker.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { weightsAt } from './combine.js';
import { scoreRewards } from './run.js';
import { isBatchReward, isGroupReward, type NamedReward, type RewardInput } from './types.js';
import type { RewardCall, RewardCallResult, RewardSource, WorkerHello } from './workers.js';

async function loadRewards(source: RewardSource): Promise<NamedReward[]> {
  const module = (await import(source.module)) as Record<string, unknown>;
  const build = module[source.exportName];
  if (typeof build !== 'function') throw new Error(`${source.module} has no function export "${source.exportName}"`);
  const rewards = (await build(source.args)) as NamedReward[];
  if (!Array.isArray(rewards) || rewards.length === 0)
    throw new Error(`${source.module}#${source.exportName} returned no rewards`);
  return rewards;
}

/** Runs in the worker: loads the rewards, then answers calls until the pool terminates it. */
export async function runRewardWorker(): Promise<void> {
  const port = parentPort!;
  let rewards: NamedReward[];
  try {
    rewards = await loadRewards((workerData as { source: RewardSource }).source);
  } catch (error) {
    port.postMessage({ type: 'failed', message: (error as Error).message } satisfies WorkerHello);
    return;
  }
  port.postMessage({
    type: 'ready',
    names: rewards.map(({ name }) => name),
    // The server has no training step: a step-dependent (annealed) weight is read at step 0.
    weights: weightsAt(rewards, 0),
    // A batched (TRL-shaped) reward sees a request's rows together, as a group reward sees its group.
    group: rewards.map(({ reward }) => isGroupReward(reward) || isBatchReward(reward)),
    columns: rewards.map(({ columns }) => [...(columns ?? [])]),
  } satisfies WorkerHello);
  port.on('message', (call: RewardCall) => {
    void scoreRewards([rewards[call.column]!], [call.inputs as RewardInput[]], {
      timeoutMs: call.timeoutMs,
      concurrency: 1,
    }).then(
      (matrix) =>
        port.postMessage({
          id: call.id,
          status: matrix.status,
          scores: [...matrix.scores],
          failures: matrix.failures.map(({ sample, status, message }) => ({ sample, status, message })),
        } satisfies RewardCallResult),
      (error: unknown) =>
        port.postMessage({
          id: call.id,
          status: call.inputs.map(() => 'error' as const),
          scores: call.inputs.map(() => Number.NaN),
          failures: call.inputs.map((_, sample) => ({ sample, status: 'error', message: (error as Error).message })),
        } satisfies RewardCallResult),
    );
  });
}
