/**
 * Collecting a finished micro-batch's graph before the next one is built. After its backward, a
 * training forward's graph (its activations: ~2.4 GiB on the 135M shape at 16 rows × 192 tokens) is
 * unreachable, but V8 schedules collections by its own heap (a few MiB of JS objects here), not by
 * the typed arrays those objects hold: measured, the next forward then allocated its activations
 * beside the previous graph's, so two micro-batches' activations were resident at the peak.
 * `releaseGarbage` runs a full collection when array buffers grew by more than a threshold since the
 * last one it ran (the collection itself costs milliseconds; freeing is paid anyway, sooner or later).
 * `keepCollectorOffWorkerThreads` makes V8's collections pauses on the JS thread, for a process whose
 * compute threads take every core (see there).
 *
 * Is not: a pool or an allocator (it frees only what nothing reaches), nor a policy on when memory is
 * cheap: the caller calls it where a big graph has just become unreachable (between micro-batches).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Array-buffer growth since the last collection below which a collection is skipped: 256 MiB. */
const DEFAULT_THRESHOLD_BYTES = 256 * 2 ** 20;

let collect: (() => void) | null | undefined;
/** process.memoryUsage().arrayBuffers just after the last collection run here. */
let collectedLevel = 0;

/**
 * V8's full collection: node's own `gc` under --expose-gc, else one taken from a fresh context with
 * the flag set for that moment only (as jest's leak detector does), so user code sees no new global.
 * Null where the runtime refuses (then releaseGarbage does nothing).
 */
function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return (collect = exposed);
  try {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  } catch {
    collect = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return collect;
}

/**
 * Runs a full garbage collection when array buffers grew by more than `thresholdBytes` since the
 * last one run here; returns whether it ran. Call it where a large graph just became unreachable.
 */
export function releaseGarbage(thresholdBytes = DEFAULT_THRESHOLD_BYTES): boolean {
  if (process.memoryUsage().arrayBuffers - collectedLevel <= thresholdBytes) return false;
  const run = collector();
  if (!run) return false;
  // Twice: a collection V8 had already begun (incremental marking) counts what was allocated since
  // as live, so one call can end that cycle with the graph kept (measured: 550 of 830 MiB left on
  // the 25M shape); the second starts from a finished cycle and frees it.
  run();
  run();
  // The collections free array buffers synchronously, so this is the live level.
  collectedLevel = process.memoryUsage().arrayBuffers;
  return true;
}

let collectorKeptOffWorkers = false;

/**
 * Makes every V8 collection one pause on the JS thread (no incremental or concurrent marking), once per
 * process. For a process whose compute threads take every core (the native backend's pool at one
 * thread per core): that pool works only while the JS thread is inside a native call, so work V8 does
 * in a pause costs no product anything, and work it does beside the JS thread takes a core from one.
 * A training step allocates gigabytes of activation arrays, so V8 starts a collection for every
 * ~64 MiB of them ("external memory pressure"), every 5–30 ms here; with incremental marking its
 * marking threads then ran beside the products, and a product that takes 6.4 ms took 10–25 ms when
 * one overlapped it (the 25M model's 32x32 step, AVX-512, 2 cores: 24 input-gradient products 6.1–25.5
 * ms; with this, 23 of them 6.2–7.1 ms and one 14.1). Peak memory is unchanged (measured): turning off only concurrent marking
 * left marking to the JS thread's few allocation steps, and freed arrays so late that the peak doubled.
 * The flag is read at each collection and is safe to turn off while one runs (checked by flipping it at
 * random times under heavy allocation, 40 runs).
 * Is not: a change to when V8 collects, or to what it frees.
 */
export function keepCollectorOffWorkerThreads(): void {
  if (collectorKeptOffWorkers) return;
  collectorKeptOffWorkers = true;
  setFlagsFromString('--no-incremental-marking');
}
