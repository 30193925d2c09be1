/**
 * The sampler with image prompts (GenerateRequest.promptImageFeatures) on a small random
 * vision-language model: greedy completions equal a full no-cache forward with the image features
 * step by step; sampled logprobs equal a full forward's; results do not depend on continuous
 * batching (maxBatchSize) or on prompts of equal length sharing a prefill with a text-only one; the
 * image features change the completion; mismatched features are refused before compute.
 */
import { describe, expect, it } from 'vitest';
import { createSmallConfig } from '../model/config.js';
import { createSmallVisionLanguageConfig } from '../model/vision/idefics3-config.js';
import { VisionLanguageModel } from '../model/vision/vision-language.js';
import { promptImagePositions } from '../model/vision/image-merge.js';
import { logSoftmax, noGrad, Random, randomNormal, type Tensor } from '../tensor/index.js';
import { generate } from './sampler.js';

const I = 40;
const config = createSmallVisionLanguageConfig({
  text: createSmallConfig({ vocabSize: 48, hiddenSize: 32, numHeads: 4, maxPositionEmbeddings: 64 }),
  imageTokenId: I,
  hiddenSize: 16,
  numHeads: 2,
  imageSize: 16,
  patchSize: 4,
});
const model = VisionLanguageModel.random(config, 11, 0.2); // a larger init, so images change the argmax
const image = (seed: number): Tensor =>
  noGrad(() => model.imageFeatures(randomNormal([3 * 16 * 16], new Random(seed)).data, 1));
// Two image prompts and a text-only one of the same length (they share one prefill forward).
const prompts = [
  [1, 5, I, I, I, I, 6, 7],
  [1, 9, 8, I, I, I, I, 3],
  [1, 2, 3, 4, 5, 6, 7, 8],
];
const features = [image(1), image(2), null];

/** Log-probabilities [T, V] of one full sequence with its image features in its prompt, no cache. */
function fullLogprobs(ids: number[], imageFeatures: Tensor | null, promptLength: number): Tensor {
  const flat = Int32Array.from(ids);
  const imagePositions = promptImagePositions(flat, 1, I, [promptLength]);
  return noGrad(() => logSoftmax(model.forward(flat, 1, imageFeatures, { imagePositions })));
}

describe('generate with image features', () => {
  it('greedy continuations equal the argmax of full forwards with the features', () => {
    const completions = generate(model.language, {
      prompts,
      promptImageFeatures: features,
      maxNewTokens: 6,
      temperature: 0,
      seed: 0,
      stopTokenIds: [],
    });
    const V = config.text.vocabSize;
    for (const completion of completions) {
      const sequence = [...prompts[completion.promptIndex]];
      for (let step = 0; step < 6; step++) {
        const logprobs = fullLogprobs(sequence, features[completion.promptIndex], prompts[0].length);
        const row = logprobs.data.subarray((sequence.length - 1) * V, sequence.length * V);
        sequence.push(row.indexOf(Math.max(...row)));
      }
      expect(completion.ids).toEqual(sequence.slice(prompts[completion.promptIndex].length));
    }
  });

  it('sampled logprobs equal a full forward (image tokens the policy generates stay plain tokens); continuous batching gives the same completions', () => {
    const request = { prompts, promptImageFeatures: features, numSamples: 3, maxNewTokens: 8, temperature: 1, seed: 4 };
    const completions = generate(model.language, request);
    const batched = generate(model.language, { ...request, maxBatchSize: 2 });
    expect(batched.map((c) => c.ids)).toEqual(completions.map((c) => c.ids));
    const V = config.text.vocabSize;
    for (const completion of completions) {
      const prompt = prompts[completion.promptIndex];
      const sequence = [...prompt, ...completion.ids].slice(0, -1);
      const logprobs = fullLogprobs(sequence, features[completion.promptIndex], prompt.length);
      completion.ids.forEach((id, i) =>
        expect(Math.abs(logprobs.data[(prompt.length - 1 + i) * V + id] - completion.logprobs[i])).toBeLessThan(1e-4),
      );
    }
  });

  it('the image changes the completion', () => {
    const run = (imageFeatures: Tensor) =>
      generate(model.language, {
        prompts: [prompts[0]],
        promptImageFeatures: [imageFeatures],
        maxNewTokens: 8,
        temperature: 0,
        seed: 0,
        stopTokenIds: [],
      })[0].ids;
    const seen = new Set([1, 2, 3, 4, 5, 6].map((seed) => run(image(seed)).join(',')));
    expect(seen.size).toBeGreaterThan(1);
  });

  it('refuses features that disagree with the image tokens, naming the prompt', () => {
    const base = { maxNewTokens: 2, temperature: 0, seed: 0 };
    expect(() => generate(model.language, { ...base, prompts: [prompts[0]], promptImageFeatures: [null] })).toThrow(
      /prompt 0 holds 4 image tokens \(id 40\) but its image features have 0 rows/,
    );
    expect(() => generate(model.language, { ...base, prompts: [prompts[0]] })).toThrow(/prompt 0 holds 4 image tokens/);
    expect(() =>
      generate(model.language, { ...base, prompts: [prompts[2], prompts[0]], promptImageFeatures: [image(1)] }),
    ).toThrow(/promptImageFeatures has 1 entries for 2 prompts/);
    expect(() => generate(model.language, { ...base, prompts: [prompts[2]], promptImageFeatures: [image(1)] })).toThrow(
      /prompt 0 holds 0 image tokens \(id 40\) but its image features have 4 rows/,
    );
  });
});
