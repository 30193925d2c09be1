/**
 * `grpo serve` on the real TinyStories checkpoint, over HTTP on 127.0.0.1: greedy ids equal
 * `grpo generate`'s and logprobs equal `grpo score`'s within 1e-4, with and without a LoRA adapter
 * loaded at runtime through /v1/load_lora_adapter; concurrent requests (merged into shared decode
 * batches) return what the same requests return one at a time; chat completions render the chat
 * template; bad requests get OpenAI-shaped errors naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, resolveStopTokenIds } from '../model/checkpoint.js';
import { loadTokenizer, type TextTokenizer } from '../model/tokenizer.js';
import { Transformer } from '../model/transformer.js';
import { runGenerateCommand, runScoreCommand } from './model-commands.js';
import { runServeCommand } from './serve-command.js';
import { startServe, type RunningServer } from '../serve/serve-server.js';
import { maxDifference } from '../../test/helpers/numeric.js';
import { tinyStoriesAdapter, tinyStoriesModel } from '../../test/helpers/fixtures.js';

let running: RunningServer;
let tokenizer: TextTokenizer;
beforeAll(async () => {
  const checkpoint = loadCheckpoint(tinyStoriesModel);
  const loaded = loadTokenizer(tinyStoriesModel);
  // The fixture has no chat template; a two-line one lets the chat route be checked end to end.
  tokenizer = Object.create(loaded, {
    chatTemplate: { value: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:' },
  }) as TextTokenizer;
  running = await startServe({
    model: Transformer.fromTensors(checkpoint.config, checkpoint.tensors),
    modelName: 'tiny',
    tokenizer,
    stopTokenIds: resolveStopTokenIds(checkpoint.config, checkpoint.generationConfig),
    host: '127.0.0.1',
    port: 0,
  });
});
afterAll(() => running.close());

async function post(path: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(`${running.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // plain-text answers (adapter loading) stay in `text`
  }
  return { status: response.status, json, text };
}

function generated(prompt: string, adapter?: string): { promptIds: number[]; ids: number[]; logprobs: number[] } {
  const lines: string[] = [];
  runGenerateCommand(
    {
      model: tinyStoriesModel,
      adapter,
      prompt,
      maxNewTokens: 12,
      temperature: 0,
      topP: 1,
      topK: 0,
      seed: 0,
      numSamples: 1,
      json: true,
    },
    (line) => lines.push(line),
  );
  return JSON.parse(lines[0]);
}

function scored(ids: number[], adapter?: string): number[] {
  const lines: string[] = [];
  runScoreCommand({ model: tinyStoriesModel, adapter, ids: ids.join(','), json: true }, (line) => lines.push(line));
  return JSON.parse(lines[0]).logprobs.slice(1);
}

describe('grpo serve', () => {
  it('greedy ids equal grpo generate and logprobs equal grpo score (1e-4), base and adapter', async () => {
    const loaded = await post('/v1/load_lora_adapter', { lora_name: 'tuned', lora_path: tinyStoriesAdapter });
    expect(loaded.status).toBe(200);
    const models = await (await fetch(`${running.url}/v1/models`)).json();
    expect(models.data.map((model: { id: string }) => model.id)).toEqual(['tiny', 'tuned']);
    const prompt = 'Once upon a time, there was a little';
    const outputs: number[][] = [];
    for (const [name, adapter] of [
      ['tiny', undefined],
      ['tuned', tinyStoriesAdapter],
    ] as const) {
      const reference = generated(prompt, adapter);
      const { status, json } = await post('/v1/completions', {
        model: name,
        prompt,
        max_tokens: 12,
        temperature: 0,
        logprobs: 0,
        return_token_ids: true,
      });
      expect(status).toBe(200);
      const choice = json.choices[0];
      expect(choice.prompt_token_ids).toEqual(reference.promptIds);
      expect(choice.token_ids).toEqual(reference.ids);
      expect(choice.text).toBe(tokenizer.decode(reference.ids, { skipSpecialTokens: true }));
      expect(maxDifference(choice.logprobs.token_logprobs, reference.logprobs)).toBeLessThan(1e-4);
      const score = scored([...reference.promptIds, ...reference.ids], adapter).slice(reference.promptIds.length - 1);
      expect(maxDifference(choice.logprobs.token_logprobs, score)).toBeLessThan(1e-4);
      outputs.push(choice.logprobs.token_logprobs);
    }
    // The adapter changes the logprobs far beyond the tolerance, so a dropped adapter would fail above.
    expect(maxDifference(outputs[0], outputs[1])).toBeGreaterThan(1e-3);
    const unloaded = await post('/v1/unload_lora_adapter', { lora_name: 'tuned' });
    expect(unloaded.status).toBe(200);
    expect((await post('/v1/completions', { model: 'tuned', prompt: 'x' })).status).toBe(404);
  });

  it('concurrent requests share decode batches and return what they return one at a time', async () => {
    const stories = [
      'Once upon a time',
      'The dog ran',
      'Lily saw a big',
      'Tom and Sam',
      'The sun was',
      'A little bird',
    ];
    const requests = stories.flatMap((prompt, i) => [
      { prompt, max_tokens: 10, temperature: 0, logprobs: 0, return_token_ids: true },
      { prompt, max_tokens: 10, temperature: 1, top_k: 20, n: 3, seed: 100 + i, logprobs: 0, return_token_ids: true },
    ]);
    const alone: any[] = [];
    for (const request of requests) alone.push((await post('/v1/completions', request)).json);
    const before = running.batcher.batchSizes.length;
    const together = (await Promise.all(requests.map((request) => post('/v1/completions', request)))).map(
      (reply) => reply.json,
    );
    const sizes = running.batcher.batchSizes.slice(before);
    expect(Math.max(...sizes)).toBeGreaterThan(1); // the greedy requests did share a batch
    expect(sizes.length).toBeLessThan(requests.length);
    together.forEach((reply, r) =>
      reply.choices.forEach((choice: any, c: number) => {
        expect(choice.token_ids).toEqual(alone[r].choices[c].token_ids);
        expect(maxDifference(choice.logprobs.token_logprobs, alone[r].choices[c].logprobs.token_logprobs)).toBeLessThan(
          1e-4,
        );
      }),
    );
    // A seeded sampled request is reproducible and its n samples differ from each other.
    const sampled = together[1].choices.map((choice: any) => choice.token_ids.join(','));
    expect(new Set(sampled).size).toBeGreaterThan(1);
  });

  it('token-id prompts, stop strings and chat completions', async () => {
    const ids = tokenizer.encode('Once upon a time', { addSpecialTokens: true });
    const full = (
      await post('/v1/completions', { prompt: [ids, ids], max_tokens: 12, temperature: 0, return_token_ids: true })
    ).json;
    expect(full.choices).toHaveLength(2);
    expect(full.choices[1].prompt_token_ids).toEqual(ids);
    const text: string = full.choices[0].text;
    const stop = text.trim().split(' ')[1];
    const cut = (
      await post('/v1/completions', {
        prompt: ids,
        max_tokens: 12,
        temperature: 0,
        stop: [stop],
        return_token_ids: true,
      })
    ).json.choices[0];
    expect(cut.text).toBe(text.slice(0, text.indexOf(stop)));
    expect(cut.finish_reason).toBe('stop');
    expect(cut.stop_reason).toBe(stop);
    expect(cut.token_ids).toEqual(full.choices[0].token_ids.slice(0, cut.token_ids.length));
    const chat = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Tell me a story.' }],
      max_tokens: 8,
      temperature: 0,
      logprobs: true,
      return_token_ids: true,
    });
    expect(chat.status).toBe(200);
    expect(chat.json.prompt_token_ids).toEqual(
      tokenizer.encode('user: Tell me a story.\nassistant:', { addSpecialTokens: false }),
    );
    expect(chat.json.choices[0].token_ids).toHaveLength(chat.json.choices[0].logprobs.content.length);
    expect(chat.json.choices[0].message.content).toBe(
      tokenizer.decode(chat.json.choices[0].token_ids, { skipSpecialTokens: true }),
    );
  });

  it('bad requests get 400/404 with OpenAI error bodies naming the field', async () => {
    const cases: [string, unknown, number, string | null][] = [
      ['/v1/completions', '{not json', 400, null],
      ['/v1/completions', { prompt: 'x', temperature: -1 }, 400, 'temperature'],
      ['/v1/completions', { prompt: 'x', n: 0 }, 400, 'n'],
      ['/v1/completions', { prompt: [1, 99999999] }, 400, 'prompt'],
      ['/v1/completions', { prompt: 'x', stream: 'yes' }, 400, 'stream'],
      ['/v1/completions', { prompt: 'x', stream_options: { include_usage: true } }, 400, 'stream_options'],
      ['/v1/completions', { prompt: 'x', logprobs: 21 }, 400, 'logprobs'],
      [
        '/v1/chat/completions',
        { messages: [{ role: 'user', content: 'x' }], top_logprobs: 21, logprobs: true },
        400,
        'top_logprobs',
      ],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }, 400, 'top_logprobs'],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], model: 'nope' }, 404, 'model'],
      ['/v1/completions', { prompt: 'x', max_tokens: 100000 }, 400, 'max_tokens'],
      ['/v1/completions', { prompt: 'x', model: 'nope' }, 404, 'model'],
      ['/v1/completions', {}, 400, 'prompt'],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'story '.repeat(3000) }] }, 400, 'max_tokens'],
      ['/v1/chat/completions', { messages: [{ role: 'user' }] }, 400, 'messages'],
      ['/v1/load_lora_adapter', { lora_name: 'a', lora_path: '/nonexistent' }, 400, 'lora_path'],
      ['/v1/unload_lora_adapter', { lora_name: 'a' }, 404, 'lora_name'],
      ['/v1/nothing', {}, 404, null],
    ];
    for (const [path, body, status, param] of cases) {
      const reply = await post(path, body);
      expect(reply.status, `${path} ${JSON.stringify(body)}`).toBe(status);
      expect(reply.json.error.param).toBe(param);
      expect(reply.json.error.message.length).toBeGreaterThan(10);
    }
  });

  it('grpo serve --adapter serves base and adapter; a request naming no model gets the adapter', async () => {
    const lines: string[] = [];
    const served = await runServeCommand({ model: tinyStoriesModel, adapter: tinyStoriesAdapter, port: 0 }, (line) =>
      lines.push(line),
    );
    try {
      expect(lines[0]).toContain(`${served.url}/v1`);
      const models = await (await fetch(`${served.url}/v1/models`)).json();
      expect(models.data.map((model: { id: string }) => model.id)).toEqual(['tinystories-656k', 'lora-tinystories']);
      const ask = async (model?: string) => {
        const response = await fetch(`${served.url}/v1/completions`, {
          method: 'POST',
          body: JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 0 }),
        });
        return (await response.json()).choices[0].logprobs.token_logprobs as number[];
      };
      const [implicit, adapter, base] = [await ask(), await ask('lora-tinystories'), await ask('tinystories-656k')];
      expect(implicit).toEqual(adapter);
      expect(maxDifference(implicit, base)).toBeGreaterThan(1e-3);
    } finally {
      await served.close();
    }
  });
});
