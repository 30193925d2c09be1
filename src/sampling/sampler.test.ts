/**
 * The sampler on the real TinyStories checkpoint: the greedy reference continuation, KV-cached
 * logprobs equal to a full forward of the finished sequences (1e-4), seed reproducibility and batch
 * independence, the same with LoRA adapters on a bfloat16 base, which samples on native (read as bfloat16 by the
 * kernels) bit for bit as when widened, generation in slices equal to one call, top-k = 1 equals greedy, stop ids and max-token limits, and bad requests.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../model/checkpoint.js';
import { LoraAdapters, resolveTargetModules } from '../model/lora.js';
import { Transformer } from '../model/transformer.js';
import { createBackend, getBackend, logSoftmax, noGrad, Random, setBackend } from '../tensor/index.js';
import { applyMinP, applyTopK, applyTopP, chooseToken, logSoftmaxRow } from './logits.js';
import { generate, startGeneration } from './sampler.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const folder = tinyStoriesModel;
const checkpoint = loadCheckpoint(folder);
const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
const reference = JSON.parse(readFileSync(join(folder, 'reference.json'), 'utf8'));
const prompts = [reference.greedy.prompt_ids as number[], [1, 247, 411], [1, 80, 147, 201, 282]];

describe('generate', () => {
  it('reproduces the reference greedy continuation (temperature 0)', () => {
    const [completion] = generate(model, { prompts: [prompts[0]], maxNewTokens: 60, temperature: 0, seed: 0 });
    expect([...prompts[0], ...completion.ids]).toEqual(reference.greedy.output_ids);
  });

  it('KV-cached logprobs equal a full forward of each finished sequence (to 1e-4)', () => {
    const completions = generate(model, { prompts, numSamples: 3, maxNewTokens: 12, temperature: 1, seed: 5 });
    expect(completions).toHaveLength(9);
    for (const completion of completions) {
      const full = [...prompts[completion.promptIndex], ...completion.ids];
      const logprobs = noGrad(() => logSoftmax(model.forward(Int32Array.from(full.slice(0, -1)), 1)));
      const V = model.config.vocabSize;
      const start = prompts[completion.promptIndex].length - 1;
      completion.ids.forEach((id, i) =>
        expect(Math.abs(logprobs.data[(start + i) * V + id] - completion.logprobs[i])).toBeLessThan(1e-4),
      );
    }
  });

  it('with LoRA adapters (kept constant with the weights) on a bfloat16 base, KV-cached logprobs equal a full forward', () => {
    const adapted = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const settings = { rank: 4, alpha: 8, targetModules: resolveTargetModules('all-linear'), rsLora: false };
    const adapters = LoraAdapters.create(adapted.config, settings, 3);
    for (const { b } of adapters.pairs.values()) b.data.forEach((_, i) => (b.data[i] = 0.02 * Math.sin(i)));
    adapted.attachAdapters(adapters);
    adapted.keepFrozenLinearsInBfloat16();
    const completions = generate(adapted, { prompts, numSamples: 2, maxNewTokens: 10, temperature: 1, seed: 9 });
    const plain = generate(model, { prompts, numSamples: 2, maxNewTokens: 10, temperature: 1, seed: 9 });
    expect(completions.map((c) => c.ids)).not.toEqual(plain.map((c) => c.ids)); // the adapters matter
    for (const completion of completions) {
      const full = [...prompts[completion.promptIndex], ...completion.ids];
      const logprobs = noGrad(() => logSoftmax(adapted.forward(Int32Array.from(full.slice(0, -1)), 1)));
      const V = adapted.config.vocabSize;
      const start = prompts[completion.promptIndex].length - 1;
      completion.ids.forEach((id, i) =>
        expect(Math.abs(logprobs.data[(start + i) * V + id] - completion.logprobs[i])).toBeLessThan(1e-4),
      );
    }
  });

  it('a bfloat16 base read by the kernels (native) samples bit for bit as its float32 widening', () => {
    const previous = getBackend().name; // by name: setBackend disposes the backend it replaces
    const bitsReader = setBackend(createBackend('native')); // an instance: the caller disposes it
    const adapted = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
    const settings = { rank: 4, alpha: 8, targetModules: resolveTargetModules('all-linear'), rsLora: false };
    const adapters = LoraAdapters.create(adapted.config, settings, 3);
    for (const { b } of adapters.pairs.values()) b.data.forEach((_, i) => (b.data[i] = 0.02 * Math.cos(i)));
    adapted.attachAdapters(adapters);
    adapted.keepFrozenLinearsInBfloat16();
    const request = { prompts, numSamples: 3, maxNewTokens: 10, temperature: 1, seed: 4 };
    try {
      expect(bitsReader.matmulBfloat16B).toBeDefined();
      const fromBits = generate(adapted, request);
      // The same backend without matmulBfloat16B: the model widens its base once for the generation.
      setBackend({ ...bitsReader, matmulBfloat16B: undefined });
      const fromWidened = generate(adapted, request);
      expect(fromBits.map((c) => c.ids)).toEqual(fromWidened.map((c) => c.ids));
      expect(fromBits.map((c) => c.logprobs)).toEqual(fromWidened.map((c) => c.logprobs));
    } finally {
      bitsReader.dispose();
      setBackend(previous);
    }
  });

  it('rows leaving the batch at different steps keep exact logprobs (shared prompt keys, compacted cache, batched prefill)', () => {
    const stopTokenIds = Array.from({ length: 120 }, (_, i) => 13 * i + 5); // ~6% of the vocabulary: staggered stops
    const samePrompts = [...prompts, [1, 300, 411], [1, 80, 147, 9, 282]]; // equal lengths share a prefill forward
    const completions = generate(model, {
      prompts: samePrompts,
      numSamples: 4,
      maxNewTokens: 16,
      temperature: 1.2,
      seed: 21,
      stopTokenIds,
    });
    const lengths = new Set(completions.map((c) => c.ids.length));
    expect(lengths.size).toBeGreaterThan(2); // the batch really shrank several times
    for (const completion of completions) {
      const full = [...samePrompts[completion.promptIndex], ...completion.ids];
      const logits = noGrad(() => model.forward(Int32Array.from(full.slice(0, -1)), 1));
      const V = model.config.vocabSize;
      const start = samePrompts[completion.promptIndex].length - 1;
      completion.ids.forEach((id, i) => {
        const scaled = logits.data.slice((start + i) * V, (start + i + 1) * V).map((x) => x / 1.2); // logprobs are under logits / T
        expect(Math.abs(logSoftmaxRow(scaled)[id] - completion.logprobs[i])).toBeLessThan(1e-4);
      });
    }
  });

  it('same seed → same samples; another seed → different ones; batching does not matter', () => {
    const request = { prompts, numSamples: 2, maxNewTokens: 10, temperature: 1, seed: 9 };
    const first = generate(model, request);
    expect(generate(model, request).map((c) => c.ids)).toEqual(first.map((c) => c.ids));
    expect(generate(model, { ...request, seed: 10 }).map((c) => c.ids)).not.toEqual(first.map((c) => c.ids));
    const alone = generate(model, { ...request, prompts: [prompts[1]] });
    // Prompt 1's generators depend on (seed, promptIndex, sample): compare with promptIndex 0 alone.
    const againAsFirst = generate(model, { ...request, prompts: [prompts[1], prompts[0]] });
    expect(againAsFirst.filter((c) => c.promptIndex === 0).map((c) => c.ids)).toEqual(alone.map((c) => c.ids));
  });

  it('continuous batching (slots refilled from waiting samples) returns the same completions and logprobs', () => {
    const stopTokenIds = Array.from({ length: 120 }, (_, i) => 13 * i + 5); // staggered stops: slots free up at different steps
    const request = {
      prompts: [...prompts, [1, 300, 411]],
      numSamples: 3,
      maxNewTokens: 14,
      temperature: 1.1,
      seed: 33,
      stopTokenIds,
    };
    const together = generate(model, request);
    expect(new Set(together.map((c) => c.ids.length)).size).toBeGreaterThan(2);
    for (const maxBatchSize of [1, 4, 7, 12]) {
      const slotted = generate(model, { ...request, maxBatchSize });
      expect(slotted.map(({ logprobs: _, ...rest }) => rest)).toEqual(together.map(({ logprobs: _, ...rest }) => rest));
      // The optimised backends' products round differently with the batch's row count (as when a
      // prompt is sampled alone instead of with others, ~3e-6 here); the js spec is exact, below.
      slotted.forEach((c, i) =>
        c.logprobs.forEach((logprob, t) => expect(Math.abs(logprob - together[i].logprobs[t])).toBeLessThan(1e-5)),
      );
    }
    expect(() => generate(model, { ...request, maxBatchSize: 0 })).toThrow(/maxBatchSize must be a positive integer/);
  });

  it('continuous batching on the js spec backend: the same completions and logprobs bit for bit', () => {
    const previous = getBackend().name; // by name: setBackend disposes the backend it replaces
    setBackend('js');
    try {
      const stopTokenIds = Array.from({ length: 120 }, (_, i) => 13 * i + 5);
      const request = { prompts, numSamples: 2, maxNewTokens: 10, temperature: 1.1, seed: 34, stopTokenIds };
      const together = generate(model, request);
      for (const maxBatchSize of [1, 3]) expect(generate(model, { ...request, maxBatchSize })).toEqual(together);
    } finally {
      setBackend(previous);
    }
  });

  it('startGeneration advanced one step per slice returns what one generate call returns, bit for bit', () => {
    const stopTokenIds = Array.from({ length: 120 }, (_, i) => 13 * i + 5); // rows finish at different steps
    // 50 prompts of 100 tokens: their prefill takes two forwards (4096 tokens each at most), two slices.
    const many = Array.from({ length: 50 }, (_, i) => [
      1,
      ...Array.from({ length: 99 }, (_, t) => 100 + ((i + t) % 50)),
    ]);
    const request = {
      prompts: [...prompts, ...many],
      numSamples: 1,
      maxNewTokens: 5,
      temperature: 1.1,
      seed: 35,
      stopTokenIds,
    };
    for (const maxBatchSize of [undefined, 20]) {
      const whole = generate(model, { ...request, maxBatchSize });
      const run = startGeneration(model, { ...request, maxBatchSize });
      let slices = 1;
      // A deadline already past: each prefill forward is one slice, then every decode step is its own slice.
      while (!run.advance(-Infinity)) slices++;
      expect(slices).toBeGreaterThan(request.maxNewTokens + 2);
      expect(run.completions).toEqual(whole);
    }
    expect(() => startGeneration(model, { prompts: [[]], maxNewTokens: 1, seed: 0 })).toThrow(/prompt 0 is empty/);
  });

  it('topLogprobs: the same draws bit for bit, and the most likely alternatives of a full forward under logits / temperature', () => {
    for (const temperature of [0, 0.7]) {
      const request = { prompts, numSamples: 2, maxNewTokens: 8, temperature, topK: 40, seed: 3 };
      const plain = generate(model, request);
      const withTop = generate(model, { ...request, topLogprobs: 5 });
      expect(withTop.map((c) => [c.ids, c.logprobs])).toEqual(plain.map((c) => [c.ids, c.logprobs]));
      expect(plain[0].topLogprobs).toBeUndefined();
      const V = model.config.vocabSize;
      for (const completion of withTop) {
        const full = [...prompts[completion.promptIndex], ...completion.ids];
        const logits = noGrad(() => model.forward(Int32Array.from(full.slice(0, -1)), 1));
        const start = prompts[completion.promptIndex].length - 1;
        expect(completion.topLogprobs).toHaveLength(completion.ids.length);
        completion.topLogprobs!.forEach((alternatives, i) => {
          const row = logits.data.subarray((start + i) * V, (start + i + 1) * V);
          const expected = logSoftmaxRow(row.map((x) => x / (temperature || 1)));
          const order = [...expected.keys()].sort((a, b) => expected[b] - expected[a]).slice(0, 5);
          expect(alternatives.map(({ id }) => id)).toEqual(order);
          alternatives.forEach(({ id, logprob }) => expect(Math.abs(logprob - expected[id])).toBeLessThan(1e-4));
          // The drawn token's entry holds the very number its logprob holds.
          const drawn = alternatives.find(({ id }) => id === completion.ids[i]);
          if (drawn) expect(drawn.logprob).toBe(completion.logprobs[i]);
        });
        if (temperature === 0) expect(completion.topLogprobs!.map((top) => top[0].id)).toEqual(completion.ids);
      }
    }
  });

  it('top-k = 1 equals greedy', () => {
    const greedy = generate(model, { prompts, maxNewTokens: 15, temperature: 0, seed: 1 });
    const topOne = generate(model, { prompts, maxNewTokens: 15, temperature: 0.8, topK: 1, seed: 2 });
    expect(topOne.map((c) => c.ids)).toEqual(greedy.map((c) => c.ids));
  });

  it('respects max new tokens and stop ids, and reports why it stopped', () => {
    const [long] = generate(model, { prompts: [prompts[0]], maxNewTokens: 7, temperature: 1, seed: 3 });
    expect(long.ids).toHaveLength(7);
    expect(long.finishReason).toBe('length');
    const stopId = long.ids[3];
    const [stopped] = generate(model, {
      prompts: [prompts[0]],
      maxNewTokens: 7,
      temperature: 1,
      seed: 3,
      stopTokenIds: [stopId],
    });
    expect(stopped.ids).toEqual(long.ids.slice(0, long.ids.indexOf(stopId) + 1));
    expect(stopped.finishReason).toBe('stop');
  });

  it('rejects bad requests clearly', () => {
    expect(() => generate(model, { prompts: [[]], maxNewTokens: 3, seed: 0 })).toThrow(/prompt 0 is empty/);
    expect(() => generate(model, { prompts: [[1, 99999]], maxNewTokens: 3, seed: 0 })).toThrow(
      /prompt 0 token 1 is 99999, outside the vocabulary/,
    );
    expect(() => generate(model, { prompts: [[1]], maxNewTokens: 3, seed: 0, topP: 0 })).toThrow(/topP/);
  });

  it('refuses a prompt plus maxNewTokens past max_position_embeddings (512 here) and allows exactly 512', () => {
    const prompt = [1, 247, 411]; // 3 tokens
    expect(() => generate(model, { prompts: [[1], prompt], maxNewTokens: 510, seed: 0 })).toThrow(
      "generate: prompt 1 has 3 tokens and maxNewTokens is 510, together 513, over the model's maxPositionEmbeddings (max_position_embeddings) of 512",
    );
    // Stop at once (every id is a stop id) so the allowed request costs one step.
    const everyId = Array.from({ length: model.config.vocabSize }, (_, id) => id);
    expect(
      generate(model, { prompts: [prompt], maxNewTokens: 509, seed: 0, stopTokenIds: everyId })[0].ids,
    ).toHaveLength(1);
  });
});

describe('logit transforms', () => {
  const row = Float32Array.from([Math.log(0.5), Math.log(0.3), Math.log(0.15), Math.log(0.05)]);
  it('top-k, top-p and min-p keep what they should', () => {
    expect(Array.from(applyTopK(row, 2)).map(Number.isFinite)).toEqual([true, true, false, false]);
    expect(Array.from(applyTopP(row, 0.8)).map(Number.isFinite)).toEqual([true, true, false, false]); // 0.5+0.3 reaches 0.8
    expect(Array.from(applyTopP(row, 0.81)).map(Number.isFinite)).toEqual([true, true, true, false]);
    expect(Array.from(applyMinP(row, 0.2)).map(Number.isFinite)).toEqual([true, true, true, false]); // 0.05 < 0.2·0.5
  });
  it('sampling frequencies follow the probabilities', () => {
    const random = new Random(4);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 20000; i++)
      counts[chooseToken(row, { temperature: 1, topK: 0, topP: 1, minP: 0 }, random).id]++;
    [0.5, 0.3, 0.15, 0.05].forEach((p, i) => expect(Math.abs(counts[i] / 20000 - p)).toBeLessThan(0.015));
  });
});
