/**
 * Bench scenario `generate`: prefill and decode tokens/s of the KV-cached sampler at several batch
 * sizes, for the tinystories-656k fixture and a ~25M-parameter random Llama, per backend, with
 * model-FLOPs utilisation (mfu) against the same backend's 1024³ matmul rate measured in this run, and
 * against this machine's FMA peak with the backend's threads measured in this run (fmaFraction, bench/peak).
 *
 * Is: `npm run bench -- generate [--json] [--backends native,wasm,js] [--batches 1,16,64]
 * [--prompt-length 64] [--new-tokens 32] [--models fixture,random-25m] [--top-p 1]`.
 * One JSON line per (model, backend, batch, phase) with --json, else a table.
 * - prefill: B distinct prompts of `prompt-length` random ids in one forward with a fresh cache, the
 *   lm_head on each prompt's last position only (what the sampler does). tokens = B · prompt-length.
 * - decode: `generate` with one prompt and numSamples = B (a GRPO group), temperature 1, no stop
 *   ids, `new-tokens` each; the time of the one-prompt prefill (measured apart) is subtracted, so it
 *   covers the cache copy to B rows, every decode step and the sampling. tokens = B · new-tokens.
 * mfu = model GFLOP/s / matmul GFLOP/s, with 2 FLOPs per weight of every linear (lm_head on the
 * rows computed) plus 4·Hq·D per visible key per layer for attention. The 25M model is skipped on
 * `js` (plain loops: minutes per line). Each line is the best of `--repeats` runs (default 2).
 * Is not: a test; on a shared machine numbers vary, so compare lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import { loadCheckpoint } from '../src/model/checkpoint.js';
import { createSmallConfig, type ModelConfig } from '../src/model/config.js';
import { Transformer } from '../src/model/transformer.js';
import { generate } from '../src/sampling/sampler.js';
import { getBackend, noGrad, Random, setBackend } from '../src/tensor/index.js';
import { measurePeak } from './peak/peak.js';
import { readFlags } from './_flags.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;

/** The ~25M random model: 24.6M parameters (4.2M of them the tied embedding). */
export const RANDOM_25M_SHAPE = {
  vocabSize: 8192,
  hiddenSize: 512,
  intermediateSize: 1536,
  numLayers: 6,
  numHeads: 8,
  numKeyValueHeads: 8,
  maxPositionEmbeddings: 1024,
};

/** SmolLM2-135M's config.json shape (HuggingFaceTB/SmolLM2-135M), for random weights: ~135M parameters. */
export const SMOLLM2_135M_SHAPE = {
  vocabSize: 49152,
  hiddenSize: 576,
  intermediateSize: 1536,
  numLayers: 30,
  numHeads: 9,
  numKeyValueHeads: 3,
  maxPositionEmbeddings: 8192,
  tieWordEmbeddings: true,
  ropeTheta: 100000,
};

/**
 * Qwen2.5-0.5B's config.json shape (Qwen/Qwen2.5-0.5B) for random weights, ~494M parameters. As a Llama
 * (createSmallConfig): Qwen2's q/k/v biases (~0.1M parameters) are left out, which changes no product.
 */
export const QWEN25_05B_SHAPE = {
  vocabSize: 151936,
  hiddenSize: 896,
  intermediateSize: 4864,
  numLayers: 24,
  numHeads: 14,
  numKeyValueHeads: 2,
  maxPositionEmbeddings: 32768,
  tieWordEmbeddings: true,
  ropeTheta: 1000000,
};

interface Settings {
  json: boolean;
  backends: string[];
  batches: number[];
  models: string[];
  promptLength: number;
  newTokens: number;
  topP: number;
  repeats: number;
}

function parseArguments(argv: string[]): Settings {
  const { value, positive } = readFlags(argv);
  const batches = value('--batches', '1,16,64').split(',').map(Number);
  if (!batches.every((b) => Number.isInteger(b) && b > 0)) throw new Error('--batches: positive integers');
  const models = value('--models', 'fixture,random-25m').split(',');
  for (const model of models)
    if (model !== 'fixture' && model !== 'random-25m')
      throw new Error(`--models: unknown model '${model}'; known: fixture, random-25m`);
  const topP = Number(value('--top-p', '1'));
  if (!(topP > 0 && topP <= 1)) throw new Error('--top-p: a number in (0, 1]');
  return {
    json: argv.includes('--json'),
    backends: value('--backends', process.env.GRPO_BACKEND ?? 'native,wasm,js').split(','),
    batches,
    models,
    promptLength: positive('--prompt-length', '64'),
    newTokens: positive('--new-tokens', '32'),
    topP,
    repeats: positive('--repeats', '2'),
  };
}

/** Best-of-3 GFLOP/s of a 1024³ product through the current backend's matmul. */
export function measureMatmulGflops(): number {
  const n = 1024;
  const random = new Random(1);
  const a = Float32Array.from({ length: n * n }, () => random.uniform() - 0.5);
  const b = Float32Array.from({ length: n * n }, () => random.uniform() - 0.5);
  const out = new Float32Array(n * n);
  const shape = {
    batch: 1,
    M: n,
    K: n,
    N: n,
    transposeA: false,
    transposeB: false,
    aBatchStride: 0,
    bBatchStride: 0,
    accumulate: false,
  };
  const backend = getBackend();
  backend.matmul(a, b, out, shape);
  const repeats = backend.name === 'js' ? 1 : 3;
  let best = Infinity;
  for (let r = 0; r < repeats; r++) {
    const start = performance.now();
    backend.matmul(a, b, out, shape);
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return (2 * n ** 3) / best / 1e9;
}

/** Parameters of every linear layer except the lm_head (weights that each token multiplies once). */
function bodyLinearWeights(config: ModelConfig): number {
  const { hiddenSize: H, intermediateSize: I, numHeads, numKeyValueHeads, headDim: D, numLayers } = config;
  const attention = H * numHeads * D * 2 + H * numKeyValueHeads * D * 2;
  return numLayers * (attention + 3 * H * I);
}

/** Forward FLOPs of `tokens` new tokens that see `keysSeen` keys in total, `headRows` lm_head rows. */
export function forwardFlops(config: ModelConfig, tokens: number, keysSeen: number, headRows: number): number {
  const attention = 4 * config.numHeads * config.headDim * config.numLayers * keysSeen;
  return 2 * bodyLinearWeights(config) * tokens + attention + 2 * config.hiddenSize * config.vocabSize * headRows;
}

/** Keys visible to the queries at positions first..first+count−1 summed (causal: position p sees p+1). */
export function causalKeys(first: number, count: number): number {
  return count * first + (count * (count + 1)) / 2;
}

export function parameterCount(model: Transformer): number {
  let total = 0;
  for (const parameter of model.parameters.values()) total += parameter.size;
  return total;
}

function randomIds(count: number, vocabSize: number, random: Random): number[] {
  return Array.from({ length: count }, () => 1 + Math.floor(random.uniform() * (vocabSize - 1)));
}

function timePrefill(model: Transformer, batch: number, promptLength: number, random: Random): number {
  const ids = Int32Array.from(randomIds(batch * promptLength, model.config.vocabSize, random));
  const lastRows = Int32Array.from({ length: batch }, (_, b) => b * promptLength + promptLength - 1);
  return noGrad(() => {
    const start = performance.now();
    model.forward(ids, batch, { cache: model.createCache(), logitRows: lastRows });
    return (performance.now() - start) / 1000;
  });
}

function timeDecode(model: Transformer, batch: number, settings: Settings, random: Random): number {
  const prompt = randomIds(settings.promptLength, model.config.vocabSize, random);
  const prefill = timePrefill(model, 1, settings.promptLength, random);
  const start = performance.now();
  generate(model, {
    prompts: [prompt],
    numSamples: batch,
    maxNewTokens: settings.newTokens,
    stopTokenIds: [],
    seed: 1,
    temperature: 1,
    topP: settings.topP,
  });
  return Math.max(1e-9, (performance.now() - start) / 1000 - prefill);
}

interface Line {
  model: string;
  backend: string;
  threads: number;
  batch: number;
  phase: 'prefill' | 'decode';
  tokens: number;
  seconds: number;
  tokensPerSecond: number;
  gflops: number;
  matmulGflops: number;
  mfu: number;
  fmaGflops: number;
  fmaFraction: number;
  parameters: number;
}

function report(line: Line, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(line));
    return;
  }
  console.log(
    `${line.model.padEnd(11)}${line.backend.padEnd(8)}${String(line.batch).padStart(6)}  ${line.phase.padEnd(8)}` +
      `${line.tokensPerSecond.toFixed(0).padStart(10)}${line.gflops.toFixed(1).padStart(9)}${(line.mfu * 100).toFixed(1).padStart(7)}%` +
      `${(line.fmaFraction * 100).toFixed(1).padStart(7)}%`,
  );
}

function loadModel(name: string): Transformer {
  if (name === 'fixture') {
    const checkpoint = loadCheckpoint(FIXTURE);
    return Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  }
  return Transformer.random(createSmallConfig(RANDOM_25M_SHAPE), 7);
}

function benchModel(
  modelName: string,
  backendName: string,
  peaks: { matmulGflops: number; fmaGflops: number },
  settings: Settings,
): void {
  const { matmulGflops, fmaGflops } = peaks;
  const model = loadModel(modelName);
  const { config } = model;
  const random = new Random(42);
  const P = settings.promptLength;
  const N = settings.newTokens;
  const threads = getBackend().threads;
  timeDecode(model, 2, { ...settings, newTokens: 4 }, random); // JIT warm-up
  for (const batch of settings.batches) {
    const phases = [
      {
        phase: 'prefill' as const,
        tokens: batch * P,
        flops: batch * forwardFlops(config, P, causalKeys(0, P), 1),
        time: () => timePrefill(model, batch, P, random),
      },
      {
        phase: 'decode' as const,
        tokens: batch * N,
        flops: batch * forwardFlops(config, N, causalKeys(P, N), N),
        time: () => timeDecode(model, batch, settings, random),
      },
    ];
    for (const { phase, tokens, flops, time } of phases) {
      let seconds = Infinity;
      for (let r = 0; r < settings.repeats; r++) seconds = Math.min(seconds, time());
      const gflops = flops / seconds / 1e9;
      report(
        {
          model: modelName,
          backend: backendName,
          threads,
          batch,
          phase,
          tokens,
          seconds,
          tokensPerSecond: tokens / seconds,
          gflops,
          matmulGflops,
          mfu: gflops / matmulGflops,
          fmaGflops,
          fmaFraction: gflops / fmaGflops,
          parameters: parameterCount(model),
        },
        settings.json,
      );
    }
  }
}

/** Runs the scenario; see the file header for flags. */
export async function main(argv: string[]): Promise<void> {
  const settings = parseArguments(argv);
  if (!settings.json)
    console.log(`${'model'.padEnd(11)}${'backend'.padEnd(8)} batch  phase      tokens/s   GFLOP/s    mfu   %fma`);
  for (const backendName of settings.backends) {
    try {
      setBackend(backendName);
    } catch (error) {
      console.error(`generate bench: skipping backend ${backendName}: ${(error as Error).message}`);
      continue;
    }
    const matmulGflops = measureMatmulGflops();
    const peak = measurePeak(getBackend().threads);
    if ('error' in peak) throw new Error(`generate bench: ${peak.error}`);
    if (!settings.json)
      console.log(
        `# ${backendName}: 1024³ matmul ${matmulGflops.toFixed(1)} GFLOP/s; ` +
          `FMA peak (${getBackend().threads} threads, bench/peak) ${peak.fmaGflops.toFixed(1)} GFLOP/s`,
      );
    for (const modelName of settings.models) {
      if (backendName === 'js' && modelName === 'random-25m') {
        console.error('generate bench: random-25m skipped on js (plain loops take minutes per line)');
        continue;
      }
      benchModel(modelName, backendName, { matmulGflops, fmaGflops: peak.fmaGflops }, settings);
    }
  }
  getBackend().dispose();
}
