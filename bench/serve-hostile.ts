/**
 * Bench scenario `serve-hostile` (issue 36): how long other clients wait while one hostile request
 * hits `grpo serve` or `grpo serve-rewards`. For each hostile request a client thread sends small
 * probes (GET /v1/models and a 4-token completion, or a one-row reward) every `--every` ms from
 * just before the hostile request until it has been answered, and reports the probes' median and
 * worst latency, next to the hostile request's own status and time, and an idle baseline. The
 * probes and the hostile request are sent from two threads, so neither holds the other's clock.
 *
 * Is: `npm run bench -- serve-hostile [--json] [--every 50] [--models fixture,random-25m]
 * [--servers serve,serve-rewards]`. Servers run in this process with their default limits.
 * Is not: a test (tests assert behaviour, serve-bounds.test.ts, reward-workers.test.ts); on a shared
 * machine the numbers vary, so compare lines from the same run only.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { startRewardServer } from '../src/serve/reward-server.js';
import { RewardWorkerPool } from '../src/rewards/workers.js';
import { startServe } from '../src/serve/serve-server.js';
import { loadCheckpoint, resolveStopTokenIds } from '../src/model/checkpoint.js';
import { createSmallConfig } from '../src/model/config.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { Transformer } from '../src/model/transformer.js';
import { getBackend } from '../src/tensor/index.js';
import { readFlags } from './_flags.js';
import { RANDOM_25M_SHAPE } from './generate.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;

/** A request as the client thread sends it. */
interface Request {
  path: string;
  method?: 'GET' | 'POST';
  /** A JSON body, or a string sent as is. */
  body?: unknown;
}

interface HostileCase {
  name: string;
  request: Request;
}

interface Line {
  server: string;
  model: string;
  backend: string;
  hostile: string;
  hostileStatus: number;
  hostileSeconds: number;
  probes: number;
  probeMedianMs: number;
  probeWorstMs: number;
}

// Probes every \`every\` ms, one in flight at a time, until told to stop (then at least one more).
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, probes, every } = workerData;
let stop = false;
parentPort.once('message', () => (stop = true));
(async () => {
  const latencies = [];
  for (let i = 0; !stop || latencies.length === 0; i++) {
    const { path, method, body } = probes[i % probes.length];
    const start = performance.now();
    const response = await fetch(url + path, { method: method ?? 'POST', body: method === 'GET' ? undefined : JSON.stringify(body) });
    await response.arrayBuffer();
    latencies.push(performance.now() - start);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
  parentPort.postMessage(latencies);
})();
`;

// The hostile request, from its own thread: building and sending a 50 MB body must not hold the prober.
const HOSTILE = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, request } = workerData;
(async () => {
  const body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
  const start = performance.now();
  const response = await fetch(url + request.path, { method: 'POST', body });
  await response.arrayBuffer();
  parentPort.postMessage({ status: response.status, seconds: (performance.now() - start) / 1000 });
})();
`;

async function underLoad(
  url: string,
  hostile: Request | null,
  probes: Request[],
  every: number,
): Promise<{ status: number; seconds: number; latencies: number[] }> {
  const prober = new Worker(PROBER, { eval: true, workerData: { url, probes, every } });
  const latencies = new Promise<number[]>((resolve, reject) => {
    prober.once('message', resolve);
    prober.once('error', reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  let result = { status: 0, seconds: 0 };
  if (hostile) {
    const sender = new Worker(HOSTILE, { eval: true, workerData: { url, request: hostile } });
    result = await new Promise((resolve, reject) => {
      sender.once('message', resolve);
      sender.once('error', reject);
    });
    await sender.terminate();
  } else await new Promise((resolve) => setTimeout(resolve, 1000));
  prober.postMessage('stop');
  const measured = await latencies;
  await prober.terminate();
  return { ...result, latencies: measured };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function measure(
  server: string,
  model: string,
  url: string,
  cases: HostileCase[],
  probes: Request[],
  every: number,
): Promise<Line[]> {
  const lines: Line[] = [];
  for (const { name, request } of [{ name: 'none (idle baseline)', request: null }, ...cases]) {
    const { status, seconds, latencies } = await underLoad(url, request, probes, every);
    lines.push({
      server,
      model,
      backend: getBackend().name,
      hostile: name,
      hostileStatus: status,
      hostileSeconds: seconds,
      probes: latencies.length,
      probeMedianMs: median(latencies),
      probeWorstMs: Math.max(...latencies),
    });
  }
  return lines;
}

async function serveLines(models: string[], every: number): Promise<Line[]> {
  const checkpoint = loadCheckpoint(FIXTURE);
  const tokenizer = loadTokenizer(FIXTURE);
  const stopTokenIds = resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig);
  const lines: Line[] = [];
  for (const name of models) {
    const model =
      name === 'fixture'
        ? Transformer.fromTensors(checkpoint.config, checkpoint.tensors)
        : Transformer.random(createSmallConfig({ ...RANDOM_25M_SHAPE, vocabSize: checkpoint.config.vocabSize }), 7);
    const running = await startServe({ model, modelName: name, tokenizer, stopTokenIds, port: 0 });
    const prose = 'Once upon a time there was a dog. ';
    const cases: HostileCase[] = [
      // The cases first (refused now), then the largest requests the default limits allow.
      { name: '50 MB text prompt', request: { path: '/v1/completions', body: { prompt: 'a'.repeat(50e6) } } },
      {
        name: 'n=1024 × max_tokens=500',
        request: { path: '/v1/completions', body: { prompt: 'x', n: 1024, max_tokens: 500 } },
      },
      { name: '20,000 prompts', request: { path: '/v1/completions', body: { prompt: Array(20_000).fill('x') } } },
      {
        name: 'prompt nested 10^4 deep',
        request: { path: '/v1/completions', body: `{"prompt": ${'['.repeat(1e4)}${']'.repeat(1e4)}}` },
      },
      {
        name: 'largest text allowed (65,536 chars)',
        request: { path: '/v1/completions', body: { prompt: prose.repeat(65_536 / prose.length), max_tokens: 1 } },
      },
      {
        name: 'largest batch allowed (512 seq × 500 tokens)',
        request: {
          path: '/v1/completions',
          body: {
            prompt: Array(64).fill('Once upon a time'),
            n: 8,
            max_tokens: 500,
            stop_token_ids: [],
            temperature: 1,
          },
        },
      },
    ];
    const probes: Request[] = [
      { path: '/v1/models', method: 'GET' },
      { path: '/v1/completions', body: { prompt: 'The dog', max_tokens: 4, temperature: 0 } },
    ];
    try {
      lines.push(...(await measure('serve', name, running.url, cases, probes, every)));
    } finally {
      await running.close();
    }
  }
  return lines;
}

async function serveRewardsLines(every: number): Promise<Line[]> {
  const directory = mkdtempSync(join(tmpdir(), 'grpo-bench-rewards-'));
  const source = join(directory, 'rewards.mjs');
  // A reward that never returns on one input, and real math-answer for everything else.
  writeFileSync(
    source,
    `import { mathAnswer } from ${JSON.stringify(new URL('../src/rewards/index.ts', import.meta.url).href)};
export function rewards() {
  const math = mathAnswer();
  return [{ name: 'hostile', weight: 1, reward: (input) => { if (input.completion === 'hang') for (;;) {} return math(input); } }];
}
`,
  );
  const pool = await RewardWorkerPool.start({
    source: { module: pathToFileURL(source).href, exportName: 'rewards', args: {} },
    timeoutMs: 2000,
  });
  const server = await startRewardServer({ workers: pool, port: 0 });
  try {
    return await measure(
      'serve-rewards',
      '-',
      server.url,
      [
        {
          name: 'a reward that never returns (timeout 2 s)',
          request: { path: '/get_reward', body: { query: ['hang'], labels: ['1'] } },
        },
        {
          name: 'label nested 10^5 deep',
          request: {
            path: '/get_reward',
            body: `{"query": ["a"], "labels": [${'{"a": '.repeat(1e5)}1${'}'.repeat(1e5)}]}`,
          },
        },
        {
          name: '4 hanging rows',
          request: { path: '/get_reward', body: { query: Array(4).fill('hang'), labels: Array(4).fill('1') } },
        },
      ],
      [{ path: '/get_reward', body: { prompt: 'p', response: '\\boxed{7}', label: '7' } }],
      every,
    );
  } finally {
    await server.close();
    await pool.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

export async function main(argv: string[]): Promise<void> {
  const { value, positive } = readFlags(argv);
  const json = argv.includes('--json');
  const every = positive('--every', '50');
  const models = value('--models', 'fixture,random-25m').split(',');
  for (const name of models)
    if (name !== 'fixture' && name !== 'random-25m')
      throw new Error(`--models: unknown '${name}'; known: fixture, random-25m`);
  const servers = value('--servers', 'serve,serve-rewards').split(',');
  const lines: Line[] = [];
  if (servers.includes('serve')) lines.push(...(await serveLines(models, every)));
  if (servers.includes('serve-rewards')) lines.push(...(await serveRewardsLines(every)));
  for (const line of lines)
    console.log(
      json
        ? JSON.stringify(line)
        : `${line.server.padEnd(14)}${line.model.padEnd(11)}${line.hostile.padEnd(46)} ${String(line.hostileStatus).padStart(3)} in ${line.hostileSeconds.toFixed(2).padStart(6)} s   probes ${String(line.probes).padStart(4)}  median ${line.probeMedianMs.toFixed(0).padStart(5)} ms  worst ${line.probeWorstMs.toFixed(0).padStart(5)} ms`,
    );
}
