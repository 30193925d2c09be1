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
 * Batches decode in time slices (startGeneration), taking turns and yielding to the event loop after
 * each slice, so a long batch never holds the server: small requests start their own batch and
 * finish while it runs. A request larger than one batch (sequences or generated tokens) is refused.
 * The KV caches of all decoding batches together stay within `maxKvCacheBytes`: a batch starts only
 * when its caches fit beside the running ones' (else it waits for one to finish), and a request
 * whose own caches are over the limit is refused.
 *
 * Streaming requests watch their completions grow after every slice (JobWatch.onProgress); a client
 * that goes away (JobWatch.signal) leaves the queue, and its batch stops once nobody waits on it.
 *
 * Is not: HTTP or request parsing (serve-server.ts, serve-protocol.ts); `generate` itself is only
 * called through its public API.
 */
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Transformer } from '../model/transformer.js';
import { startGeneration, type Completion, type GenerationRun } from '../sampling/index.js';

export interface GenerationJob {
  /** The served model name (base or adapter); jobs of different models never share a batch. */
  modelName: string;
  /**
   * The model object the request resolved when it arrived. Jobs share a batch only with the same
   * object, so a request that arrives after an adapter was replaced in place never joins a batch
   * of requests that arrived before (which run the old adapter).
   */
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
  /** Most likely alternatives reported per generated token (0 or absent = none); part of the merge key. */
  topLogprobs?: number;
}

/** What a streaming client watches: progress after each decode slice, and its going away. */
export interface JobWatch {
  /** The job's completions so far (prompt-major, ids growing), after every decode slice. */
  onProgress?: (completions: Completion[]) => void;
  /** Aborted when the client has gone: the job leaves the queue, or its batch stops once no one waits on it. */
  signal?: AbortSignal;
}

interface Pending extends JobWatch {
  job: GenerationJob;
  resolve: (completions: Completion[]) => void;
  reject: (error: unknown) => void;
  cancelled?: boolean;
}

/** A batch decoding: its run and the requests it answers. */
interface ActiveBatch {
  run: GenerationRun;
  taken: Pending[];
  /** Started in one of the small batches' own slots. */
  small: boolean;
  /** Bytes of KV cache it holds while it decodes (jobKvBytes of its jobs). */
  kvBytes: number;
}

export interface BatcherOptions {
  /** How long a batch waits after the latest arrival for more requests (ms). */
  windowMs?: number;
  /** The longest the first request of a batch waits for others (ms). */
  maxWaitMs?: number;
  /** Most sequences (prompts × n) in one decode batch, and so in one request. */
  maxSequences?: number;
  /** Most generated tokens (prompts × n × max_tokens) in one decode batch, and so in one request. */
  maxBatchTokens?: number;
  /** Decode work a batch does before the event loop (and the other batches) get a turn (ms). */
  sliceMs?: number;
  /**
   * Most bytes of KV cache held by every decoding batch together (jobKvBytes: the prompts' prefill
   * caches and the sequences' generated keys and values); a batch that does not fit beside the
   * running ones waits in the queue, and one request over it alone is refused.
   */
  maxKvCacheBytes?: number;
  /**
   * Most batches decoding at once, taking turns slice by slice; later batches wait in the queue.
   * Small batches (at most 1/16 of maxBatchTokens) have as many slots again of their own, so a
   * small request never waits behind that many large ones.
   */
  maxActiveBatches?: number;
}

/** The batcher's defaults, which serve's flags override (docs/scaling-engines.md). */
export const BATCHER_DEFAULTS = {
  windowMs: 2,
  maxWaitMs: 50,
  maxSequences: 512,
  maxBatchTokens: 262_144,
  sliceMs: 20,
  maxActiveBatches: 4,
  // 4 GiB: the default batch limits on the models served in the benches need far less (the
  // 656k-parameter TinyStories model keeps 1 KiB per token); a larger model's operator raises it.
  maxKvCacheBytes: 4 * 1024 ** 3,
} as const;

/**
 * Bytes of KV cache a job holds while it decodes, in float32: each prompt's prefill cache (shared by
 * its n samples) and each sequence's room for max_tokens generated keys and values, in every layer
 * (sampler.ts allocates exactly these).
 */
export function jobKvBytes(job: Pick<GenerationJob, 'model' | 'prompts' | 'numSamples' | 'maxNewTokens'>): number {
  const { numLayers, numKeyValueHeads, headDim } = job.model.config;
  const bytesPerToken = numLayers * 2 * numKeyValueHeads * headDim * 4; // keys and values
  const promptTokens = job.prompts.reduce((total, ids) => total + ids.length, 0);
  return (promptTokens + jobSize(job).tokens) * bytesPerToken;
}

/** The sequences and generated tokens a job asks for: what the batch limits count. */
export const jobSize = (job: Pick<GenerationJob, 'prompts' | 'numSamples' | 'maxNewTokens'>) => {
  const sequences = job.prompts.length * job.numSamples;
  return { sequences, tokens: sequences * job.maxNewTokens };
};

/** A distinct number per model object, so the settings key tells two objects of one name apart. */
const modelIds = new WeakMap<Transformer, number>();
let nextModelId = 0;
const modelId = (model: Transformer): number => {
  let id = modelIds.get(model);
  if (id === undefined) modelIds.set(model, (id = nextModelId++));
  return id;
};

const settingsKey = (job: GenerationJob): string =>
  JSON.stringify([
    job.modelName,
    modelId(job.model),
    job.numSamples,
    job.maxNewTokens,
    job.temperature,
    job.topK,
    job.topP,
    job.minP,
    [...job.stopTokenIds].sort((a, b) => a - b),
    job.topLogprobs ?? 0,
  ]);

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class DecodeBatcher {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private firstQueuedAt = 0;
  private readonly active: ActiveBatch[] = [];
  private pumping = false;
  /** Sizes (in requests) of the batches started so far, for tests and the bench. */
  readonly batchSizes: number[] = [];
  readonly limits: { maxSequences: number; maxBatchTokens: number; maxKvCacheBytes: number };
  private readonly windowMs: number;
  private readonly maxWaitMs: number;
  private readonly sliceMs: number;
  private readonly maxActiveBatches: number;

  constructor(options: BatcherOptions = {}) {
    this.windowMs = options.windowMs ?? BATCHER_DEFAULTS.windowMs;
    this.maxWaitMs = options.maxWaitMs ?? BATCHER_DEFAULTS.maxWaitMs;
    this.sliceMs = options.sliceMs ?? BATCHER_DEFAULTS.sliceMs;
    this.maxActiveBatches = options.maxActiveBatches ?? BATCHER_DEFAULTS.maxActiveBatches;
    this.limits = {
      maxSequences: options.maxSequences ?? BATCHER_DEFAULTS.maxSequences,
      maxBatchTokens: options.maxBatchTokens ?? BATCHER_DEFAULTS.maxBatchTokens,
      maxKvCacheBytes: options.maxKvCacheBytes ?? BATCHER_DEFAULTS.maxKvCacheBytes,
    };
  }

  /** Batches decoding now (for tests: a big request is still running). */
  get activeBatches(): number {
    return this.active.length;
  }

  /**
   * Queues a job; resolves with its completions, prompt-major (prompt 0's n samples first). A job
   * over a batch limit is refused here (the server checks first and answers 400 naming the field).
   */
  submit(job: GenerationJob, watch: JobWatch = {}): Promise<Completion[]> {
    const { sequences, tokens } = jobSize(job);
    const kvBytes = jobKvBytes(job);
    if (
      sequences > this.limits.maxSequences ||
      tokens > this.limits.maxBatchTokens ||
      kvBytes > this.limits.maxKvCacheBytes
    )
      return Promise.reject(
        new Error(
          `a job of ${sequences} sequences, ${tokens} tokens and ${kvBytes} bytes of KV cache is over the batch limits (${this.limits.maxSequences}, ${this.limits.maxBatchTokens}, ${this.limits.maxKvCacheBytes})`,
        ),
      );
    return new Promise((resolve, reject) => {
      const pending: Pending = { job, resolve, reject, ...watch };
      this.queue.push(pending);
      watch.signal?.addEventListener('abort', () => this.cancel(pending), { once: true });
      this.schedule();
    });
  }

  /**
   * A client went away: its queued job is dropped; a decoding batch stops (freeing its slot and KV
   * cache) once none of the requests it answers is still waiting. A batch others still wait on runs
   * on: its sequences are decoded together, and the others' results must not depend on who left.
   */
  private cancel(pending: Pending): void {
    pending.cancelled = true;
    pending.reject(new Error('the client went away'));
    if (this.queue.includes(pending)) this.queue.splice(this.queue.indexOf(pending), 1);
    const batch = this.active.find(({ taken }) => taken.includes(pending));
    if (batch && batch.taken.every(({ cancelled }) => cancelled)) this.finish(batch);
  }

  private schedule(): void {
    if (this.queue.length === 0) return;
    // Each arrival restarts the window (clients' requests trickle in over a few milliseconds),
    // but the first queued request never waits more than maxWaitMs.
    if (this.timer) {
      if (performance.now() - this.firstQueuedAt >= this.maxWaitMs) return;
      clearTimeout(this.timer);
    } else this.firstQueuedAt = performance.now();
    this.timer = setTimeout(() => {
      this.timer = null;
      // With every slot a queued job could take in use, the queue waits for a batch to finish
      // (which schedules again).
      if (this.startNextBatch()) this.schedule();
    }, this.windowMs);
  }

  /**
   * Starts a batch in a free slot: the first queued job's, or with only small slots free the first
   * small job's; either only when its KV caches fit in what the running batches leave (else the
   * queue waits for a batch to finish, so a large request is not overtaken for ever).
   */
  private startNextBatch(): boolean {
    const smallTokens = Math.floor(this.limits.maxBatchTokens / 16);
    const smallActive = this.active.filter((batch) => batch.small).length;
    const freeBytes = this.limits.maxKvCacheBytes - this.active.reduce((total, batch) => total + batch.kvBytes, 0);
    if (this.active.length - smallActive < this.maxActiveBatches) {
      if (jobKvBytes(this.queue[0].job) > freeBytes) return false;
      this.startOneBatch(this.queue[0], this.limits.maxBatchTokens, false, freeBytes);
      return true;
    }
    const index =
      smallActive < this.maxActiveBatches
        ? this.queue.findIndex(({ job }) => jobSize(job).tokens <= smallTokens && jobKvBytes(job) <= freeBytes)
        : -1;
    if (index < 0) return false;
    this.startOneBatch(this.queue[index], smallTokens, true, freeBytes);
    return true;
  }

  /** Takes `first` and every queued job that may share its batch (up to `maxTokens` and `maxBytes` of KV cache), and starts them. */
  private startOneBatch(first: Pending, maxTokens: number, small: boolean, maxBytes: number): void {
    const key = settingsKey(first.job);
    const greedy = first.job.temperature === 0;
    let seeded = !greedy && first.job.seed !== null;
    let sequences = 0;
    let tokens = 0;
    let kvBytes = 0;
    const taken: Pending[] = [];
    const left: Pending[] = [];
    for (const pending of this.queue) {
      const { job } = pending;
      const size = jobSize(job);
      const seedClash = !greedy && job.seed !== null && seeded && pending !== first;
      const bytes = jobKvBytes(job);
      const fits =
        sequences + size.sequences <= this.limits.maxSequences &&
        tokens + size.tokens <= maxTokens &&
        kvBytes + bytes <= maxBytes;
      if (pending === first || (settingsKey(job) === key && !seedClash && fits)) {
        taken.push(pending);
        sequences += size.sequences;
        tokens += size.tokens;
        kvBytes += bytes;
        if (!greedy && job.seed !== null) seeded = true;
      } else left.push(pending);
    }
    this.queue = left;
    // The seeded request (if any) goes first so its prompts keep indices 0.. and its seed rules.
    taken.sort((a, b) => Number(b.job.seed !== null && !greedy) - Number(a.job.seed !== null && !greedy));
    const leader = taken[0].job;
    const seed = greedy ? 0 : (leader.seed ?? randomInt(2 ** 31));
    this.batchSizes.push(taken.length);
    let run: GenerationRun;
    try {
      run = startGeneration(leader.model, {
        prompts: taken.flatMap(({ job }) => job.prompts),
        numSamples: leader.numSamples,
        maxNewTokens: leader.maxNewTokens,
        temperature: leader.temperature,
        topK: leader.topK,
        topP: leader.topP,
        minP: leader.minP,
        stopTokenIds: leader.stopTokenIds,
        seed,
        topLogprobs: leader.topLogprobs,
      });
    } catch (error) {
      for (const pending of taken) pending.reject(error);
      return;
    }
    this.active.push({ run, taken, small, kvBytes });
    void this.pump();
  }

  /**
   * Advances the decoding batches in turn, one slice each, yielding to the event loop after every
   * slice: requests are read, /v1/models answered and new batches started while a long one decodes.
   */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.active.length > 0) {
        for (const batch of [...this.active]) {
          if (!this.active.includes(batch)) continue; // its clients all went away
          let done: boolean;
          try {
            done = batch.run.advance(performance.now() + this.sliceMs);
          } catch (error) {
            this.finish(batch);
            for (const pending of batch.taken) pending.reject(error);
            continue;
          }
          if (done) {
            this.finish(batch);
            this.answer(batch);
          } else this.report(batch);
          await nextTurn();
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  private finish(batch: ActiveBatch): void {
    this.active.splice(this.active.indexOf(batch), 1);
    this.schedule();
  }

  /** Hands each request its own completions, prompt indices counted from its first prompt. */
  private answer({ run, taken }: ActiveBatch): void {
    ownCompletions(run, taken, (pending, own) => pending.resolve(own));
  }

  /** Shows each watching request its completions so far (none before the prefill has ended). */
  private report({ run, taken }: ActiveBatch): void {
    if (run.completions.length === 0 || !taken.some((pending) => pending.onProgress && !pending.cancelled)) return;
    ownCompletions(run, taken, (pending, own) => {
      if (!pending.cancelled) pending.onProgress?.(own);
    });
  }
}

/** Each request's slice of the batch's completions, prompt indices counted from its first prompt. */
function ownCompletions(
  run: GenerationRun,
  taken: Pending[],
  use: (pending: Pending, own: Completion[]) => void,
): void {
  let offset = 0;
  for (const pending of taken) {
    const count = pending.job.prompts.length * pending.job.numSamples;
    const own = run.completions.slice(offset, offset + count);
    const promptBase = own[0]?.promptIndex ?? 0;
    use(
      pending,
      own.map((completion) => ({ ...completion, promptIndex: completion.promptIndex - promptBase })),
    );
    offset += count;
  }
}
