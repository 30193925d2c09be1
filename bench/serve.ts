/**
 * Bench scenario `serve`: generated tokens/s of `grpo serve` (HTTP on 127.0.0.1, the decode
 * batcher) under `--requests` concurrent /v1/completions requests of one prompt each, against the
 * same prompts through one direct `generate` call, measured in the same run, with their ratio; and
 * the same requests sent one at a time, to show what the batcher merges.
 *
 * Is: `npm run bench -- serve [--json] [--models fixture,random-25m] [--requests 64]
 * [--prompt-length 32] [--new-tokens 32] [--repeats 2]`. Requests are sampled (temperature 1) with
 * no seed, so they may share batches; the model's EOS still stops them, so tokens are counted from
 * what came back. Each line is the best of `--repeats` runs.
 * Is not: a test; on a shared machine numbers vary, so compare lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { startServe } from '../src/serve/serve-server.js';
import { loadCheckpoint, resolveStopTokenIds } from '../src/model/checkpoint.js';
import { createSmallConfig } from '../src/model/config.js';
import { loadTokenizer } from '../src/model/tokenizer.js';
import { Transformer } from '../src/model/transformer.js';
import { generate } from '../src/sampling/sampler.js';
import { getBackend, Random } from '../src/tensor/index.js';
import { readFlags } from './_flags.js';
import { RANDOM_25M_SHAPE } from './generate.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;

interface Line {
  model: string;
  backend: string;
  mode: 'generate' | 'serve-concurrent' | 'serve-sequential';
  requests: number;
  tokens: number;
  seconds: number;
  tokensPerSecond: number;
  /** tokens/s of this mode over the direct `generate` line of the same model in this run. */
  ratioToGenerate: number;
  /** Requests per decode batch the server ran (serve modes). */
  meanBatchRequests?: number;
}

// The client runs in a worker thread: generate() blocks the server's event loop, and a client on
// that same loop could not send while a batch runs, so its requests would arrive in waves.
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, prompts, newTokens, concurrent } = workerData;
const send = async (prompt) => {
  const response = await fetch(url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: newTokens, temperature: 1, return_token_ids: true }),
  });
  const answer = await response.json();
  return answer.choices[0].token_ids.length;
};
(async () => {
  const start = performance.now();
  let tokens = 0;
  if (concurrent) tokens = (await Promise.all(prompts.map(send))).reduce((a, b) => a + b, 0);
  else for (const prompt of prompts) tokens += await send(prompt);
  parentPort.postMessage({ tokens, seconds: (performance.now() - start) / 1000 });
})();
`;

function sendFromWorker(
  url: string,
  prompts: number[][],
  newTokens: number,
  concurrent: boolean,
): Promise<{ tokens: number; seconds: number }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(CLIENT, { eval: true, workerData: { url, prompts, newTokens, concurrent } });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

async function bestOf<T extends { seconds: number }>(repeats: number, run: () => Promise<T>): Promise<T> {
  let best: T | null = null;
  for (let r = 0; r < repeats; r++) {
    const result = await run();
    if (!best || result.seconds < best.seconds) best = result;
  }
  return best!;
}

export async function main(argv: string[]): Promise<void> {
  const { value, positive } = readFlags(argv);
  const json = argv.includes('--json');
  const requests = positive('--requests', '64');
  const promptLength = positive('--prompt-length', '32');
  const newTokens = positive('--new-tokens', '32');
  const repeats = positive('--repeats', '2');
  const models = value('--models', 'fixture,random-25m').split(',');
  const checkpoint = loadCheckpoint(FIXTURE);
  const tokenizer = loadTokenizer(FIXTURE);
  const stopTokenIds = resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig);
  for (const name of models) {
    if (name !== 'fixture' && name !== 'random-25m')
      throw new Error(`--models: unknown '${name}'; known: fixture, random-25m`);
    const model =
      name === 'fixture'
        ? Transformer.fromTensors(checkpoint.config, checkpoint.tensors)
        : Transformer.random(createSmallConfig({ ...RANDOM_25M_SHAPE, vocabSize: checkpoint.config.vocabSize }), 7);
    const random = new Random(42);
    const prompts = Array.from({ length: requests }, () =>
      Array.from({ length: promptLength }, () => 3 + Math.floor(random.uniform() * (model.config.vocabSize - 3))),
    );
    const running = await startServe({ model, modelName: name, tokenizer, stopTokenIds, host: '127.0.0.1', port: 0 });
    const lines: Line[] = [];
    try {
      generate(model, { prompts: prompts.slice(0, 2), maxNewTokens: 4, seed: 0 }); // JIT warm-up
      const direct = await bestOf(repeats, async () => {
        const start = performance.now();
        const completions = generate(model, {
          prompts,
          maxNewTokens: newTokens,
          stopTokenIds,
          temperature: 1,
          seed: 1,
        });
        const seconds = (performance.now() - start) / 1000;
        return { seconds, tokens: completions.reduce((total, c) => total + c.ids.length, 0) };
      });
      const timeServe = (concurrent: boolean) =>
        bestOf(repeats, async () => {
          const before = running.batcher.batchSizes.length;
          const { seconds, tokens } = await sendFromWorker(running.url, prompts, newTokens, concurrent);
          const batches = running.batcher.batchSizes.slice(before);
          return { seconds, tokens, meanBatchRequests: requests / batches.length };
        });
      const concurrent = await timeServe(true);
      const sequential = await timeServe(false);
      const directRate = direct.tokens / direct.seconds;
      const line = (
        mode: Line['mode'],
        result: { seconds: number; tokens: number; meanBatchRequests?: number },
      ): Line => ({
        model: name,
        backend: getBackend().name,
        mode,
        requests,
        tokens: result.tokens,
        seconds: result.seconds,
        tokensPerSecond: result.tokens / result.seconds,
        ratioToGenerate: result.tokens / result.seconds / directRate,
        ...(result.meanBatchRequests !== undefined ? { meanBatchRequests: result.meanBatchRequests } : {}),
      });
      lines.push(line('generate', direct), line('serve-concurrent', concurrent), line('serve-sequential', sequential));
    } finally {
      await running.close();
    }
    for (const line of lines)
      console.log(
        json
          ? JSON.stringify(line)
          : `${line.model.padEnd(11)}${line.backend.padEnd(8)}${line.mode.padEnd(18)}${String(line.tokens).padStart(7)} tokens ${line.tokensPerSecond.toFixed(0).padStart(8)} tokens/s  ×${line.ratioToGenerate.toFixed(2)} of generate${line.meanBatchRequests ? `  ${line.meanBatchRequests.toFixed(1)} requests/batch` : ''}`,
      );
  }
}
