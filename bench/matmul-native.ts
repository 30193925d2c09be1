/**
 * Bench scenario `matmul-native`: GFLOP/s of the native backend's SGEMM next to OpenBLAS (Debian's
 * libopenblas, compiled and run by bench/openblas/openblas.ts in the same run), with 1 and 2 threads.
 *
 * Is: `npm run bench -- matmul-native [--json] [--repeats 10] [--rounds 3] [--threads 1,2]
 * [--shapes 512x512x512,...|training] [--peak-per-core G] [--cold [MiB]]`; one JSON line per (backend, threads,
 * shape) with gflops and peakFraction (gflops / the FMA peak with that many threads, measured in this run by
 * bench/peak unless --peak-per-core fixes it), and on native lines `ratioToOpenblas`.
 * `--cold` times the decode condition instead: B is a weight packed once (withConstantOperands, the path the
 * sampler's decode takes), and each timed pass cycles through enough distinct B of the shape (at least
 * COLD_DEFAULT_MIB MiB, about a 25M model's weights, or the MiB given) that every B comes from DRAM; OpenBLAS,
 * which packs B on each call and has no such mode, is not run then.
 * Shapes are `[batch/]MxKxN[:ab]`: C[M,N] = op(A)[M,K] · op(B)[K,N], a and b each n or t (`4096x512x1536:nt`
 * is A · Bᵀ with B stored [N, K]); a batch prefix times that many products of separate matrices in one call
 * (OpenBLAS: one call each). `training` names TRAINING_SHAPES.
 * Is not: a test; numbers on a shared machine vary, so compare lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import {
  loadNativeBackend,
  nativeAddonStatus,
  type NativeBackend,
} from '../src/tensor/backends/native/native-backend.js';
import { measureOpenblas, shapeText, type MatmulSize, type OpenblasResult } from './openblas/openblas.js';
import { measurePeak } from './peak/peak.js';
import { DEFAULT_MATMUL_SHAPES, readFlags } from './_flags.js';

/**
 * The products of one training step of the 25M model (hidden 512, MLP 1536, vocabulary 8192, 8 heads of 64)
 * at one micro-batch of 4096 tokens: projections x·Wᵀ (nt), input gradients g·W (nn), weight gradients gᵀ·x
 * (tn), and the attention's batched 64×64×64 products (512 = 64 sequences × 8 heads: scores q·kᵀ, output p·v,
 * and the transposed-A gradients).
 */
const TRAINING_SHAPES = [
  '4096x512x1536:nt',
  '4096x512x512:nt',
  '4096x1536x512:nt',
  '4096x1536x512:nn',
  '4096x8192x512:nn',
  '1536x4096x512:tn',
  '512x4096x512:tn',
  '512x4096x1536:tn',
  '512/64x64x64:nt',
  '512/64x64x64:nn',
  '512/64x64x64:tn',
].join(',');

/** Parses `--shapes`: comma-separated `[batch/]MxKxN[:ab]`, or `training`. */
function parseShapes(text: string): MatmulSize[] {
  return (text === 'training' ? TRAINING_SHAPES : text).split(',').map((item) => {
    const match = /^(?:(\d+)\/)?(\d+)x(\d+)x(\d+)(?::([nt])([nt]))?$/.exec(item);
    const numbers = match ? [match[1] ?? '1', match[2], match[3], match[4]].map(Number) : [];
    if (!match || !numbers.every((number) => Number.isInteger(number) && number > 0)) {
      throw new Error(`--shapes: '${item}' is not [batch/]MxKxN[:ab] (positive integers, a and b each n or t)`);
    }
    const [batch, M, K, N] = numbers;
    return { batch, M, K, N, transposeA: match[5] === 't', transposeB: match[6] === 't' };
  });
}

interface Settings {
  json: boolean;
  repeats: number;
  rounds: number;
  threads: number[];
  sizes: MatmulSize[];
  peakPerCore: number;
  /** Bytes of distinct B cycled through per timed pass (--cold), or 0 for one hot B. */
  coldBytes: number;
}

/** The default working set of --cold: more than the 32 MiB L3 here, about the 94 MiB a 25M-model decode step reads. */
const COLD_DEFAULT_MIB = 96;

function parseArguments(argv: string[]): Settings {
  const { value, positiveList } = readFlags(argv);
  const sizes = parseShapes(value('--shapes', DEFAULT_MATMUL_SHAPES));
  const threads = positiveList('--threads', '1,2');
  const repeats = Number(value('--repeats', '10'));
  const rounds = Number(value('--rounds', '3'));
  const peakPerCore = Number(value('--peak-per-core', '0'));
  if (!Number.isInteger(repeats) || repeats < 1) throw new Error('--repeats: a positive integer');
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds: a positive integer');
  const coldIndex = argv.indexOf('--cold');
  const coldValue = argv[coldIndex + 1];
  // The MiB value is optional, so a word after --cold that is neither a number nor a flag is a typo, not a default.
  if (coldIndex >= 0 && coldValue !== undefined && !coldValue.startsWith('--') && !/^\d+$/.test(coldValue))
    throw new Error(`--cold: '${coldValue}' is not a whole number of MiB`);
  const coldText =
    coldIndex >= 0 && /^\d+$/.test(argv[coldIndex + 1] ?? '') ? argv[coldIndex + 1] : String(COLD_DEFAULT_MIB);
  const coldBytes = coldIndex >= 0 ? Number(coldText) * 2 ** 20 : 0;
  if (coldIndex >= 0 && !(coldBytes > 0)) throw new Error('--cold: a positive number of MiB');
  return { json: argv.includes('--json'), repeats, rounds, threads, sizes, peakPerCore, coldBytes };
}

function randomArray(length: number, seed: number): Float32Array {
  let state = seed >>> 0;
  return Float32Array.from({ length }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 - 0.5;
  });
}

/** Best-of-`repeats` seconds of one native product (after one warm-up run). */
function timeNative(backend: NativeBackend, size: MatmulSize, repeats: number): number {
  const { M, K, N, batch = 1, transposeA = false, transposeB = false } = size;
  const a = randomArray(batch * M * K, 1);
  const b = randomArray(batch * K * N, 2);
  const out = new Float32Array(batch * M * N);
  const shape = { batch, M, K, N, transposeA, transposeB, aBatchStride: M * K, bBatchStride: K * N, accumulate: false };
  backend.matmul(a, b, out, shape);
  let best = Infinity;
  for (let repeat = 0; repeat < repeats; repeat++) {
    const start = performance.now();
    backend.matmul(a, b, out, shape);
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return best;
}

/**
 * Best-of-`repeats` seconds per product with B cold (--cold): `count` distinct B, each packed once on a warm-up
 * pass inside withConstantOperands, then each timed pass multiplies by every B in turn, so each product reads
 * its packed B from DRAM as a decode step does.
 */
function timeNativeCold(backend: NativeBackend, size: MatmulSize, repeats: number, coldBytes: number): number {
  const { M, K, N, batch = 1, transposeA = false, transposeB = false } = size;
  if (batch !== 1 || transposeA) throw new Error('--cold: only unbatched products with a plain A (x·W or x·Wᵀ)');
  const count = Math.max(2, Math.ceil(coldBytes / (K * N * 4)));
  const a = randomArray(M * K, 1);
  const weights = Array.from({ length: count }, (_, index) => randomArray(K * N, 2 + index));
  const out = new Float32Array(M * N);
  const shape = { batch, M, K, N, transposeA, transposeB, aBatchStride: M * K, bBatchStride: K * N, accumulate: false };
  if (!backend.withConstantOperands) throw new Error('--cold: the native backend has no packed constant operands');
  return backend.withConstantOperands(weights, () => {
    for (const b of weights) backend.matmul(a, b, out, shape);
    let best = Infinity;
    for (let repeat = 0; repeat < repeats; repeat++) {
      const start = performance.now();
      for (const b of weights) backend.matmul(a, b, out, shape);
      best = Math.min(best, (performance.now() - start) / 1000 / count);
    }
    return best;
  });
}

function report(settings: Settings, record: Record<string, unknown>): void {
  if (settings.json) {
    console.log(JSON.stringify({ scenario: 'matmul-native', ...record }));
    return;
  }
  const { backend, threads, gflops, peakFraction, ratioToOpenblas, error } = record;
  if (error) console.log(`${backend} threads=${threads}: ${error}`);
  else {
    const ratio = ratioToOpenblas === undefined ? '' : `  ${Number(ratioToOpenblas).toFixed(2)}x OpenBLAS`;
    console.log(
      `${String(backend).padEnd(8)} t=${threads} ${shapeText(record as unknown as MatmulSize)}`.padEnd(40) +
        `${Number(gflops).toFixed(1).padStart(7)} GFLOP/s  ${(100 * Number(peakFraction)).toFixed(0)}% of peak${ratio}`,
    );
  }
}

/**
 * Measures one thread count. Native and OpenBLAS alternate shape by shape for `rounds` rounds and each
 * keeps its best, so load from other processes on a shared machine hits both alike.
 */
function measureThreads(settings: Settings, threads: number, backend: NativeBackend | null): void {
  const peak = peakGflops(settings.peakPerCore, threads);
  const key = shapeText;
  const blas = new Map<string, OpenblasResult>();
  const native = new Map<string, number>();
  let blasError: string | undefined;
  let coreType: string | undefined;
  for (let round = 0; round < settings.rounds; round++) {
    for (const size of settings.sizes) {
      if (blasError === undefined && settings.coldBytes === 0) {
        const measured = measureOpenblas([size], threads, settings.repeats);
        if ('error' in measured) blasError = measured.error;
        else {
          coreType = measured.coreType;
          const result = measured.results[0];
          if (!blas.has(key(size)) || result.gflops > blas.get(key(size))!.gflops) blas.set(key(size), result);
        }
      }
      if (backend) {
        const seconds =
          settings.coldBytes > 0
            ? timeNativeCold(backend, size, settings.repeats, settings.coldBytes)
            : timeNative(backend, size, settings.repeats);
        native.set(key(size), Math.min(seconds, native.get(key(size)) ?? Infinity));
      }
    }
  }
  if (blasError !== undefined) report(settings, { backend: 'openblas', threads, error: blasError });
  for (const result of blas.values()) {
    report(settings, { ...result, coreType: coreType ?? null, peakFraction: result.gflops / peak });
  }
  for (const size of settings.sizes) {
    const { M, K, N, batch = 1, transposeA = false, transposeB = false } = size;
    const fields = { batch, M, K, N, transposeA, transposeB };
    if (!backend) {
      report(settings, { backend: 'native', threads, ...fields, error: nativeAddonStatus().reason });
      continue;
    }
    const seconds = native.get(key(size))!;
    const gflops = (2 * batch * M * K * N) / seconds / 1e9;
    const reference = blas.get(key(size));
    report(settings, {
      backend: 'native',
      isa: backend.isa,
      threads,
      ...fields,
      ...(settings.coldBytes > 0 ? { coldMiB: settings.coldBytes / 2 ** 20 } : {}),
      seconds,
      gflops,
      peakFraction: gflops / peak,
      ...(reference ? { ratioToOpenblas: gflops / reference.gflops } : {}),
    });
  }
}

/** Runs the scenario; see the file comment for flags. */
export async function main(argv: string[]): Promise<void> {
  const settings = parseArguments(argv);
  for (const threads of settings.threads) {
    const backend = loadNativeBackend({ threads });
    try {
      measureThreads(settings, threads, backend);
    } finally {
      backend?.dispose();
    }
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
