/**
 * Bench scenario `agent-turns`: multi-turn decoding from each episode's KV cache (EpisodeDecoder:
 * observation ids appended, nothing re-fed) against re-prefilling the whole episode at every turn
 * (`generate` on the episode so far, what a rollout without a persistent cache would do).
 *
 * Is: `npm run bench -- agent-turns [--json] [--episodes 8] [--turns 4] [--turn-tokens 24]
 * [--observation-tokens 32] [--prompt-length 64] [--models fixture,random-8m]`.
 * Both paths decode the same number of tokens per turn (no stop ids) over the same observation
 * ids; one line per (model, path) with seconds and generated tokens/s.
 * Is not: a test; on a shared machine numbers vary, so compare lines from the same run only.
 */
import { performance } from 'node:perf_hooks';
import { loadCheckpoint } from '../src/model/checkpoint.js';
import { createSmallConfig } from '../src/model/config.js';
import { Transformer } from '../src/model/transformer.js';
import { EpisodeDecoder } from '../src/sampling/episode-decoder.js';
import { generate } from '../src/sampling/sampler.js';
import { Random } from '../src/tensor/index.js';
import { readFlags } from './_flags.js';

const FIXTURE = new URL('../../shared/fixtures/models/tinystories-656k', import.meta.url).pathname;
const settings = { temperature: 1, topK: 0, topP: 1, minP: 0 };

function modelNamed(name: string): Transformer {
  if (name === 'fixture') {
    const checkpoint = loadCheckpoint(FIXTURE);
    return Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  }
  if (name === 'random-8m')
    return Transformer.random(
      createSmallConfig({ vocabSize: 4096, hiddenSize: 384, numLayers: 4, numHeads: 6, maxPositionEmbeddings: 2048 }),
      1,
    );
  throw new Error(`--models: unknown model '${name}'; known: fixture, random-8m`);
}

export async function main(argv: string[]): Promise<void> {
  const { value, positive } = readFlags(argv);
  const json = argv.includes('--json');
  const episodes = positive('--episodes', '8');
  const turns = positive('--turns', '4');
  const turnTokens = positive('--turn-tokens', '24');
  const observationTokens = positive('--observation-tokens', '32');
  const promptLength = positive('--prompt-length', '64');
  for (const name of value('--models', 'fixture,random-8m').split(',')) {
    const model = modelNamed(name);
    const V = model.config.vocabSize;
    const random = new Random(5);
    const prompts = Array.from({ length: episodes }, () =>
      Array.from({ length: promptLength }, () => 3 + random.integer(V - 3)),
    );
    const observations = Array.from({ length: episodes }, () =>
      Array.from({ length: turns }, () => Array.from({ length: observationTokens }, () => 3 + random.integer(V - 3))),
    );
    const results: { path: string; seconds: number }[] = [];

    let start = performance.now();
    const decoder = new EpisodeDecoder(model, settings, []);
    const indices = prompts.map((prompt, e) =>
      decoder.add(prompt, new Random(e), promptLength + turns * (turnTokens + observationTokens)),
    );
    for (let turn = 0; turn < turns; turn++) {
      decoder.decodeTurns(
        indices,
        indices.map(() => turnTokens),
      );
      if (turn + 1 < turns) indices.forEach((index, e) => decoder.append(index, observations[e][turn]));
    }
    results.push({ path: 'kv-cached turns', seconds: (performance.now() - start) / 1000 });

    start = performance.now();
    const sequences = prompts.map((prompt) => [...prompt]);
    for (let turn = 0; turn < turns; turn++) {
      const completions = generate(model, {
        prompts: sequences,
        maxNewTokens: turnTokens,
        stopTokenIds: [],
        seed: turn,
        ...settings,
      });
      completions.forEach((completion) => sequences[completion.promptIndex].push(...completion.ids));
      if (turn + 1 < turns) sequences.forEach((sequence, e) => sequence.push(...observations[e][turn]));
    }
    results.push({ path: 're-prefill each turn', seconds: (performance.now() - start) / 1000 });

    const generated = episodes * turns * turnTokens;
    for (const { path, seconds } of results) {
      const line = {
        model: name,
        path,
        episodes,
        turns,
        turnTokens,
        observationTokens,
        promptLength,
        seconds,
        tokensPerSecond: generated / seconds,
      };
      if (json) console.log(JSON.stringify(line));
      else
        console.log(
          `${name.padEnd(10)} ${path.padEnd(22)} ${seconds.toFixed(3)} s  ${(generated / seconds).toFixed(1)} generated tokens/s`,
        );
    }
  }
}
