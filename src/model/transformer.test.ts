/**
 * Parity of the transformer with PyTorch: the real TinyStories checkpoint (../shared fixture) and the
 * small random-weight checkpoints of scripts/reference/make_fixtures.py (Qwen2 biases + untied head,
 * Qwen3 q/k norm, llama3 and linear RoPE scaling, Mistral sharded F16). For each: per-token
 * log-probabilities within 1e-4, the loss and every gradient tensor's L2 norm and first 8 values
 * within a relative 1e-3, and the greedy continuation exactly — with and without the KV cache. On the
 * default backend, and again on webgpu when an adapter opens (always in CI).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crossEntropy, logSoftmax, noGrad } from '../tensor/index.js';
import { useBackendInSuite, webgpuUnderTest } from '../tensor/test-backends.js';
import { loadCheckpoint } from './checkpoint.js';
import { Transformer } from './transformer.js';
import { testFixture, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const fixtures = [
  tinyStoriesModel,
  ...['qwen2-bias-untied', 'qwen3-qk-norm', 'llama-rope-llama3', 'llama-rope-linear-bias', 'mistral-sharded-f16'].map(
    (name) => testFixture('models', name),
  ),
];

interface GradientReference {
  shape: number[];
  l2: number;
  first8: number[];
}

interface Reference {
  forward: { input_ids: number[]; last_position_logprobs: number[]; next_token_logprob: number[] };
  backward: { value: number; gradients: Record<string, GradientReference> };
  greedy: { prompt_ids: number[]; max_new_tokens: number; stop_at_eos: boolean; output_ids: number[] };
}

function greedy(
  model: Transformer,
  promptIds: number[],
  maxNewTokens: number,
  eos: number[],
  useCache: boolean,
): number[] {
  return noGrad(() => {
    const ids = [...promptIds];
    const cache = useCache ? model.createCache() : undefined;
    let pending = ids.slice();
    for (let step = 0; step < maxNewTokens; step++) {
      const input = useCache ? pending : ids;
      const logits = model.forward(Int32Array.from(input), 1, { cache });
      const V = model.config.vocabSize;
      const last = logits.data.subarray(logits.size - V);
      let best = 0;
      for (let i = 1; i < V; i++) if (last[i] > last[best]) best = i;
      ids.push(best);
      pending = [best];
      if (eos.includes(best)) break;
    }
    return ids;
  });
}

function parity(folder: string): void {
  if (!existsSync(folder)) throw new Error(`fixture folder ${folder} is missing`);
  const reference: Reference = JSON.parse(readFileSync(join(folder, 'reference.json'), 'utf8'));
  const checkpoint = loadCheckpoint(folder);
  const model = Transformer.fromTensors(checkpoint.config, checkpoint.tensors);
  const ids = Int32Array.from(reference.forward.input_ids);

  it('log-probabilities within 1e-4', () => {
    const logprobs = noGrad(() => logSoftmax(model.forward(ids, 1)));
    const V = checkpoint.config.vocabSize;
    const last = logprobs.data.subarray((ids.length - 1) * V);
    reference.forward.last_position_logprobs.forEach((value, i) =>
      expect(Math.abs(last[i] - value)).toBeLessThan(1e-4),
    );
    reference.forward.next_token_logprob.forEach((value, t) => {
      expect(Math.abs(logprobs.data[t * V + ids[t + 1]] - value)).toBeLessThan(1e-4);
    });
  });

  it('loss and every gradient within a relative 1e-3', () => {
    for (const parameter of model.parameters.values()) parameter.grad = null;
    const logits = model.forward(ids.subarray(0, -1), 1);
    const loss = crossEntropy(logits, ids.subarray(1));
    expect(Math.abs(loss.item() - reference.backward.value) / reference.backward.value).toBeLessThan(1e-3);
    loss.backward();
    const tied = checkpoint.config.tieWordEmbeddings;
    for (const [name, expected] of Object.entries(reference.backward.gradients)) {
      const ours = name === 'lm_head.weight' && tied ? 'model.embed_tokens.weight' : name;
      const gradient = model.parameters.get(ours)?.grad?.data;
      expect(gradient, `gradient of ${ours}`).toBeDefined();
      let squares = 0;
      for (const g of gradient!) squares += g * g;
      expect(Math.abs(Math.sqrt(squares) - expected.l2) / expected.l2, `L2 of ${name}`).toBeLessThan(1e-3);
      // First values: relative 1e-3 of the tensor's largest scale (tiny entries carry float32 noise).
      const scale = Math.max(...expected.first8.map(Math.abs), expected.l2 / Math.sqrt(gradient!.length));
      expected.first8.forEach((value, i) =>
        expect(Math.abs(gradient![i] - value), `${name}[${i}]`).toBeLessThan(1e-3 * scale),
      );
    }
  });

  it('greedy continuation exactly, with and without the KV cache', () => {
    const { prompt_ids: prompt, max_new_tokens: maxNew, output_ids: expected } = reference.greedy;
    const eos = checkpoint.config.eosTokenIds;
    expect(greedy(model, prompt, maxNew, eos, true)).toEqual(expected);
    expect(greedy(model, prompt, Math.min(maxNew, 12), eos, false)).toEqual(
      expected.slice(0, prompt.length + Math.min(maxNew, 12)),
    );
  });
}

describe.each(fixtures)('transformer parity with PyTorch: %s', parity);

// The same references with every product on the GPU (lavapipe in CI): the webgpu backend's oracle.
const webgpu = webgpuUnderTest();
if (webgpu) {
  describe('on webgpu', () => {
    useBackendInSuite(webgpu.backend);
    describe.each(fixtures)('transformer parity with PyTorch: %s', parity);
  });
}
