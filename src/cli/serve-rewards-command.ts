/**
 * `grpo serve-rewards --recipe FILE | --reward NAME[:W]... [--task NAME] [--port P] [--host H]`:
 * the rewards a training run would use, served over HTTP to Python trainers (OpenRLHF, slime, and
 * verl through scripts/verl_compute_score.py; docs/scaling.md).
 *
 * The rewards are resolved exactly as `grpo train` resolves them (loadRecipe, dataFlagOverrides,
 * resolveConfig, buildRewards): a recipe's code rewards, else the config's `rewards`, else the
 * task's own. The rewards run in worker threads, each of which builds them the same way
 * (resolveServedRewards is the workers' source), so a call past `--reward-timeout-ms` is stopped.
 * Is not: the HTTP protocol (reward-server.ts, reward-protocols.ts) or the pool (rewards/workers.ts).
 */
import { buildRewards, loadRunTask, mergeConfig, resolveConfig, type Recipe } from '../trainer/index.js';
import type { NamedReward } from '../rewards/index.js';
import { startRewardServer, type RunningRewardServer } from '../serve/reward-server.js';
import { RewardWorkerPool } from '../rewards/workers.js';
import { loadRecipe } from './recipe-file.js';
import { dataFlagOverrides } from './train-command.js';

export interface ServeRewardsOptions {
  /** A recipe file (.ts/.js with code rewards, or a .json/.yaml config). */
  recipe?: string;
  /** `NAME` or `NAME:WEIGHT`, repeatable (the config's `rewards`). */
  rewards?: string[];
  /** The task whose rewards (and reward names) are served. */
  task?: string;
  port?: number;
  host?: string;
  /** Texts cut from the end of each completion (e.g. `<|im_end|>`), see RewardServerOptions. */
  stripSuffixes?: string[];
  /** Per reward call (ms); a call past it is stopped and reported as a failed reward. */
  rewardTimeoutMs?: number;
  /** Worker threads running the rewards. */
  rewardWorkers?: number;
  /** Heap limit of each reward worker (MB). */
  rewardMemoryMb?: number;
  maxBodyBytes?: number;
  maxJsonDepth?: number;
}

/** The named, weighted rewards the options stand for, resolved as `grpo train` does. */
export async function resolveServedRewards(options: ServeRewardsOptions): Promise<NamedReward[]> {
  const flagRewards = options.rewards ?? [];
  if (options.recipe === undefined && flagRewards.length === 0 && options.task === undefined)
    throw new Error('serve-rewards: name the rewards to serve: --recipe FILE, --reward NAME[:WEIGHT] or --task NAME');
  const recipe: Recipe = options.recipe === undefined ? { config: {} } : await loadRecipe(options.recipe);
  if (recipe.rewards && flagRewards.length > 0)
    throw new Error(
      `serve-rewards: --reward: the recipe ${options.recipe} defines its rewards in code, which replace any named reward; drop --reward or the recipe`,
    );
  let raw = mergeConfig(recipe.config, dataFlagOverrides({ rewards: flagRewards }));
  if (options.task !== undefined) raw = { ...raw, task: options.task };
  // A recipe's own rewards stand in for a dataset task's named ones, as in `grpo train`.
  const task = await loadRunTask(raw, recipe.task, recipe.rewards);
  const config = resolveConfig(raw, recipe.task ? [recipe.task.name] : [], task);
  // resolveConfig refuses an unknown task, so a task is loaded here. Only a task named by the recipe or
  // --task says what the served rows' answers look like (an unnamed correctness then uses its check).
  const taskNamed = raw.task !== undefined || recipe.task !== undefined;
  return recipe.rewards ?? buildRewards(config, task!, false, taskNamed);
}

/** Runs `grpo serve-rewards` until SIGINT/SIGTERM; returns the exit code. */
export async function runServeRewardsCommand(options: ServeRewardsOptions): Promise<number> {
  // Resolved here too, so a bad flag or recipe fails before any worker starts, as it always has.
  const rewards = await resolveServedRewards(options);
  const workers = await RewardWorkerPool.start({
    source: {
      module: import.meta.url,
      exportName: 'resolveServedRewards',
      args: { recipe: options.recipe, rewards: options.rewards, task: options.task } satisfies ServeRewardsOptions,
    },
    threads: options.rewardWorkers,
    timeoutMs: options.rewardTimeoutMs,
    memoryMb: options.rewardMemoryMb,
  });
  const server: RunningRewardServer = await startRewardServer({
    workers,
    host: options.host,
    port: options.port,
    stripSuffixes: options.stripSuffixes,
    maxBodyBytes: options.maxBodyBytes,
    maxJsonDepth: options.maxJsonDepth,
  });
  const served = rewards
    .map(({ name, weight }) => `${name} (weight ${typeof weight === 'number' ? weight : 'annealed, read at step 0'})`)
    .join(', ');
  process.stderr.write(`grpo serve-rewards: ${served}\n`);
  // The address alone on stdout, so a script (or a test) can read the port that was bound.
  process.stdout.write(`${server.url}/get_reward\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  await workers.close();
  return 0;
}
