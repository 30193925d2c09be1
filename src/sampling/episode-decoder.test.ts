/**
 * The episode decoder against a full forward, on the real TinyStories checkpoint: episodes decode
 * turns batched together, observation ids are appended to their caches between turns, and the
 * logprob of every sampled id must equal what one forward over the whole episode (prompt, turns,
 * observations) gives at that position (1e-4). Also: an episode's ids do not depend on which
 * other episodes share its batch, and decoding over an unfed stop id is refused.
 */
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../model/checkpoint.js';
import { Transformer } from '../model/transformer.js';
import { logSoftmaxRow } from './logits.js';
import { noGrad, Random } from '../tensor/index.js';
import { EpisodeDecoder, type EpisodeTurn } from './episode-decoder.js';
import { tinyStoriesModel } from '../../test/helpers/fixtures.js';

const checkpoint = loadCheckpoint(tinyStoriesModel);
const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
const settings = { temperature: 0.9, topK: 0, topP: 1, minP: 0 };
const STOP = 13; // a frequent id in this model's vocabulary (ends turns early in some episodes)

const prompts = [
  [1, 320, 400, 18, 102],
  [1, 77, 45],
  [1, 500, 12, 19, 300, 301, 8],
];
const observations = [
  [[200, 201, 202], [5]],
  [
    [9, 9],
    [600, 601, 602, 603],
  ],
  [[44], [45, 46]],
];

/** Three turns of every episode, with its observations appended between them. */
function runEpisodes(which: number[]): { sequences: number[][]; sampled: { position: number; logprob: number }[][] } {
  const decoder = new EpisodeDecoder(model, settings, [STOP]);
  const indices = which.map((e) => decoder.add(prompts[e], new Random(1000 + e)));
  const sequences = which.map((e) => [...prompts[e]]);
  const sampled: { position: number; logprob: number }[][] = which.map(() => []);
  for (let turn = 0; turn < 3; turn++) {
    const turns: EpisodeTurn[] = decoder.decodeTurns(
      indices,
      which.map((e) => 6 + e + turn),
    );
    turns.forEach((result, k) => {
      result.ids.forEach((id, t) => {
        sampled[k].push({ position: sequences[k].length, logprob: result.logprobs[t] });
        sequences[k].push(id);
      });
      if (turn < 2) {
        const observation = observations[which[k]][turn];
        decoder.append(indices[k], observation);
        sequences[k].push(...observation);
        expect(decoder.length(indices[k])).toBe(sequences[k].length);
      }
    });
  }
  return { sequences, sampled };
}

describe('EpisodeDecoder', () => {
  it('gives every sampled id the logprob a full forward over the whole episode gives it (1e-4)', () => {
    const { sequences, sampled } = runEpisodes([0, 1, 2]);
    sequences.forEach((sequence, k) => {
      const logits = noGrad(() => model.forward(Int32Array.from(sequence), 1)).data; // [1, T, V]
      const V = model.config.vocabSize;
      expect(sampled[k].length).toBeGreaterThan(6);
      for (const { position, logprob } of sampled[k]) {
        const row = Float32Array.from(
          logits.subarray((position - 1) * V, position * V),
          (x) => x / settings.temperature,
        );
        const expected = logSoftmaxRow(row)[sequence[position]];
        expect(Math.abs(logprob - expected)).toBeLessThan(1e-4);
      }
    });
  });

  it('gives an episode the same ids whichever episodes share its batch', () => {
    const together = runEpisodes([0, 1, 2]);
    const alone = runEpisodes([1]);
    expect(alone.sequences[0]).toEqual(together.sequences[1]);
  });

  it('refuses to decode again before the observation is appended', () => {
    const decoder = new EpisodeDecoder(model, settings, [STOP]);
    const episode = decoder.add(prompts[0], new Random(1));
    decoder.decodeTurns([episode], [3]);
    expect(() => decoder.decodeTurns([episode], [3])).toThrow(/append the observation first/);
  });
});
