/**
 * A run's reward workers (`rewardWorkers.threads` > 0): a pool of worker threads built from the
 * run's reward source, whose scorer replaces the run's in-process one until the run ends. A reward
 * call past `rewardWorkers.timeoutMs` has its worker stopped, even a synchronous loop, and is a
 * failed reward naming the reward (the sample leaves the loss, as for a reward that throws); the
 * run goes on with a replacement worker. Checked before the first step: the workers built the
 * rewards the run has, by name and in order.
 *
 * Is not: the pool (rewards/workers.ts) or where the source comes from (`grpo train` sets it).
 */
import { RewardWorkerPool } from '../rewards/workers.js';
import type { RunContext } from './setup.js';

/** The context scoring in workers when the config asks for them, and how to stop them. */
export async function withRewardWorkers(
  context: RunContext,
): Promise<{ context: RunContext; close: () => Promise<void> }> {
  const { threads, timeoutMs, memoryMb } = context.config.rewardWorkers;
  if (threads === 0) return { context, close: async () => {} };
  if (!context.rewardSource) throw new Error('rewardWorkers.threads: this run has no reward source for the workers');
  // Training scores one batch at a time: every worker serves it (a server keeps one for other clients).
  const pool = await RewardWorkerPool.start({
    source: context.rewardSource,
    threads,
    timeoutMs,
    memoryMb,
    keepOneFree: false,
  });
  const expected = context.rewards.map(({ name }) => name);
  if (pool.names.join('\n') !== expected.join('\n')) {
    await pool.close();
    throw new Error(
      `rewardWorkers: the workers built the rewards ${pool.names.join(', ')}, but the run has ${expected.join(', ')}`,
    );
  }
  return { context: { ...context, scoreRewards: (groups) => pool.score(groups) }, close: () => pool.close() };
}
