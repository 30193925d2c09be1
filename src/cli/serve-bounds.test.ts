/**
 * `grpo serve` under hostile requests (issue 36), on the real TinyStories checkpoint over 127.0.0.1:
 * each bound is refused with a 4xx naming the field before the work it bounds (the tokenizer is
 * never called for an over-long prompt), a body nested 10⁴ deep is a 400, the server answers
 * /v1/models and a small request while a big one is still decoding, and a LoRA swap that has
 * returned applies to every request sent after it. Adapter files: see serve-adapter-files.test.ts.
 *
 * No wall-clock assertions: "while a big one runs" is checked by order of completion, not seconds
 * (the bench measures latency: bench/serve-hostile.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapter } from '../model/adapter-files.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { encodeSafetensors, readSafetensors } from '../model/safetensors.js';
import { loadTokenizer, type TextTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { DecodeBatcher, jobKvBytes } from '../serve/serve-batcher.js';
import { startServe, type RunningServer, type ServeOptions } from '../serve/serve-server.js';
import { tinyStoriesAdapter, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const checkpoint = loadCheckpoint(tinyStoriesModel);
const baseTokenizer = loadTokenizer(tinyStoriesModel);
const scratch = mkdtempSync(join(tmpdir(), 'grpo-serve-bounds-'));
/** Texts the tokenizer was asked to encode, so a test can show a refusal came before it. */
const encoded: string[] = [];
const tokenizer = Object.create(baseTokenizer, {
  encode: { value: (text: string, options?: object) => (encoded.push(text), baseTokenizer.encode(text, options)) },
  chatTemplate: { value: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:' },
}) as TextTokenizer;

const servers: RunningServer[] = [];
async function serve(options: Partial<ServeOptions> = {}): Promise<RunningServer> {
  const running = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName: 'tiny',
    tokenizer,
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    port: 0,
    ...options,
  });
  servers.push(running);
  return running;
}
let running: RunningServer;
beforeAll(async () => {
  running = await serve({
    maxBatchTokens: 10_000,
    limits: { maxPromptChars: 2000, maxPromptTokens: 600, maxPrompts: 50 },
  });
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  rmSync(scratch, { recursive: true, force: true });
});

async function post(url: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = { text };
  }
  return { status: response.status, json };
}

describe('grpo serve refuses what is over a bound, before the work', () => {
  it.each([
    // [case, body, status, param]
    ['prompt text over --max-prompt-chars', { prompt: 'a'.repeat(2001) }, 400, 'prompt'],
    ['texts over --max-prompt-chars together', { prompt: ['a'.repeat(1500), 'b'.repeat(600)] }, 400, 'prompt'],
    ['more prompts than --max-prompts', { prompt: Array.from({ length: 20_000 }, () => 'x') }, 400, 'prompt'],
    [
      'chat contents over --max-prompt-chars',
      { messages: [{ role: 'user', content: 'c'.repeat(2001) }] },
      400,
      'messages',
    ],
  ])('%s: a 4xx naming the field, and the tokenizer never ran', async (_, body, status, param) => {
    encoded.length = 0;
    const reply = await post(running.url, 'messages' in body ? '/v1/chat/completions' : '/v1/completions', body);
    expect(reply.status).toBe(status);
    expect(reply.json.error.param).toBe(param);
    expect(reply.json.error.message).toMatch(/over this server's limit/);
    expect(encoded).toEqual([]);
  });

  it.each([
    // [case, body, status, param]
    ['token ids over --max-prompt-tokens', { prompt: [Array(400).fill(5), Array(201).fill(6)] }, 400, 'prompt'],
    ['80 bytes asking n=1024 × 500 tokens', { prompt: 'x', n: 1024, max_tokens: 500 }, 400, 'n'],
    ['n × max_tokens over --max-batch-tokens', { prompt: ['x', 'y'], n: 20, max_tokens: 300 }, 400, 'max_tokens'],
    ['a prompt nested 10⁴ deep', `{"prompt": ${'['.repeat(10_000)}1${']'.repeat(10_000)}}`, 400, null],
    ['messages nested 10⁴ deep', `{"messages": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`, 400, null],
  ])('%s: a 4xx naming the field', async (_, body, status, param) => {
    const reply = await post(running.url, '/v1/completions', body);
    expect(reply.status).toBe(status);
    expect(reply.json.error.param).toBe(param);
    expect(reply.json.error.message).toMatch(/over this server's limit|levels deep/);
  });

  it.each([
    // [case, path, body, param, message]: found by serve/serve-fuzz.test.ts
    ['an empty stop string (it cut every completion to "")', '/v1/completions', { prompt: 'Once', stop: '' }, 'stop'],
    [
      'an empty chat stop string',
      '/v1/chat/completions',
      { messages: [{ role: 'user', content: 'hi' }], stop: '' },
      'stop',
    ],
    // logits / 5e-324 overflowed float32: the sampled tokens' logprobs came back null (NaN)
    ['a subnormal temperature', '/v1/completions', { prompt: 'Once', temperature: 5e-324, logprobs: 0 }, 'temperature'],
    ['a temperature below 1e-5', '/v1/completions', { prompt: 'Once', temperature: 1e-300 }, 'temperature'],
  ])('%s: a 400 naming the field', async (_, path, body, param) => {
    const reply = await post(running.url, path, { max_tokens: 2, ...body });
    expect(reply.status).toBe(400);
    expect(reply.json.error.param).toBe(param);
    expect(reply.json.error.message).toContain(param);
  });

  it('a request whose own KV cache is over --max-kv-cache-mb: a 400 naming max_tokens, before any batch', async () => {
    const small = await serve({ maxKvCacheBytes: 100 * 1024 }); // 100 tokens of the 1 KiB per token this model keeps
    const reply = await post(small.url, '/v1/completions', { prompt: [1, 5, 6], n: 2, max_tokens: 60 });
    expect(reply.status).toBe(400);
    expect(reply.json.error.param).toBe('max_tokens');
    expect(reply.json.error.message).toBe(
      "3 prompt tokens and 2 sequence(s) × max_tokens 60 need 123.0 KiB of KV cache, over this server's limit of 100.0 KiB (--max-kv-cache-mb)",
    );
    expect(small.batcher.batchSizes).toEqual([]);
    expect((await post(small.url, '/v1/completions', { prompt: [1, 5, 6], n: 2, max_tokens: 40 })).status).toBe(200);
  });

  it('a temperature of 1e-5 samples with finite logprobs; 0 is greedy', async () => {
    for (const temperature of [1e-5, 0]) {
      const reply = await post(running.url, '/v1/completions', {
        prompt: 'Once',
        max_tokens: 4,
        temperature,
        logprobs: 0,
      });
      expect(reply.status).toBe(200);
      const logprobs: number[] = reply.json.choices[0].logprobs.token_logprobs;
      expect(logprobs.every((logprob) => Number.isFinite(logprob) && logprob <= 0)).toBe(true);
    }
  });

  it("the issue's requests against the default limits: each a 4xx before any tokenizing", async () => {
    const defaults = await serve();
    encoded.length = 0;
    const cases: [unknown, number, string | null][] = [
      [{ prompt: 'a'.repeat(1_000_000) }, 400, 'prompt'], // 1 MB of text: it held every route for 42 s
      [{ prompt: 'x', n: 1024, max_tokens: 500 }, 400, 'n'], // 80 bytes: it ran 99 s and took 1.5 GB
      [{ prompt: Array.from({ length: 20_000 }, () => 'x') }, 400, 'prompt'], // it held every route for 20 s
      [{ prompt: 'a'.repeat(10_000_000) }, 413, null], // over 8 MiB: never read into memory
    ];
    for (const [body, status, param] of cases) {
      const reply = await post(defaults.url, '/v1/completions', body);
      expect(reply.status).toBe(status);
      expect(reply.json.error.param).toBe(param);
    }
    expect(encoded).toEqual(['x']); // only the n=1024 request's prompt, refused after tokenizing its one character
  });

  it('a body over --max-body-bytes → 413', async () => {
    const small = await serve({ limits: { maxBodyBytes: 10_000 } });
    const reply = await post(small.url, '/v1/completions', { prompt: 'a'.repeat(20_000) });
    expect(reply.status).toBe(413);
    expect(reply.json.error.message).toContain('over the limit of 10000 bytes');
  });

  it('what is within the bounds still runs', async () => {
    const reply = await post(running.url, '/v1/completions', {
      prompt: 'Once upon a time. '.repeat(100),
      max_tokens: 2,
    });
    expect(reply.status).toBe(200);
    expect(reply.json.choices).toHaveLength(1);
  });
});

describe('one request never holds the server', () => {
  it('/v1/models and a small request are answered while a big request is still decoding', async () => {
    // One decode step per slice: the big request needs hundreds of turns, the small one a handful.
    const server = await serve({ sliceMs: 0 });
    const prompts = Array.from({ length: 16 }, (_, i) => `Once upon a time ${i}`);
    let bigDone = false;
    const big = post(server.url, '/v1/completions', {
      prompt: prompts,
      n: 4,
      max_tokens: 120,
      temperature: 1,
      stop_token_ids: [],
      seed: 1,
    }).then((reply) => ((bigDone = true), reply));
    for (let tries = 0; tries < 500 && server.batcher.activeBatches === 0; tries++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.batcher.activeBatches).toBe(1);
    const models = await fetch(`${server.url}/v1/models`);
    expect(models.status).toBe(200);
    const small = await post(server.url, '/v1/completions', { prompt: 'The dog', max_tokens: 4, temperature: 0 });
    expect(small.status).toBe(200);
    expect(bigDone).toBe(false); // the small request finished first
    const reply = await big;
    expect(reply.status).toBe(200);
    expect(reply.json.choices).toHaveLength(64);
  });

  it('a small request starts in a small batch slot even when every large-batch slot is taken', async () => {
    const batcher = new DecodeBatcher({ maxActiveBatches: 1, maxBatchTokens: 8000, sliceMs: 0 });
    const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const settings = { modelName: 'tiny', model, topK: 0, topP: 1, minP: 0, stopTokenIds: [], seed: 1 };
    let bigDone = false;
    const prompts = Array.from({ length: 16 }, (_, i) => [1, 100 + i]);
    const big = batcher
      .submit({ ...settings, prompts, numSamples: 4, maxNewTokens: 120, temperature: 1 }) // 7680 tokens
      .then((completions) => ((bigDone = true), completions));
    for (let tries = 0; tries < 500 && batcher.activeBatches === 0; tries++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const small = await batcher.submit({
      ...settings,
      prompts: [[1, 5]],
      numSamples: 1,
      maxNewTokens: 4,
      temperature: 0,
    });
    expect(small[0].ids).toHaveLength(4);
    expect(bigDone).toBe(false); // it did not wait for the large batch's slot
    expect(await big).toHaveLength(64);
  });

  it('requests that together exceed --max-batch-tokens decode in separate batches', async () => {
    const batcher = new DecodeBatcher({ maxBatchTokens: 100 });
    const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const job = { modelName: 'tiny', model, numSamples: 1, maxNewTokens: 60, temperature: 0, topK: 0, topP: 1 };
    const settings = { ...job, minP: 0, stopTokenIds: [], seed: null };
    await Promise.all([
      batcher.submit({ ...settings, prompts: [[1, 5]] }),
      batcher.submit({ ...settings, prompts: [[1, 6]] }),
    ]);
    expect(batcher.batchSizes).toEqual([1, 1]);
    await expect(
      batcher.submit({
        ...settings,
        prompts: [
          [1, 5],
          [1, 6],
        ],
      }),
    ).rejects.toThrow(/over the batch limits/);
  });

  it('the KV caches of every decoding batch stay within --max-kv-cache-mb: a batch that does not fit beside the running ones waits', async () => {
    const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const settings = {
      modelName: 'tiny',
      model,
      numSamples: 2,
      topK: 0,
      topP: 1,
      minP: 0,
      stopTokenIds: [],
      seed: null,
    };
    // Different max_tokens: they never share a batch, so without the memory bound both decode at once.
    const first = { ...settings, prompts: [[1, 5]], maxNewTokens: 60, temperature: 0 };
    const second = { ...settings, prompts: [[1, 6]], maxNewTokens: 50, temperature: 0 };
    const bytes = jobKvBytes(first) + jobKvBytes(second);
    expect(jobKvBytes(first)).toBe((2 + 2 * 60) * 1024); // 2 layers × K and V × 4 heads × 16 dims × 4 bytes per token
    const decodeAtOnce = async (maxKvCacheBytes: number) => {
      const batcher = new DecodeBatcher({ maxKvCacheBytes, sliceMs: 0 }); // one decode step per turn
      let most = 0;
      let done = false;
      const both = Promise.all([batcher.submit(first), batcher.submit(second)]).then(
        (results) => ((done = true), results),
      );
      while (!done) {
        most = Math.max(most, batcher.activeBatches);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect((await both).flat()).toHaveLength(4);
      return most;
    };
    expect(await decodeAtOnce(bytes)).toBe(2); // both fit: they overlap
    expect(await decodeAtOnce(bytes - 1)).toBe(1); // one at a time, and both answered
  });
});

/** A copy of the fixture adapter with its B matrices scaled, so its outputs differ. */
function scaledAdapter(name: string, factor: number): string {
  const folder = join(scratch, name);
  rmSync(folder, { recursive: true, force: true });
  const tensors = readSafetensors(join(tinyStoriesAdapter, 'adapter_model.safetensors'));
  for (const [tensorName, tensor] of tensors)
    if (tensorName.includes('lora_B')) tensors.set(tensorName, { ...tensor, data: tensor.data.map((x) => x * factor) });
  mkdirSync(folder);
  writeFileSync(join(folder, 'adapter_model.safetensors'), encodeSafetensors(tensors));
  writeFileSync(join(folder, 'adapter_config.json'), readFileSync(join(tinyStoriesAdapter, 'adapter_config.json')));
  return folder;
}

describe('a LoRA swap that has returned applies to every request sent after it', () => {
  it('in the batcher: two model objects under one name never share a batch', async () => {
    const batcher = new DecodeBatcher({ windowMs: 50 });
    const base = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const swapped = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    swapped.attachAdapters(loadAdapter(scaledAdapter('batcher-swap', 4), checkpoint.config));
    const job = { modelName: 'a', numSamples: 1, maxNewTokens: 8, temperature: 0, topK: 0, topP: 1, minP: 0 };
    const settings = { ...job, stopTokenIds: [], seed: null, prompts: [[1, 300, 411]] };
    // Submitted in one tick: before the fix they merged and both ran the first job's model.
    const [before, after] = await Promise.all([
      batcher.submit({ ...settings, model: base }),
      batcher.submit({ ...settings, model: swapped }),
    ]);
    expect(batcher.batchSizes).toEqual([1, 1]);
    const alone = await new DecodeBatcher().submit({ ...settings, model: swapped });
    expect(after[0].ids).toEqual(alone[0].ids);
    expect(after[0].logprobs).not.toEqual(before[0].logprobs);
  });

  it('over HTTP: requests queued before a load_inplace swap get the old adapter, every one sent after it the new', async () => {
    // A long batching window: the requests sent before the swap are still queued when it returns.
    const server = await serve({ windowMs: 300, maxWaitMs: 300 });
    const oldAdapter = scaledAdapter('old', 1);
    const newAdapter = scaledAdapter('new', 4);
    const ask = () =>
      post(server.url, '/v1/completions', {
        model: 'a',
        prompt: 'Once upon a time',
        max_tokens: 6,
        temperature: 0,
        logprobs: 0,
      });
    expect((await post(server.url, '/v1/load_lora_adapter', { lora_name: 'a', lora_path: oldAdapter })).status).toBe(
      200,
    );
    const oldReference = (await ask()).json.choices[0].logprobs.token_logprobs;
    const beforeSwap = Array.from({ length: 10 }, ask);
    const swap = await post(server.url, '/v1/load_lora_adapter', {
      lora_name: 'a',
      lora_path: newAdapter,
      load_inplace: true,
    });
    expect(swap.status).toBe(200);
    const afterSwap = await Promise.all(Array.from({ length: 30 }, ask));
    const newReference = (await ask()).json.choices[0].logprobs.token_logprobs;
    // Batch company moves a logprob by ~1e-6 at most (serve.test.ts); the two adapters by far more.
    const distance = (reply: { json: any }, reference: number[]) =>
      Math.max(
        ...reply.json.choices[0].logprobs.token_logprobs.map((x: number, t: number) => Math.abs(x - reference[t])),
      );
    expect(
      distance({ json: { choices: [{ logprobs: { token_logprobs: newReference } }] } }, oldReference),
    ).toBeGreaterThan(1e-2);
    for (const reply of afterSwap) expect(distance(reply, newReference)).toBeLessThan(1e-4);
    for (const reply of await Promise.all(beforeSwap)) expect(distance(reply, oldReference)).toBeLessThan(1e-4);
  });
});
