/**
 * `grpo train` with `rollout.engine: openai` against an in-process `grpo serve` (127.0.0.1) on the
 * TinyStories checkpoint with LoRA: the adapter is loaded into the engine before every step's
 * rollout, and with concurrency 1 the engine draws exactly the local engine's samples, so every
 * logged metric except timings equals the local run's. An engine that errors, hangs, drops the
 * connection or answers malformed JSON mid-run stops the run after the retries with a message
 * saying so, summary.json says failed with that reason, and the checkpoint saved before is intact.
 * Also: the config refuses 'openai' without a base URL, without LoRA, or without mismatch correction.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapter } from '../model/adapter-files.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { buildProgram } from './main.js';
import { startServe, type RunningServer } from '../serve/serve-server.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'grpo-openai-engine-'));
const rows = join(scratch, 'rows.jsonl');
let engine: RunningServer;
const enginePaths: string[] = [];

beforeAll(async () => {
  writeFileSync(
    rows,
    Array.from({ length: 12 }, (_, i) => JSON.stringify({ question: `Tom had ${i} apples.`, answer: String(i) })).join(
      '\n',
    ),
  );
  const checkpoint = loadCheckpoint(tinyStoriesModel);
  engine = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName: 'tiny',
    tokenizer: loadTokenizer(tinyStoriesModel),
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    host: '127.0.0.1',
    port: 0,
  });
  engine.server.on('request', (request) => enginePaths.push(request.url ?? ''));
});
afterAll(async () => {
  await engine.close();
  rmSync(scratch, { recursive: true, force: true });
});

const baseSettings = [
  'grpo.steps=3',
  'grpo.promptsPerStep=2',
  'sampling.groupSize=4',
  'grpo.microBatchSize=8',
  'sampling.maxNewTokens=6',
  'evaluation.examples=2',
  'checkpoint.every=1',
  'lora.learningRate=0.01',
  'algorithm.mismatchCorrection={"mode":"truncate"}',
  `rewards=${JSON.stringify([{ name: 'regex', options: { pattern: 'a' } }])}`,
  `logging.runsDirectory=${JSON.stringify(scratch)}`,
];

async function train(runName: string, settings: string[]): Promise<void> {
  process.exitCode = 0;
  await buildProgram().parseAsync([
    'node',
    'grpo',
    'train',
    '--lora-rank',
    '4',
    '--model',
    tinyStoriesModel,
    '--data',
    rows,
    '--prompt-column',
    'question',
    '--reward',
    'math-answer',
    '--run-name',
    runName,
    '--quiet',
    ...[...baseSettings, ...settings].flatMap((setting) => ['--set', setting]),
  ]);
}

const metricsOf = (runName: string): Record<string, number>[] =>
  readFileSync(join(scratch, runName, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
const summaryOf = (runName: string) => JSON.parse(readFileSync(join(scratch, runName, 'summary.json'), 'utf8'));
const timing = (key: string) => key.startsWith('time/') || key === 'tokensPerSecond';

describe("rollout.engine 'openai'", () => {
  it('against grpo serve: adapter loaded every step, metrics equal to the local engine (seeds line up)', async () => {
    await train('local', []);
    expect(process.exitCode).toBe(0);
    enginePaths.length = 0;
    await train('remote', ['rollout.engine=openai', `rollout.baseUrl=${engine.url}/v1`]);
    expect(process.exitCode).toBe(0);
    // One load before each of the 3 steps' rollouts, each followed by that step's completions call.
    expect(enginePaths).toEqual(Array.from({ length: 3 }, () => ['/v1/load_lora_adapter', '/v1/completions']).flat());
    const [local, remote] = [metricsOf('local'), metricsOf('remote')];
    expect(remote).toHaveLength(local.length);
    let compared = 0;
    local.forEach((row, i) => {
      const keys = Object.keys(row).filter((key) => !timing(key));
      expect(Object.keys(remote[i]).filter((key) => !timing(key))).toEqual(keys);
      for (const key of keys) {
        expect(remote[i][key], `row ${i} ${key}`).toBe(row[key]);
        compared++;
      }
    });
    expect(compared).toBeGreaterThan(30);
    const differences = remote.flatMap((row) => ('rollout/logprob_diff' in row ? [row['rollout/logprob_diff']] : []));
    expect(differences).toHaveLength(3);
    // grpo serve runs the trainer's kernels: the engine/trainer gap is rounding (so a shift would show).
    for (const difference of differences) expect(difference).toBeLessThan(1e-3);
    // The adapter did train, so "equal" compares runs in which the engine's policy moved.
    const adapterFile = join(scratch, 'remote', 'engine-adapter', 'adapter_model.safetensors');
    expect(existsSync(adapterFile)).toBe(true);
    const config = loadCheckpoint(tinyStoriesModel).config;
    const final = loadAdapter(join(scratch, 'remote', 'engine-adapter'), config);
    expect([...final.pairs.values()].some(({ b }) => b.data.some((value) => value !== 0))).toBe(true);
  });

  it('concurrency 2 splits each round into two requests with their own seeds, and the run finishes', async () => {
    enginePaths.length = 0;
    await train('remote-2', [
      'rollout.engine=openai',
      `rollout.baseUrl=${engine.url}/v1`,
      'rollout.concurrency=2',
      'grpo.steps=1',
    ]);
    expect(process.exitCode).toBe(0);
    expect(enginePaths).toEqual(['/v1/load_lora_adapter', '/v1/completions', '/v1/completions']);
    expect(summaryOf('remote-2').status).toBe('finished');
    const [row] = metricsOf('remote-2').filter((record) => 'reward/mean' in record);
    expect(row['train/samples']).toBe(8);
  });

  it("uses the engine's logprobs as they come: shifted by +0.5, rollout/logprob_diff reads 0.5", async () => {
    const shifted: Server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', async () => {
        const answer = await fetch(`${engine.url}${request.url}`, { method: 'POST', body: Buffer.concat(chunks) });
        let text = await answer.text();
        if (request.url === '/v1/completions') {
          const json = JSON.parse(text);
          for (const choice of json.choices)
            choice.logprobs.token_logprobs = choice.logprobs.token_logprobs.map((value: number) => value + 0.5);
          text = JSON.stringify(json);
        }
        response.writeHead(answer.status);
        response.end(text);
      });
    });
    await new Promise<void>((done) => shifted.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(shifted.address() as AddressInfo).port}/v1`;
      await train('shifted', ['rollout.engine=openai', `rollout.baseUrl=${url}`, 'grpo.steps=1']);
      expect(process.exitCode).toBe(0);
      const [row] = metricsOf('shifted').filter((record) => 'rollout/logprob_diff' in record);
      expect(Math.abs(row['rollout/logprob_diff'] - 0.5)).toBeLessThan(1e-3);
    } finally {
      shifted.closeAllConnections();
      await new Promise((done) => shifted.close(done));
    }
  });

  const faults: [string, RegExp][] = [
    ['error', /HTTP 500/],
    ['hang', /no answer within rollout\.timeoutMs \(1500 ms\)/],
    ['drop', /failed 2 time\(s\) \(rollout\.retries = 1\); last: UND_ERR_SOCKET \(other side closed\)/],
    ['malformed', /a malformed answer/],
  ];
  it.each(faults)(
    'an engine that %s mid-run stops the run with the reason; the step-1 checkpoint stays',
    async (mode, why) => {
      // A faulty engine: the first completions call goes to grpo serve, every later one misbehaves.
      let completions = 0;
      const faulty: Server = createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', async () => {
          const forward = request.url === '/v1/load_lora_adapter' || completions++ === 0;
          if (forward) {
            const answer = await fetch(`${engine.url}${request.url}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: Buffer.concat(chunks),
            });
            response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
            response.end(await answer.text());
          } else if (mode === 'error') {
            response.writeHead(500, { 'content-type': 'application/json' });
            response.end('{"error":{"message":"engine overloaded","type":"InternalServerError","param":null}}');
          } else if (mode === 'drop') {
            response.writeHead(200, { 'content-type': 'application/json' });
            response.write('{"choices": [');
            request.socket.destroy();
          } else if (mode === 'malformed') {
            response.writeHead(200, { 'content-type': 'application/json' });
            response.end('{"choices": [{"index": 0, "text": "no ids"}');
          } // 'hang': never answers
        });
      });
      await new Promise<void>((done) => faulty.listen(0, '127.0.0.1', done));
      const url = `http://127.0.0.1:${(faulty.address() as AddressInfo).port}/v1`;
      try {
        const run = `fault-${mode}`;
        const settings = [
          'rollout.engine=openai',
          `rollout.baseUrl=${url}`,
          'rollout.retries=1',
          'rollout.retryDelayMs=10',
        ];
        await expect(train(run, [...settings, 'rollout.timeoutMs=1500'])).rejects.toThrow(why);
        const summary = summaryOf(run);
        expect(summary.status).toBe('failed');
        expect(summary.reason).toMatch(why);
        expect(summary.reason).toMatch(/inference engine at http:\/\/127\.0\.0\.1:\d+\/v1\/completions/);
        expect(completions).toBe(3); // step 1's call, then step 2's first try and its one retry
        const saved = join(scratch, run, 'checkpoints', 'step-1');
        expect(loadAdapter(saved, loadCheckpoint(tinyStoriesModel).config).pairs.size).toBeGreaterThan(0);
        expect(existsSync(join(scratch, run, 'checkpoints', 'step-2'))).toBe(false);
      } finally {
        faulty.closeAllConnections();
        await new Promise((done) => faulty.close(done));
      }
    },
  );

  it('is refused before any compute without a base URL, LoRA or mismatch correction', async () => {
    process.exitCode = 0;
    const refuse = (settings: string[], lora: boolean) =>
      buildProgram().parseAsync([
        'node',
        'grpo',
        'train',
        ...(lora ? ['--lora-rank', '4'] : []),
        '--model',
        tinyStoriesModel,
        '--data',
        rows,
        '--prompt-column',
        'question',
        '--reward',
        'math-answer',
        '--quiet',
        ...[`logging.runsDirectory=${JSON.stringify(scratch)}`, 'rollout.engine=openai', ...settings].flatMap((s) => [
          '--set',
          s,
        ]),
      ]);
    await expect(refuse(['algorithm.mismatchCorrection={}'], true)).rejects.toThrow(
      /rollout\.baseUrl: rollout\.engine 'openai' needs/,
    );
    await expect(
      refuse(['rollout.baseUrl=http://127.0.0.1:1/v1', 'algorithm.mismatchCorrection={}'], false),
    ).rejects.toThrow(/- lora: rollout\.engine 'openai' needs LoRA/);
    await expect(refuse(['rollout.baseUrl=http://127.0.0.1:1/v1'], true)).rejects.toThrow(
      /algorithm\.mismatchCorrection: rollout\.engine 'openai' needs it/,
    );
  });
});
