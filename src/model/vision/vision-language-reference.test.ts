/**
 * Parity of the Idefics3 model with PyTorch: scripts/reference/idefics3_reference.py (transformers'
 * modeling_idefics3 semantics, float64) wrote test/fixtures/idefics3/reference.json for two tiny
 * random-weight checkpoints (tanh GELU, untied head, scale factor 2; exact GELU, tied head, scale 4).
 * The weights are not committed: both sides build them from the same integer-hash recipe, checked
 * here tensor by tensor against the script's sums; the test writes them in the HF layout under the
 * script's names with the script's config.json, loads the folder with our loader, and matches the
 * image features and the per-token logprobs of an image+text batch (3 images over 2 rows) to 1e-4,
 * and the gradients of −mean(logprobs) w.r.t. the connector and language-model weights (relative
 * 1e-4), the frozen tower getting none. On the default backend, and again on webgpu when an adapter
 * opens (always in CI).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { logSoftmax, logSoftmaxGather, mean, neg, noGrad } from '../../tensor/index.js';
import { encodeSafetensors, type StoredTensor } from '../safetensors.js';
import { loadVisionLanguageModel } from './vision-language-checkpoint.js';
import { testFixture } from '../../../test/helpers/fixtures.js';
import { useBackendInSuite, webgpuUnderTest } from '../../tensor/test-backends.js';

interface RecipeEntry {
  shape: number[];
  seed: number;
  scale: number;
  offset: number;
  sum: number;
}

interface ReferenceCase {
  config: Record<string, unknown>;
  tensors: (RecipeEntry & { name: string })[];
  pixel_values: RecipeEntry;
  image_count: number;
  tokens_per_image: number;
  input_ids: number[][];
  logprobs: number[][];
  image_features: { shape: number[]; first8: number[]; l2: number };
  gradients: Record<string, { l2: number; first8: number[] }>;
}

const reference = JSON.parse(readFileSync(testFixture('idefics3/reference.json'), 'utf8')) as {
  cases: Record<string, ReferenceCase>;
};

/** The script's recipe: offset + scale·(2u − 1) with u a lowbias32 hash of seed·0x9E3779B1 + k, rounded to float32. */
function recipe(entry: RecipeEntry): Float32Array {
  const size = entry.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(size);
  for (let k = 0; k < size; k++) {
    let x = (Math.imul(entry.seed, 0x9e3779b1) + k) >>> 0;
    x ^= x >>> 16;
    x = Math.imul(x, 0x7feb352d) >>> 0;
    x ^= x >>> 15;
    x = Math.imul(x, 0x846ca68b) >>> 0;
    x ^= x >>> 16;
    out[k] = entry.offset + entry.scale * (2 * ((x >>> 0) / 4294967296) - 1);
  }
  return out;
}

const sumOf = (data: Float32Array): number => data.reduce((total, value) => total + value, 0);
const folders: string[] = [];
afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

function parity([, example]: [string, (typeof reference.cases)[string]]): void {
  it('builds the same weights as the script, loads them with our loader, matches the logprobs to 1e-4 and the gradients', () => {
    const tensors = new Map<string, StoredTensor>();
    for (const entry of example.tensors) {
      const data = recipe(entry);
      expect(Math.abs(sumOf(data) - entry.sum), entry.name).toBeLessThan(1e-9);
      tensors.set(entry.name, { shape: entry.shape, data });
    }
    const folder = mkdtempSync(join(tmpdir(), 'idefics3-reference-'));
    folders.push(folder);
    writeFileSync(join(folder, 'config.json'), JSON.stringify(example.config));
    writeFileSync(join(folder, 'model.safetensors'), encodeSafetensors(tensors, { metadata: { format: 'pt' } }));
    const model = loadVisionLanguageModel(folder);
    expect(model.config.tokensPerImage).toBe(example.tokens_per_image);

    const pixels = recipe(example.pixel_values);
    expect(Math.abs(sumOf(pixels) - example.pixel_values.sum)).toBeLessThan(1e-9);
    const ids = Int32Array.from(example.input_ids.flat());
    const [B, T] = [example.input_ids.length, example.input_ids[0].length];
    const { features, logprobs } = noGrad(() => {
      const features = model.imageFeatures(pixels, example.image_count);
      const logits = model.forward(ids, B, features); // [B, T, V]
      return { features, logprobs: logSoftmax(logits, -1) };
    });
    expect(features.shape).toEqual(example.image_features.shape);
    example.image_features.first8.forEach((value, i) => expect(Math.abs(features.data[i] - value)).toBeLessThan(1e-4));
    const l2 = Math.sqrt(features.data.reduce((total, value) => total + value * value, 0));
    expect(Math.abs(l2 - example.image_features.l2) / example.image_features.l2).toBeLessThan(1e-5);
    const V = logprobs.shape[2];
    let worst = 0;
    for (let b = 0; b < B; b++)
      for (let t = 0; t < T - 1; t++) {
        const ours = logprobs.data[(b * T + t) * V + ids[b * T + t + 1]];
        worst = Math.max(worst, Math.abs(ours - example.logprobs[b][t]));
      }
    expect(worst).toBeLessThan(1e-4);

    // Gradients of −mean(logprobs): the connector and the language model against PyTorch's; the tower none.
    const rows = Int32Array.from({ length: B * (T - 1) }, (_, r) => Math.floor(r / (T - 1)) * T + (r % (T - 1)));
    const targets = Int32Array.from(rows, (row) => ids[row + 1]);
    const logits = model.forward(ids, B, model.imageFeatures(pixels, example.image_count), { logitRows: rows });
    neg(mean(logSoftmaxGather(logits, targets))).backward();
    for (const [name, expected] of Object.entries(example.gradients)) {
      const gradient = model.parameters.get(name)!.grad!.data;
      const l2 = Math.sqrt(gradient.reduce((total, value) => total + value * value, 0));
      expect(Math.abs(l2 - expected.l2) / expected.l2, name).toBeLessThan(1e-4);
      expected.first8.forEach((value, i) =>
        expect(Math.abs(gradient[i] - value), name).toBeLessThan(1e-4 * expected.l2),
      );
    }
    for (const [name, weight] of model.parameters)
      if (name.startsWith('model.vision_model.')) expect(weight.grad).toBeNull();
  });
}

describe.each(Object.entries(reference.cases))('Idefics3 parity with PyTorch: %s', (name, example) =>
  parity([name, example]),
);

// The same references with every product on the GPU (lavapipe in CI).
const webgpu = webgpuUnderTest();
if (webgpu) {
  describe('on webgpu', () => {
    useBackendInSuite(webgpu.backend);
    describe.each(Object.entries(reference.cases))('Idefics3 parity with PyTorch: %s', (name, example) =>
      parity([name, example]),
    );
  });
}
