/**
 * Bench scenario `matmul`: GFLOP/s of single-precision matmul per backend, thread count and shape.
 *
 * Is: `npm run bench -- matmul [--json] [--repeats 5] [--threads 1,2] [--backends js,wasm]
 * [--shapes 512x512x512,...] [--peak-per-core G]`. Shapes are MxKxN: C[M,N] = A[M,K] · B[K,N],
 * no transposes. Each line is the best of `repeats` timed runs after one warm-up; peakFraction is
 * gflops / the FMA peak with that many threads, measured in this run by bench/peak (an FMA loop)
 * unless --peak-per-core fixes it. js is single-threaded and slow: it is timed once per shape,
 * with threads 1 only. With --json, one JSON line per (backend, threads, shape); else a table.
 * `--transpose-b` (webgpu only) times B stored [N, K], as a model's weights are; `--tiles a,b` (webgpu
 * only) times only those of webgpuMatmulTiles.
 * `--backends webgpu` prints, per shape, the device-side throughput (operands already on the device,
 * the fastest of the tiles, repeated in one submission until it runs ≥ 0.1 s) against the adapter's
 * FMA peak measured in the same run by an FMA-throughput shader, then the end-to-end call (host arrays
 * in and out, as the tensor layer calls it today) on the next line; the adapter's name is printed first,
 * and every tile's throughput and fraction of the peak on a stderr line of its own (a tile that fails
 * says why there, and the others are still measured).
 * Is not: a test; numbers on a shared machine vary, so compare lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import type { Backend, MatmulShape } from '../src/tensor/backend.js';
import { createBackend } from '../src/tensor/backends/select.js';
import {
  type WebGpuBackend,
  type WebGpuMatmulTile,
  webgpuMatmulTiles,
} from '../src/tensor/backends/webgpu/webgpu-backend.js';
import { measurePeak } from './peak/peak.js';
import { DEFAULT_MATMUL_SHAPES, readFlags } from './_flags.js';

interface Settings {
  json: boolean;
  repeats: number;
  threads: number[];
  backends: string[];
  sizes: Array<{ M: number; K: number; N: number }>;
  peakPerCore: number;
  /** webgpu only: time B stored [N, K] (a weight). */
  transposeB: boolean;
  /** webgpu only: the tiles to time (all of webgpuMatmulTiles unless --tiles narrows them). */
  tiles: WebGpuMatmulTile[];
}

/** One measured line. */
interface Measurement {
  backend: string;
  threads: number;
  M: number;
  K: number;
  N: number;
  seconds: number;
  gflops: number;
  peakFraction: number;
}

function parseArguments(argv: string[]): Settings {
  const { value, shapes, positiveList } = readFlags(argv);
  const sizes = shapes('--shapes', DEFAULT_MATMUL_SHAPES);
  const threads = positiveList('--threads', '1,2');
  const repeats = Number(value('--repeats', '5'));
  const peakPerCore = Number(value('--peak-per-core', '0'));
  const backends = value('--backends', 'js,wasm').split(',');
  if (!Number.isInteger(repeats) || repeats < 1) throw new Error('--repeats: a positive integer');
  if (!(peakPerCore >= 0)) throw new Error('--peak-per-core: a number of GFLOP/s (0: measure it)');
  const tiles = value('--tiles', webgpuMatmulTiles.join(',')).split(',');
  const unknown = tiles.filter((tile) => !(webgpuMatmulTiles as readonly string[]).includes(tile));
  if (unknown.length > 0)
    throw new Error(`--tiles: unknown tile(s) ${unknown.join(', ')}; known are ${webgpuMatmulTiles.join(', ')}`);
  return {
    json: argv.includes('--json'),
    repeats,
    threads,
    backends,
    sizes,
    peakPerCore,
    transposeB: argv.includes('--transpose-b'),
    tiles: tiles as WebGpuMatmulTile[],
  };
}

/** Seeded values in [-1, 1) so every run multiplies the same matrices. */
function randomMatrix(length: number, seed: number): Float32Array {
  const out = new Float32Array(length);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state / 2 ** 31 - 1;
  }
  return out;
}

/** Best wall time in seconds of `repeats` runs after one warm-up run (none for `repeats` = 1). */
function bestSeconds(backend: Backend, size: { M: number; K: number; N: number }, repeats: number): number {
  const { M, K, N } = size;
  const shape: MatmulShape = {
    batch: 1,
    M,
    K,
    N,
    transposeA: false,
    transposeB: false,
    aBatchStride: 0,
    bBatchStride: 0,
    accumulate: false,
  };
  const a = randomMatrix(M * K, 1);
  const b = randomMatrix(K * N, 2);
  const out = new Float32Array(M * N);
  if (repeats > 1) backend.matmul(a, b, out, shape);
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < repeats; run++) {
    const start = performance.now();
    backend.matmul(a, b, out, shape);
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return best;
}

function report(measurement: Measurement, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(measurement));
    return;
  }
  const { backend, threads, M, K, N, seconds, gflops, peakFraction } = measurement;
  const shape = `${M}x${K}x${N}`.padEnd(16);
  console.log(
    `${backend.padEnd(8)}${String(threads).padStart(7)}  ${shape}${(seconds * 1000).toFixed(2).padStart(10)}` +
      `${gflops.toFixed(1).padStart(9)}${(peakFraction * 100).toFixed(1).padStart(8)}%`,
  );
}

/** Runs the scenario; see the file header for flags. */
export async function main(argv: string[]): Promise<void> {
  const settings = parseArguments(argv);
  if (!settings.json) console.log(`${'backend'.padEnd(8)}threads  ${'MxKxN'.padEnd(16)}        ms   GFLOP/s    peak`);
  for (const name of settings.backends) {
    if (name === 'webgpu') {
      benchWebGpu(settings);
      continue;
    }
    // js has no threads: one line per shape; its plain loops take seconds, so one untimed-warm-up-free run.
    const threadCounts = name === 'js' ? [1] : settings.threads;
    for (const threads of threadCounts) {
      const backend = createBackend(name, { threads });
      const peak = peakGflops(settings.peakPerCore, backend.threads);
      try {
        if (name === 'js') bestSeconds(backend, { M: 64, K: 64, N: 64 }, 3); // JIT warm-up
        for (const size of settings.sizes) {
          const seconds = bestSeconds(backend, size, name === 'js' ? 1 : settings.repeats);
          const gflops = (2 * size.M * size.K * size.N) / seconds / 1e9;
          const peakFraction = gflops / peak;
          report({ backend: name, threads: backend.threads, ...size, seconds, gflops, peakFraction }, settings.json);
        }
      } finally {
        backend.dispose();
      }
    }
  }
}

/** Doubles `repeats` from 1 until `measure` reports at least `seconds`, then returns that measurement. */
function untilLong<T extends { seconds: number }>(measure: (repeats: number) => T, seconds = 0.1): T {
  for (let repeats = 1; ; repeats *= 2) {
    const result = measure(repeats);
    if (result.seconds >= seconds || repeats >= 1 << 16) return result;
  }
}

/** The webgpu lines: device-side products against the measured FMA peak, then the end-to-end calls. */
function benchWebGpu(settings: ReturnType<typeof parseArguments>): void {
  const backend = createBackend('webgpu') as WebGpuBackend;
  try {
    console.error(`# webgpu adapter: ${backend.detail ?? ''}`);
    console.error(`# webgpu subgroup matrix configs: ${JSON.stringify(backend.adapter.subgroupMatrixConfigs)}`);
    // Enough workgroups to fill any GPU (2^20 invocations), 256 rounds each (one shader: the rounds are
    // compiled in), dispatches doubled until the run lasts ≥ 0.1 s.
    const peak = untilLong((repeats) => backend.measureFmaPeak(4096, 256, repeats)).gflops;
    console.error(`# webgpu FMA peak, measured now: ${peak.toFixed(1)} GFLOP/s`);
    for (const size of settings.sizes) {
      const shape = { batch: 1, ...size, transposeA: false, transposeB: settings.transposeB };
      // Every tile geometry, each on a line of its own, then the best as the shape's figure.
      let device = 0;
      let bestTile = '';
      for (const tile of settings.tiles) {
        const label = `# webgpu ${size.M}x${size.K}x${size.N} tile ${tile}`;
        const started = performance.now();
        try {
          const { gflops } = untilLong((repeats) => backend.measureMatmul(shape, repeats, tile));
          // The wall time of the line (compile, warm-ups, doublings) says what the bench itself costs.
          const wall = (performance.now() - started) / 1000;
          console.error(
            `${label}: ${gflops.toFixed(1)} GFLOP/s, ${((gflops / peak) * 100).toFixed(1)}% of peak (${wall.toFixed(1)} s)`,
          );
          if (gflops > device) [device, bestTile] = [gflops, tile];
        } catch (error) {
          // One tile the adapter refuses (too much workgroup memory, say) leaves the others' numbers.
          console.error(`${label}: failed: ${(error as Error).message}`);
        }
      }
      const deviceSeconds = (2 * size.M * size.K * size.N) / device / 1e9;
      report(
        {
          backend: `webgpu:${bestTile}`,
          threads: 1,
          ...size,
          seconds: deviceSeconds,
          gflops: device,
          peakFraction: device / peak,
        },
        settings.json,
      );
      const seconds = bestSeconds(backend, size, settings.repeats);
      const gflops = (2 * size.M * size.K * size.N) / seconds / 1e9;
      report(
        { backend: 'webgpu+io', threads: 1, ...size, seconds, gflops, peakFraction: gflops / peak },
        settings.json,
      );
    }
  } finally {
    backend.dispose();
  }
}

/** The FMA peak for `threads` threads: `--peak-per-core` × threads when given, else measured now (bench/peak). */
function peakGflops(peakPerCore: number, threads: number): number {
  if (peakPerCore > 0) return peakPerCore * threads;
  const measured = measurePeak(threads);
  if ('error' in measured) throw new Error(`${measured.error}; pass --peak-per-core instead`);
  console.error(`# FMA peak with ${threads} thread(s), measured now: ${measured.fmaGflops.toFixed(1)} GFLOP/s`);
  return measured.fmaGflops;
}
