/**
 * A pool of worker threads that run rewards with a real time limit, for `grpo serve-rewards` and
 * for training with `rewardWorkers.threads` > 0: every reward call (one sample, or one group for a
 * group reward) goes to a worker, and a call that overruns its limit has its worker terminated
 * (which stops even a synchronous loop, as the code sandbox stops a process) and replaced. The call
 * is then a failed reward (`timeout`), never a hang and never 0. Calls are taken from the requests
 * (`score` calls) in turn; with `keepOneFree` (the server's setting) one request has at most
 * `threads - 1` calls running (a call whose worker was stopped counts until its replacement is up),
 * so a request of hostile rows cannot take every worker and other clients keep being served.
 * Each worker's heap is capped (`memoryMb`); a worker that runs out is replaced and its call is an
 * `error`.
 *
 * Is not: the rewards (worker-thread.ts builds them inside each worker from `source`) or HTTP
 * (serve/reward-server.ts).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CellStatus, RewardFailure, RewardMatrix } from './run.js';
import type { RewardColumn, RewardInput } from './types.js';

/** Where a worker gets its rewards: `module`'s export `exportName`, called with `args` (plain data). */
export interface RewardSource {
  /** A file URL of an ES module (.js, or .ts when running from sources through tsx). */
  module: string;
  exportName: string;
  args: unknown;
}

export interface RewardWorkerOptions {
  source: RewardSource;
  /** Worker threads (default 2: one for a hostile request, one for everyone else). */
  threads?: number;
  /** Per reward call (ms, default 30 000, the trainer's); an overrunning call's worker is stopped. */
  timeoutMs?: number;
  /** Heap limit of each worker (MB, default 1024). */
  memoryMb?: number;
  /**
   * Whether one request may use at most `threads - 1` workers, keeping one for other clients
   * (default true: a server's setting); training scores one batch at a time and uses them all.
   */
  keepOneFree?: boolean;
}

/** What a worker says once its rewards are built. */
export type WorkerHello =
  | { type: 'ready'; names: string[]; weights: number[]; group: boolean[]; columns: RewardColumn[][] }
  | { type: 'failed'; message: string };

/** One reward call: the reward's column and the inputs it scores (one sample, or a whole group). */
export interface RewardCall {
  id: number;
  column: number;
  inputs: RewardInput[];
  timeoutMs: number;
}

/** A call's cells, in `inputs` order. */
export interface RewardCallResult {
  id: number;
  status: CellStatus[];
  scores: number[];
  failures: { sample: number; status: 'error' | 'timeout'; message: string }[];
}

/** The worker's own sliver of time past the limit, so a reward's own timeout reports first when it can. */
const GRACE_MS = 500;

/**
 * The worker's entry point, evaluated as a script: it imports reward-worker-thread (through tsx when
 * running from .ts sources, as in tests) and hands over.
 */
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsxApi) (await import(workerData.tsxApi)).register();
  await (await import(workerData.threadModule)).runRewardWorker();
})().catch((error) => parentPort.postMessage({ type: 'failed', message: String((error && error.stack) || error) }));
`;

interface PendingCall {
  call: Omit<RewardCall, 'id'>;
  done: (result: Omit<RewardCallResult, 'id'>) => void;
}

/** One request's calls, and how many of them are running. */
interface CallQueue {
  waiting: PendingCall[];
  running: number;
}

interface PoolWorker {
  worker: Worker;
  current: { id: number; pending: PendingCall; queue: CallQueue; timer: NodeJS.Timeout } | null;
}

/** The failed cells of a call that never came back. */
const failedCall = (inputs: readonly unknown[], status: 'error' | 'timeout', message: string) => ({
  status: inputs.map(() => status),
  scores: inputs.map(() => Number.NaN),
  failures: inputs.map((_, sample) => ({ sample, status, message })),
});

export class RewardWorkerPool {
  private readonly workers = new Set<PoolWorker>();
  private readonly queues: CallQueue[] = [];
  private nextId = 0;
  private closed = false;
  private readonly threads: number;
  private readonly timeoutMs: number;

  private constructor(
    private readonly options: RewardWorkerOptions,
    /** The rewards' names, weights at step 0 and which are group rewards, as the first worker built them. */
    readonly names: readonly string[],
    readonly weights: readonly number[],
    private readonly group: readonly boolean[],
    /** The row columns each reward declares (`NamedReward.columns`). */
    readonly columns: readonly (readonly RewardColumn[])[],
  ) {
    this.threads = Math.max(1, options.threads ?? 2);
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Starts the workers, resolving once all are ready; rejects with the source's error when the rewards cannot be built. */
  static async start(options: RewardWorkerOptions): Promise<RewardWorkerPool> {
    const started = Array.from({ length: Math.max(1, options.threads ?? 2) }, () => spawn(options));
    const hellos = await Promise.all(started.map(({ hello }) => hello));
    const failed = hellos.find((hello) => hello.type === 'failed');
    const ready = hellos[0];
    if (failed || ready.type !== 'ready') {
      await Promise.all(started.map(({ worker }) => worker.terminate()));
      throw new Error(
        `the reward workers could not build the rewards: ${failed?.type === 'failed' ? failed.message : ''}`,
      );
    }
    const pool = new RewardWorkerPool(options, ready.names, ready.weights, ready.group, ready.columns);
    for (const { worker } of started) pool.adopt(worker);
    return pool;
  }

  /** Scores every sample of every group with every reward (the matrix scoreRewards returns). */
  score(groups: readonly (readonly RewardInput[])[]): Promise<RewardMatrix> {
    const width = this.names.length;
    const sampleCount = groups.reduce((total, group) => total + group.length, 0);
    const scores = new Float64Array(sampleCount * width).fill(Number.NaN);
    const status = new Array<CellStatus>(sampleCount * width).fill('null');
    const failures: RewardFailure[] = [];
    const queue: CallQueue = { waiting: [], running: 0 };
    const calls: Promise<void>[] = [];
    const add = (column: number, firstSample: number, inputs: RewardInput[]) =>
      calls.push(
        new Promise((resolve) =>
          queue.waiting.push({
            // The signal of a RewardInput is the worker's own; functions cannot cross threads.
            call: {
              column,
              // Functions cannot cross to a worker: a reward there that needs policyLogprobsAfter fails, naming it.
              inputs: inputs.map(({ signal: _, policyLogprobsAfter: __, ...input }) => input),
              timeoutMs: this.timeoutMs,
            },
            done: (result) => {
              result.status.forEach((cell, index) => {
                status[(firstSample + index) * width + column] = cell;
                scores[(firstSample + index) * width + column] = result.scores[index]!;
              });
              for (const failure of result.failures)
                failures.push({ ...failure, sample: firstSample + failure.sample, reward: this.names[column]! });
              resolve();
            },
          }),
        ),
      );
    let firstSample = 0;
    for (const group of groups) {
      for (let column = 0; column < width; column++) {
        if (this.group[column]) add(column, firstSample, [...group]);
        else group.forEach((input, index) => add(column, firstSample + index, [input]));
      }
      firstSample += group.length;
    }
    this.queues.push(queue);
    this.dispatch();
    return Promise.all(calls).then(() => {
      this.queues.splice(this.queues.indexOf(queue), 1);
      failures.sort((a, b) => a.sample - b.sample || this.names.indexOf(a.reward) - this.names.indexOf(b.reward));
      return { names: this.names, sampleCount, scores, status, failures, groupSizes: groups.map((g) => g.length) };
    });
  }

  /** Stops every worker; calls still waiting fail. */
  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.queues)
      for (const pending of queue.waiting.splice(0))
        pending.done(failedCall(pending.call.inputs, 'error', 'the reward workers are closing'));
    await Promise.all([...this.workers].map(({ worker }) => worker.terminate()));
    this.workers.clear();
  }

  /** Hands waiting calls to idle workers, taking the requests in turn, each below its share. */
  private dispatch(): void {
    const share = this.options.keepOneFree === false ? this.threads : Math.max(1, this.threads - 1);
    for (const entry of this.workers) {
      if (entry.current !== null) continue;
      const queue = this.queues.find((candidate) => candidate.waiting.length > 0 && candidate.running < share);
      if (!queue) return;
      // The request served goes to the back of the line.
      this.queues.splice(this.queues.indexOf(queue), 1);
      this.queues.push(queue);
      const pending = queue.waiting.shift()!;
      const id = this.nextId++;
      queue.running++;
      const timer = setTimeout(() => {
        // A call past its limit and the grace: the reward is stuck (a synchronous loop, or an async
        // one ignoring its signal). Stop its worker, report the cells, start another.
        this.fail(entry, 'timeout', `timed out after ${this.timeoutMs} ms (stopped)`);
      }, this.timeoutMs + GRACE_MS);
      entry.current = { id, pending, queue, timer };
      entry.worker.postMessage({ ...pending.call, id } satisfies RewardCall);
    }
  }

  /** Finishes the worker's current call with `result`; `release`: the request's slot is free again. */
  private settle(entry: PoolWorker, result: Omit<RewardCallResult, 'id'>, release = true): CallQueue | null {
    const current = entry.current;
    if (!current) return null;
    clearTimeout(current.timer);
    entry.current = null;
    if (release) current.queue.running--;
    current.pending.done(result);
    return current.queue;
  }

  /**
   * Fails the worker's current call and replaces the worker. The request keeps the slot until the
   * replacement is ready: while it starts, the request cannot take the last worker left for others.
   */
  private fail(entry: PoolWorker, status: 'error' | 'timeout', message: string): void {
    const queue = this.settle(entry, failedCall(entry.current?.pending.call.inputs ?? [], status, message), false);
    this.workers.delete(entry);
    void entry.worker.terminate();
    if (this.closed) return;
    this.replace(() => {
      if (queue) queue.running--;
    });
  }

  private replace(onSettled: () => void): void {
    const started = spawn(this.options);
    void started.hello.then((hello) => {
      onSettled();
      if (this.closed) void started.worker.terminate();
      else if (hello.type === 'ready') this.adopt(started.worker);
      else {
        // Built once already, so this is a passing failure (e.g. memory); the pool runs one short.
        process.stderr.write(`grpo: a reward worker failed to start: ${hello.message}\n`);
        void started.worker.terminate();
      }
    });
  }

  private adopt(worker: Worker): void {
    const entry: PoolWorker = { worker, current: null };
    this.workers.add(entry);
    worker.on('message', (result: RewardCallResult) => {
      if (entry.current?.id === result.id) this.settle(entry, result);
      this.dispatch();
    });
    // Out of memory (resourceLimits) or a crash: the call fails, the worker is replaced.
    worker.on('error', (error) => {
      if (this.workers.has(entry)) this.fail(entry, 'error', `the reward's worker failed: ${error.message}`);
    });
    worker.on('exit', () => {
      if (this.workers.has(entry)) this.fail(entry, 'error', "the reward's worker exited");
    });
    this.dispatch();
  }
}

/** Starts one worker; `hello` resolves with its first message (or a failure if it dies first). */
function spawn(options: RewardWorkerOptions): { worker: Worker; hello: Promise<WorkerHello> } {
  const here = import.meta.url;
  const fromSources = here.endsWith('.ts');
  const threadModule = new URL(`./worker-thread${fromSources ? '.ts' : '.js'}`, here).href;
  // Running from .ts sources (tests, `npm run grpo`): the worker registers tsx, the project's loader.
  const tsxApi = fromSources
    ? new URL(
        `file://${createRequire(fileURLToPath(here))
          .resolve('tsx/esm/api')
          .replace(/\.cjs$/, '.mjs')}`,
      ).href
    : undefined;
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    workerData: { threadModule, tsxApi, source: options.source },
    resourceLimits: { maxOldGenerationSizeMb: options.memoryMb ?? 1024 },
  });
  const hello = new Promise<WorkerHello>((resolve) => {
    worker.once('message', (message: WorkerHello) => resolve(message));
    worker.once('error', (error) => resolve({ type: 'failed', message: error.message }));
    worker.once('exit', (code) => resolve({ type: 'failed', message: `exited with code ${code}` }));
  });
  return { worker, hello };
}
