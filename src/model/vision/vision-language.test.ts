/**
 * The Idefics3 model layer on small random models: HF names and a save/load round trip, the pixel
 * shuffle against HF's index mapping written out as loops, gradient checks of the connector, the
 * image-token merge's count check, and which weights get gradients (frozen tower: none; connector and
 * language model: all). Parity with PyTorch is in vision-language-reference.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gradCheck } from '../../testing/gradcheck.js';
import { crossEntropy, noGrad, Random, randomNormal, sum, tensor } from '../../tensor/index.js';
import { createSmallConfig } from '../config.js';
import { createSmallVisionLanguageConfig, isIdefics3Checkpoint, parseIdefics3Config } from './idefics3-config.js';
import { connectImageFeatures, pixelShuffle } from './idefics3-connector.js';
import { loadVisionLanguageModel, saveVisionLanguageCheckpoint } from './vision-language-checkpoint.js';
import { VisionLanguageModel } from './vision-language.js';

const IMAGE_TOKEN = 30;
const config = createSmallVisionLanguageConfig({
  text: createSmallConfig({ vocabSize: 32, hiddenSize: 16, numHeads: 2, tieWordEmbeddings: false }),
  imageTokenId: IMAGE_TOKEN,
  hiddenSize: 8,
  numHeads: 2,
  intermediateSize: 16,
  imageSize: 16,
  patchSize: 4,
  scaleFactor: 2,
});
const folders: string[] = [];
afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

function pixels(imageCount: number, seed: number): Float32Array {
  return randomNormal([imageCount * 3 * 16 * 16], new Random(seed)).data;
}

/** Two rows of 10 ids; row 0 holds image 0's 4 tokens, row 1 image 1's. */
function promptIds(): Int32Array {
  const I = IMAGE_TOKEN;
  return Int32Array.from([1, 2, I, I, I, I, 3, 4, 5, 6, 7, I, I, I, I, 8, 9, 10, 11, 12]);
}

describe('idefics3 config', () => {
  it('derives tokensPerImage and refuses a scale factor that does not divide the patch grid', () => {
    expect(config.tokensPerImage).toBe(4); // (16/4)² / 2²
    const raw = {
      model_type: 'idefics3',
      scale_factor: 3,
      text_config: {
        vocab_size: 32,
        hidden_size: 16,
        intermediate_size: 32,
        num_hidden_layers: 1,
        num_attention_heads: 2,
      },
      vision_config: { image_size: 16, patch_size: 4, hidden_size: 8, num_attention_heads: 2 },
      image_token_id: 30,
    };
    expect(() => parseIdefics3Config(raw, 'x/config.json')).toThrow(
      /field "scale_factor" \(3\) does not divide the 4 patches/,
    );
    expect(() => parseIdefics3Config({ ...raw, scale_factor: 2, image_token_id: 40 }, 'x/config.json')).toThrow(
      /field "image_token_id" \(40\) is not below text_config's vocab_size \(32\)/,
    );
    expect(() =>
      parseIdefics3Config({ ...raw, scale_factor: 2, vision_config: { ...raw.vision_config, hidden_act: 'relu' } }),
    ).toThrow(/vision_config: field "hidden_act" is "relu"/);
  });
});

describe('VisionLanguageModel', () => {
  it('saves and loads a folder with the HF names, giving the same logits', () => {
    const model = VisionLanguageModel.random(config, 3);
    const folder = mkdtempSync(join(tmpdir(), 'vlm-'));
    folders.push(folder);
    saveVisionLanguageCheckpoint(join(folder, 'checkpoint'), { config, tensors: model.toStoredTensors() });
    expect(isIdefics3Checkpoint(join(folder, 'checkpoint'))).toBe(true);
    const header = readFileSync(join(folder, 'checkpoint', 'model.safetensors'))
      .subarray(8, 20000)
      .toString('latin1');
    for (const name of [
      'model.vision_model.embeddings.patch_embedding.weight',
      'model.vision_model.encoder.layers.1.self_attn.out_proj.bias',
      'model.vision_model.post_layernorm.weight',
      'model.connector.modality_projection.proj.weight',
      'model.text_model.layers.0.self_attn.q_proj.weight',
      'model.text_model.embed_tokens.weight',
      'model.text_model.norm.weight',
      'lm_head.weight',
    ])
      expect(header).toContain(`"${name}"`);
    const loaded = loadVisionLanguageModel(join(folder, 'checkpoint'));
    expect(loaded.config).toEqual(config);
    const run = (m: VisionLanguageModel) =>
      noGrad(() => m.forward(promptIds(), 2, m.imageFeatures(pixels(2, 1), 2)).data);
    expect(Array.from(run(loaded))).toEqual(Array.from(run(model)));
  });

  it("pixelShuffle puts patch (row, col)'s features where HF's views and permutes put them", () => {
    const [N, side, E, s] = [2, 4, 3, 2];
    const x = randomNormal([N, side * side, E], new Random(5));
    const y = pixelShuffle(x, s); // [N, 4, 12]
    // HF: out[n, i·(side/s) + j, (a·s + b)·E + e] = x[n, (i·s + a)·side + j·s + b, e] (a: row in block, b: column).
    for (let n = 0; n < N; n++)
      for (let i = 0; i < side / s; i++)
        for (let j = 0; j < side / s; j++)
          for (let a = 0; a < s; a++)
            for (let b = 0; b < s; b++)
              for (let e = 0; e < E; e++) {
                const out = (n * 4 + i * (side / s) + j) * 12 + (a * s + b) * E + e;
                const source = (n * 16 + (i * s + a) * side + j * s + b) * E + e;
                expect(y.data[out]).toBe(x.data[source]);
              }
  });

  it('connect (pixel shuffle + projection) passes the finite-difference gradient check', () => {
    const random = new Random(9);
    gradCheck(
      (x, w) => connectImageFeatures(x, w, 2),
      [randomNormal([2, 16, 3], random), randomNormal([5, 12], random)],
    );
  });

  it('refuses image features whose row count disagrees with the image tokens, naming both counts', () => {
    const model = VisionLanguageModel.random(config, 4);
    const features = model.imageFeatures(pixels(1, 2), 1); // 4 rows for 8 image tokens
    expect(() => model.forward(promptIds(), 2, features)).toThrow(
      /ids hold 8 image tokens \(id 30\) but the image features have 4 rows/,
    );
    expect(() => model.visionOutputs(new Float32Array(10), 1)).toThrow(/10 pixel values, expected 768 for 1 image/);
  });

  it('the frozen tower gets no gradient; the connector and every language-model weight do', () => {
    const model = VisionLanguageModel.random(config, 5);
    const ids = promptIds();
    const logits = model.forward(ids, 2, model.imageFeatures(pixels(2, 3), 2));
    const targets = Int32Array.from(ids, (id, i) =>
      i % 10 === 9 ? -100 : ids[i + 1] === IMAGE_TOKEN ? -100 : ids[i + 1],
    );
    crossEntropy(logits, targets).backward();
    for (const [name, weight] of model.parameters) {
      if (name.startsWith('model.vision_model.')) expect(weight.grad, name).toBeNull();
      else
        expect(weight.grad && sum(tensor(weight.grad.data.map(Math.abs), weight.shape)).data[0], name).toBeGreaterThan(
          0,
        );
    }
    expect(model.trainableParameters()).toHaveLength(
      model.parameters.size - [...model.parameters.keys()].filter((n) => n.startsWith('model.vision_model.')).length,
    );
  });

  it('the frozen tower runs a few tiles per forward with the same outputs as one tile at a time', () => {
    const model = VisionLanguageModel.random(config, 7);
    const all = model.visionOutputs(pixels(6, 8), 6); // two chunks: 4 + 2
    expect(all.shape).toEqual([6, 16, 8]);
    const perImage = 3 * 16 * 16;
    for (let n = 0; n < 6; n++) {
      const single = model.visionOutputs(pixels(6, 8).subarray(n * perImage, (n + 1) * perImage), 1);
      const rows = all.data.subarray(n * 16 * 8, (n + 1) * 16 * 8);
      single.data.forEach((value, i) => expect(Math.abs(value - rows[i])).toBeLessThan(1e-6));
    }
  });

  it('the whole tower + connector passes the finite-difference gradient check (tiny shapes)', () => {
    const tiny = createSmallVisionLanguageConfig({
      text: createSmallConfig({ vocabSize: 8, hiddenSize: 4, numHeads: 1, numLayers: 1 }),
      imageTokenId: 7,
      hiddenSize: 4,
      numHeads: 2,
      intermediateSize: 6,
      numLayers: 1,
      imageSize: 4,
      patchSize: 2,
    });
    const model = VisionLanguageModel.random(tiny, 8, 0.5);
    model.setVisionTrainable(true);
    const checked = [
      'model.vision_model.embeddings.patch_embedding.weight',
      'model.vision_model.embeddings.position_embedding.weight',
      'model.vision_model.encoder.layers.0.layer_norm1.bias',
      'model.vision_model.encoder.layers.0.self_attn.q_proj.weight',
      'model.vision_model.encoder.layers.0.mlp.fc1.weight',
      'model.vision_model.post_layernorm.weight',
      'model.connector.modality_projection.proj.weight',
    ];
    const weights = checked.map((name) => model.parameters.get(name)!);
    const input = randomNormal([2 * 3 * 4 * 4], new Random(10)).data;
    gradCheck((..._weights) => model.imageFeatures(input, 2), weights);
  });

  it('an unfrozen tower gets gradients too', () => {
    const model = VisionLanguageModel.random(config, 6);
    model.setVisionTrainable(true);
    const logits = model.forward(promptIds(), 2, model.imageFeatures(pixels(2, 4), 2));
    sum(logits).backward();
    expect(model.parameters.get('model.vision_model.encoder.layers.0.mlp.fc1.weight')!.grad).not.toBeNull();
    expect(model.parameters.get('model.vision_model.embeddings.patch_embedding.weight')!.grad).not.toBeNull();
  });
});
