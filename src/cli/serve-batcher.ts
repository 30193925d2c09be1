/**
 * The decode batcher of `grpo serve`: requests that arrive within a short window, or while a batch
 * is running, are merged into one `generate` call (one KV-cached decode batch) when merging cannot
 * change what any of them gets back.
 *
 * `generate` draws sample j of prompt i from a generator seeded by (batch seed, i, j), so a result
 * depends on the batch only through the seed and the prompt's place. Hence the merge rule: same
 * model and same sampling settings, and among sampled (temperature > 0) requests at most one that
 * names a seed, placed first so its prompts keep their indices and its seed is the batch's. Greedy
 * requests ignore seeds and merge freely; unseeded ones promise nothing about their draws.
 *
 * Is not: HTTP or request parsing (serve-server.ts, serve-protocol.ts); `generate` itself is only
 * called through its public API.
 */
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Transformer } from '../model/transformer.js';
import { generate, type Completion } from '../sampling/index.js';

export interface GenerationJob {
  /** The served model name (base or adapter); jobs of different models never share a batch. */
  modelName: string;
  model: Transformer;
  prompts: number[][];
  numSamples: number;
  maxNewTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  stopTokenIds: number[];
  seed: number | null;
}

interface Pending {
  job: GenerationJob;
  resolve: (completions: Completion[]) => void;
  reject: (error: unknown) => void;
}

export interface BatcherOptions {
  /** How long a batch waits after the latest arrival for more requests (ms). */
  windowMs?: number;
  /** The longest the first request of a batch waits for others (ms). */
  maxWaitMs?: number;
  /** Most sequences (prompts × n) in one decode batch. */
  maxSequences?: number;
}

const settingsKey = (job: GenerationJob): string =>
  JSON.stringify([
    job.modelName,
    job.numSamples,
    job.maxNewTokens,
    job.temperature,
    job.topK,
    job.topP,
    job.minP,
    [...job.stopTokenIds].sort((a, b) => a - b),
  ]);

export class DecodeBatcher {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private firstQueuedAt = 0;
  /** Sizes (in requests) of the batches run so far, for tests and the bench. */
  readonly batchSizes: number[] = [];
  private readonly windowMs: number;
  private readonly maxWaitMs: number;
  private readonly maxSequences: number;

  constructor(options: BatcherOptions = {}) {
    this.windowMs = options.windowMs ?? 2;
    this.maxWaitMs = options.maxWaitMs ?? 50;
    this.maxSequences = options.maxSequences ?? 512;
  }

  /** Queues a job; resolves with its completions, prompt-major (prompt 0's n samples first). */
  submit(job: GenerationJob): Promise<Completion[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.queue.length === 0) return;
    // Each arrival restarts the window (clients' requests trickle in over a few milliseconds),
    // but the first queued request never waits more than maxWaitMs. generate() is synchronous:
    // requests that arrive while it runs are parsed as soon as it returns and join the next batch.
    if (this.timer) {
      if (performance.now() - this.firstQueuedAt >= this.maxWaitMs) return;
      clearTimeout(this.timer);
    } else this.firstQueuedAt = performance.now();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runOneBatch();
      this.schedule();
    }, this.windowMs);
  }

  /** Takes the first queued job and every later one that may share its batch, and runs them. */
  private runOneBatch(): void {
    const first = this.queue[0];
    const key = settingsKey(first.job);
    const greedy = first.job.temperature === 0;
    let seeded = !greedy && first.job.seed !== null;
    let sequences = 0;
    const taken: Pending[] = [];
    const left: Pending[] = [];
    for (const pending of this.queue) {
      const { job } = pending;
      const size = job.prompts.length * job.numSamples;
      const seedClash = !greedy && job.seed !== null && seeded && pending !== first;
      if (pending === first || (settingsKey(job) === key && !seedClash && sequences + size <= this.maxSequences)) {
        taken.push(pending);
        sequences += size;
        if (!greedy && job.seed !== null) seeded = true;
      } else left.push(pending);
    }
    this.queue = left;
    // The seeded request (if any) goes first so its prompts keep indices 0.. and its seed rules.
    taken.sort((a, b) => Number(b.job.seed !== null && !greedy) - Number(a.job.seed !== null && !greedy));
    const leader = taken[0].job;
    const seed = greedy ? 0 : (leader.seed ?? randomInt(2 ** 31));
    this.batchSizes.push(taken.length);
    let completions: Completion[];
    try {
      completions = generate(leader.model, {
        prompts: taken.flatMap(({ job }) => job.prompts),
        numSamples: leader.numSamples,
        maxNewTokens: leader.maxNewTokens,
        temperature: leader.temperature,
        topK: leader.topK,
        topP: leader.topP,
        minP: leader.minP,
        stopTokenIds: leader.stopTokenIds,
        seed,
      });
    } catch (error) {
      for (const pending of taken) pending.reject(error);
      return;
    }
    let offset = 0;
    for (const pending of taken) {
      const count = pending.job.prompts.length * pending.job.numSamples;
      const own = completions.slice(offset, offset + count);
      const promptBase = own[0]?.promptIndex ?? 0;
      pending.resolve(own.map((completion) => ({ ...completion, promptIndex: completion.promptIndex - promptBase })));
      offset += count;
    }
  }
}
