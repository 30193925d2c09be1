/**
 * What bench/gpu/run.sh runs on a lent GPU machine (bundled by bench/gpu/prepare.sh, no Node install
 * there): the webgpu backend's conformance on that GPU, then its bench.
 *
 * Is: `node check.mjs <tinystories fixture folder> [parts]`, parts a comma list of
 * conformance, parity, matmul, step (default all), each printing JSON lines:
 * - conformance: every transpose pair, packed and shared (stride 0) batches, accumulate, one-row and
 *   odd shapes, against the js spec (relative to the largest magnitude, float32 sums); then every tile
 *   of webgpuMatmulTiles pinned, on ragged shapes and on whole tiles over many K slices;
 * - parity: the TinyStories fixture's PyTorch reference (per-token logprobs within 1e-4, loss and every
 *   gradient's L2 within a relative 1e-3, the greedy continuation exactly) with products on the GPU;
 * - matmul: `bench matmul --backends webgpu` (device-side GFLOP/s against the FMA peak measured in the
 *   same run, every tile on a line of its own) at 4096³ and the Qwen2.5-0.5B step's product shapes;
 * - step: bench/grpo-step.ts's GRPO step on webgpu (row kernels on native) and on native alone (all CPU
 *   threads) at shapes that fit the call's time.
 * CHECK_SHAPES and CHECK_STEP_MODELS (fixture, smollm2-135m-shape, qwen2.5-0.5b-shape) narrow the last
 * two for a rehearsal on lavapipe (CHECK_SQUARE the square product's size too); CHECK_TILES (a comma
 * list, or `all`) picks the tiles timed at the model's shapes, every tile being timed at the square.
 * Is not: a vitest suite (vitest is not there); the same checks run in CI on lavapipe as tests.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { loadCheckpoint } from '../../src/model/checkpoint.js';
import { Transformer } from '../../src/model/transformer.js';
import type { MatmulShape } from '../../src/tensor/backend.js';
import { matmulJs } from '../../src/tensor/backends/js.js';
import { createBackend, setBackend } from '../../src/tensor/backends/select.js';
import {
  type WebGpuBackend,
  type WebGpuMatmulTile,
  webgpuMatmulTiles,
} from '../../src/tensor/backends/webgpu/webgpu-backend.js';
import { crossEntropy, logSoftmax, noGrad } from '../../src/tensor/index.js';
import { runCase } from '../grpo-step.js';
import { main as matmulBench } from '../matmul.js';

const [fixture, partsArgument = 'conformance,parity,matmul,step'] = process.argv.slice(2);
const parts = new Set(partsArgument.split(','));
const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));

function conformance(): void {
  const backend = createBackend('webgpu') as WebGpuBackend;
  const cases: ConformanceCase[] = [
    // batch, M, K, N, transposeA, transposeB, shared B (stride 0), accumulate
    [1, 1, 1, 1, false, false, false, false],
    [1, 7, 33, 5, false, false, false, false],
    [3, 33, 7, 9, true, true, false, true],
    [2, 1, 896, 151, false, true, true, false],
    [4, 130, 129, 131, true, false, false, false],
    [1, 257, 64, 300, false, true, false, true],
    [5, 64, 512, 64, false, false, true, false],
    [1, 1000, 1, 3, false, false, false, false],
  ];
  let worst = 0;
  for (const entry of cases) {
    const relativeError = compareWithSpec(backend, entry);
    worst = Math.max(worst, relativeError);
    print({ check: 'matmul', ...describeCase(entry), relativeError });
  }
  print({ check: 'matmul conformance', worstRelativeError: worst, passed: worst <= 1e-5 });
  // Every tile pinned, before the matmul part prints its speed: ragged edges, then whole tiles (the
  // pipelined tiles' aligned form) over many K slices, where a missing barrier would show on a GPU.
  const tileCases: ConformanceCase[] = [
    [2, 131, 37, 133, true, true, false, true],
    [3, 70, 300, 67, false, false, true, false],
    [2, 256, 512, 256, true, true, false, true],
    [3, 384, 256, 128, false, false, true, false],
  ];
  for (const tile of webgpuMatmulTiles) {
    let tileWorst = 0;
    try {
      for (const entry of tileCases) tileWorst = Math.max(tileWorst, compareWithSpec(backend, entry, tile));
      print({ check: 'matmul tile conformance', tile, worstRelativeError: tileWorst, passed: tileWorst <= 1e-5 });
    } catch (error) {
      print({ check: 'matmul tile conformance', tile, error: (error as Error).message, passed: false });
    }
  }
  backend.dispose();
}

/** batch, M, K, N, transposeA, transposeB, shared B (stride 0), accumulate. */
type ConformanceCase = [number, number, number, number, boolean, boolean, boolean, boolean];

function describeCase([batch, M, K, N, transposeA, transposeB, shared, accumulate]: ConformanceCase) {
  return { batch, M, K, N, transposeA, transposeB, shared, accumulate };
}

/** The product on the GPU (on `tile` when given) against the js spec, relative to the largest magnitude. */
function compareWithSpec(backend: WebGpuBackend, entry: ConformanceCase, tile?: WebGpuMatmulTile): number {
  const { batch, M, K, N, transposeA, transposeB, shared, accumulate } = describeCase(entry);
  const shape: MatmulShape = {
    batch,
    M,
    K,
    N,
    transposeA,
    transposeB,
    aBatchStride: M * K,
    bBatchStride: shared ? 0 : K * N,
    accumulate,
  };
  const a = Float32Array.from({ length: batch * M * K }, (_, i) => Math.sin(i * 0.37));
  const b = Float32Array.from({ length: (shared ? 1 : batch) * K * N }, (_, i) => Math.cos(i * 0.11));
  const gpu = Float32Array.from({ length: batch * M * N }, (_, i) => (i % 5) - 2);
  const spec = gpu.slice();
  if (tile) backend.matmulOnTile(a, b, gpu, shape, tile);
  else backend.matmul(a, b, gpu, shape);
  matmulJs(a, b, spec, shape);
  let scale = 1e-30;
  let error = 0;
  for (let i = 0; i < spec.length; i++) {
    scale = Math.max(scale, Math.abs(spec[i]));
    error = Math.max(error, Math.abs(gpu[i] - spec[i]));
  }
  return error / scale;
}

function parity(): void {
  setBackend('webgpu');
  const reference = JSON.parse(readFileSync(join(fixture, 'reference.json'), 'utf8'));
  const checkpoint = loadCheckpoint(fixture);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  const ids = Int32Array.from(reference.forward.input_ids as number[]);
  const V = checkpoint.config.vocabSize;
  const logprobs = noGrad(() => logSoftmax(model.forward(ids, 1)));
  let logprobError = 0;
  (reference.forward.next_token_logprob as number[]).forEach((value, t) => {
    logprobError = Math.max(logprobError, Math.abs(logprobs.data[t * V + ids[t + 1]] - value));
  });
  const loss = crossEntropy(model.forward(ids.subarray(0, -1), 1), ids.subarray(1));
  loss.backward();
  let gradientError = 0;
  for (const [name, expected] of Object.entries(reference.backward.gradients as Record<string, { l2: number }>)) {
    const ours = name === 'lm_head.weight' ? 'model.embed_tokens.weight' : name;
    const gradient = model.parameters.get(ours)!.grad!.data;
    let squares = 0;
    for (const g of gradient) squares += g * g;
    gradientError = Math.max(gradientError, Math.abs(Math.sqrt(squares) - expected.l2) / expected.l2);
  }
  const lossError = Math.abs(loss.item() - reference.backward.value) / reference.backward.value;
  const { prompt_ids: prompt, max_new_tokens: maxNew, output_ids: expectedIds } = reference.greedy;
  const greedyIds = noGrad(() => {
    const sequence = [...prompt];
    const cache = model.createCache();
    let pending = sequence.slice();
    for (let step = 0; step < maxNew; step++) {
      const logits = model.forward(Int32Array.from(pending), 1, { cache });
      const last = logits.data.subarray(logits.size - V);
      let best = 0;
      for (let i = 1; i < V; i++) if (last[i] > last[best]) best = i;
      sequence.push(best);
      pending = [best];
      if (checkpoint.config.eosTokenIds.includes(best)) break;
    }
    return sequence;
  });
  const greedyEqual = JSON.stringify(greedyIds) === JSON.stringify(expectedIds);
  print({
    check: 'tinystories parity with PyTorch',
    logprobError,
    lossError,
    gradientL2Error: gradientError,
    greedyEqual,
    passed: logprobError < 1e-4 && lossError < 1e-3 && gradientError < 1e-3 && greedyEqual,
  });
  setBackend('js');
}

async function matmul(): Promise<void> {
  // 4096³ (the target) and the Qwen2.5-0.5B step's products at 64 × 512 tokens (32768 rows):
  // q/o (896 → 896), gate/up (896 → 4864), down (4864 → 896), and a 1024-row vocabulary chunk.
  const shapes =
    process.env.CHECK_SHAPES ??
    '4096x4096x4096,1024x1024x1024,32768x896x896,32768x896x4864,32768x4864x896,1024x896x151936';
  const square = process.env.CHECK_SQUARE ?? '4096x4096x4096';
  // Every tile at the square; the model's shapes on fewer (CHECK_TILES, `all` for every one) to fit the call.
  const tiles = process.env.CHECK_TILES ?? 'vector128,pipelined128,pipelined128k16';
  const modelTiles = tiles === 'all' ? [] : ['--tiles', tiles];
  await matmulBench(['--backends', 'webgpu', '--shapes', square, '--repeats', '2', '--json']);
  // The model's products: B is a weight stored [N, K].
  await matmulBench([
    '--backends',
    'webgpu',
    '--shapes',
    shapes,
    '--repeats',
    '2',
    '--json',
    '--transpose-b',
    ...modelTiles,
  ]);
}

function step(): void {
  const threads = availableParallelism();
  process.env.GRPO_BENCH_FIXTURE = fixture;
  const models = (process.env.CHECK_STEP_MODELS ?? 'smollm2-135m-shape,qwen2.5-0.5b-shape').split(',');
  // CHECK_STEP_CASES narrows to the cases whose index is listed (e.g. "2,3").
  const chosen = process.env.CHECK_STEP_CASES?.split(',').map(Number);
  for (const [index, [model, prompts, groupSize, promptLength, newTokens]] of (
    [
      ['fixture', 4, 4, 32, 16],
      ['smollm2-135m-shape', 2, 4, 64, 32],
      ['qwen2.5-0.5b-shape', 1, 4, 32, 16],
      ['qwen2.5-0.5b-shape', 2, 4, 128, 128],
    ] as const
  ).entries()) {
    if (!models.includes(model) || (chosen && !chosen.includes(index))) continue;
    // webgpu with native's row kernels on every CPU thread, against native alone on the same machine.
    for (const backend of ['webgpu', 'native']) {
      process.env.GRPO_THREADS = String(threads);
      const started = performance.now();
      runCase({
        model,
        backend,
        prompts,
        groupSize,
        promptLength,
        newTokens,
        microBatch: prompts * groupSize,
        recompute: 'selective',
      });
      print({ check: 'step wall', model, backend, seconds: (performance.now() - started) / 1000 });
    }
  }
}

process.env.GRPO_QUIET = '1';
for (const [name, run] of [
  ['conformance', conformance],
  ['parity', parity],
  ['matmul', matmul],
  ['step', step],
] as const) {
  if (!parts.has(name)) continue;
  const started = performance.now();
  try {
    await run();
  } catch (error) {
    print({ check: name, error: (error as Error).stack ?? String(error) });
  }
  print({ part: name, seconds: (performance.now() - started) / 1000 });
}
process.exit(0);
