/**
 * `grpo serve` driven by the official `openai` npm client, started as the CLI starts it
 * (runServeCommand) on the TinyStories checkpoint with `--chat-template`: completions and chat
 * completions, `logprobs: N` and `top_logprobs` (the top alternative is the greedy token, logprobs
 * are at most 0 and sorted, the sampled token's entry holds its logprob), `stream: true` on both
 * routes (the deltas concatenate to the non-streamed text and logprobs, stop strings included), a
 * stream that does not hold the server, a client going away freeing its batch, and an unknown model
 * → NotFoundError on every route, also on a model without a chat template.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runServeCommand } from './serve-command.js';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { loadTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { startServe, type RunningServer } from '../serve/serve-server.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const templateFile = join(mkdtempSync(join(tmpdir(), 'serve-openai-')), 'chat.jinja');
writeFileSync(templateFile, '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:');
const quiet = () => {};

let running: RunningServer;
let client: OpenAI;
/** The same model decoding one token per slice, so every streamed token is its own piece (the hardest case). */
let stepwise: RunningServer;
let stepwiseClient: OpenAI;
beforeAll(async () => {
  running = await runServeCommand(
    { model: tinyStoriesModel, servedModelName: 'tiny', chatTemplate: templateFile, port: 0 },
    quiet,
  );
  client = new OpenAI({ baseURL: `${running.url}/v1`, apiKey: 'any', maxRetries: 0 });
  const checkpoint = loadCheckpoint(tinyStoriesModel);
  stepwise = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName: 'tiny',
    tokenizer: loadTokenizer(tinyStoriesModel),
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    chatTemplate: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:',
    port: 0,
    sliceMs: 0,
  });
  stepwiseClient = new OpenAI({ baseURL: `${stepwise.url}/v1`, apiKey: 'any', maxRetries: 0 });
});
afterAll(() => Promise.all([running.close(), stepwise.close()]));

const prompt = 'Once upon a time';
const messages = [{ role: 'user' as const, content: 'Tell me a story.' }];

/** Every value at most 0 and in descending order. */
function expectSortedLogprobs(values: number[]): void {
  for (const value of values) expect(value).toBeLessThanOrEqual(0);
  expect(values).toEqual([...values].sort((a, b) => b - a));
}

describe('grpo serve with the openai client', () => {
  it('completions with logprobs: N give the N most likely alternatives, the greedy token first', async () => {
    const answer = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 10,
      temperature: 0,
      logprobs: 5,
    });
    const { tokens, token_logprobs, top_logprobs, text_offset } = answer.choices[0].logprobs!;
    expect(tokens!.join('')).toBe(answer.choices[0].text);
    expect(top_logprobs).toHaveLength(tokens!.length);
    top_logprobs!.forEach((alternatives, t) => {
      const ranked = Object.entries(alternatives).sort((a, b) => b[1] - a[1]);
      expect(ranked.length).toBeGreaterThanOrEqual(5);
      expectSortedLogprobs(ranked.map(([, logprob]) => logprob));
      expect(ranked[0]).toEqual([tokens![t], token_logprobs![t]]);
    });
    expect(text_offset![1]).toBe(tokens![0].length);
  });

  it('chat with logprobs and top_logprobs: OpenAI content entries, the greedy token first', async () => {
    const answer = await client.chat.completions.create({
      model: 'tiny',
      messages,
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = answer.choices[0].logprobs!.content!;
    expect(content.map(({ token }) => token).join('')).toBe(answer.choices[0].message.content);
    for (const entry of content) {
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')]);
      expect(entry.top_logprobs).toHaveLength(3);
      expectSortedLogprobs(entry.top_logprobs.map(({ logprob }) => logprob));
      expect(entry.top_logprobs[0]).toEqual({ token: entry.token, logprob: entry.logprob, bytes: entry.bytes });
    }
  });

  it('streamed completions concatenate to the non-streamed text and logprobs (greedy, seeded, a stop string)', async () => {
    const plain = await client.completions.create({ model: 'tiny', prompt, max_tokens: 24, temperature: 0 });
    const stop = plain.choices[0].text.trim().split(' ')[3];
    const cases = [
      { temperature: 0, max_tokens: 24 },
      { temperature: 0.8, seed: 7, n: 3, max_tokens: 24 },
      { temperature: 0, max_tokens: 24, stop: [stop] },
    ];
    for (const fields of cases) {
      const request = { model: 'tiny', prompt, logprobs: 2, ...fields };
      const whole = await client.completions.create(request);
      const stream = await stepwiseClient.completions.create({
        ...request,
        stream: true,
        stream_options: { include_usage: true },
      });
      const texts: string[] = whole.choices.map(() => '');
      const logprobs: number[][] = whole.choices.map(() => []);
      const offsets: number[][] = whole.choices.map(() => []);
      const finish: (string | null)[] = whole.choices.map(() => null);
      let usage: OpenAI.CompletionUsage | null | undefined;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        expect(chunk.object).toBe('text_completion');
        if (chunk.usage) usage = chunk.usage;
        for (const choice of chunk.choices) {
          expect(finish[choice.index]).toBeNull(); // nothing after a choice's finish_reason
          texts[choice.index] += choice.text;
          logprobs[choice.index].push(...choice.logprobs!.token_logprobs!);
          offsets[choice.index].push(...choice.logprobs!.text_offset!);
          finish[choice.index] = choice.finish_reason;
        }
      }
      expect(texts).toEqual(whole.choices.map(({ text }) => text));
      expect(logprobs).toEqual(whole.choices.map((choice) => choice.logprobs!.token_logprobs));
      expect(offsets).toEqual(whole.choices.map((choice) => choice.logprobs!.text_offset));
      expect(finish).toEqual(whole.choices.map((choice) => choice.finish_reason));
      expect(usage).toEqual(whole.usage);
      expect(chunks).toBeGreaterThan(2 * whole.choices.length); // pieces as it decodes, not one at the end
    }
    expect(plain.choices[0].text).toContain(stop);
  });

  it('streamed chat: the role first, deltas that concatenate to the non-streamed message, then finish_reason', async () => {
    const request = { model: 'tiny', messages, max_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 2 };
    const whole = await client.chat.completions.create(request);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await stepwiseClient.chat.completions.create({ ...request, stream: true }))
      chunks.push(chunk);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const deltas = chunks.flatMap((chunk) => chunk.choices);
    expect(deltas.map(({ delta }) => delta.content ?? '').join('')).toBe(whole.choices[0].message.content);
    expect(deltas.flatMap(({ logprobs }) => logprobs?.content ?? [])).toEqual(whole.choices[0].logprobs!.content);
    expect(deltas.at(-1)!.finish_reason).toBe(whole.choices[0].finish_reason);
    expect(deltas.slice(0, -1).every(({ finish_reason }) => finish_reason === null)).toBe(true);
    expect(deltas.length).toBeGreaterThan(3);
  });

  it('a long stream does not hold the server, and a client that goes away frees its batch', async () => {
    // Temperature 1 with n = 32 and 400 tokens: far more decoding than the short request needs.
    const long = { model: 'tiny', prompt, n: 32, max_tokens: 400, temperature: 1, seed: 1, stream: true as const };
    const answerSpy = vi.spyOn(running.batcher as unknown as { answer: () => void }, 'answer');
    const controller = new AbortController();
    const stream = await client.completions.create(long, { signal: controller.signal });
    let pieces = 0;
    let shortAnswered = false;
    for await (const chunk of stream) {
      pieces += chunk.choices.length;
      if (pieces === 1) {
        // A short request while the long one streams: answered while the stream is still open.
        const short = await client.completions.create({
          model: 'tiny',
          prompt: 'The dog',
          max_tokens: 4,
          temperature: 0,
        });
        expect(short.choices[0].text.length).toBeGreaterThan(0);
        shortAnswered = true;
        controller.abort();
        break;
      }
    }
    expect(shortAnswered).toBe(true);
    const callsBefore = answerSpy.mock.calls.length;
    // The long batch leaves as soon as the server sees the connection close; it is never answered.
    for (let turn = 0; turn < 10_000 && running.batcher.activeBatches > 0; turn++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(running.batcher.activeBatches).toBe(0);
    expect(answerSpy.mock.calls.length).toBe(callsBefore);
    answerSpy.mockRestore();
    // Still serving.
    const after = await client.completions.create({ model: 'tiny', prompt, max_tokens: 2, temperature: 0 });
    expect(after.choices).toHaveLength(1);
  });

  it('an unknown model is a NotFoundError on every route, before the chat template runs', async () => {
    const plain = await runServeCommand({ model: tinyStoriesModel, port: 0 }, quiet);
    try {
      const bare = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: 'any', maxRetries: 0 });
      for (const api of [client, bare]) {
        await expect(api.completions.create({ model: 'nope', prompt })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
        await expect(api.chat.completions.create({ model: 'nope', messages })).rejects.toBeInstanceOf(
          OpenAI.NotFoundError,
        );
        await expect(api.completions.create({ model: 'nope', prompt, stream: true })).rejects.toBeInstanceOf(
          OpenAI.NotFoundError,
        );
      }
      // The served model without a template: a 400 that says what to do.
      await expect(bare.chat.completions.create({ model: 'tinystories-656k', messages })).rejects.toThrow(
        /--chat-template/,
      );
    } finally {
      await plain.close();
    }
  });

  it('--chat-template names the flag when the file is missing, before the model loads', async () => {
    await expect(
      runServeCommand(
        { model: tinyStoriesModel, chatTemplate: join(tmpdir(), 'no-such-template.jinja'), port: 0 },
        quiet,
      ),
    ).rejects.toThrow(/--chat-template: .*no-such-template\.jinja/);
  });
});
