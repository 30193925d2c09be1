/**
 * Tests for checkpoint loading and saving: the shared TinyStories checkpoint and the PyTorch-made
 * fixtures load with the shapes their reference.json lists (F32, BF16, sharded F16, tied, untied),
 * a saved checkpoint loads back bit-identically, and bad folders fail naming the file and tensor.
 */
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Checkpoint,
  expectedTensorShapes,
  loadCheckpoint,
  resolveStopTokenIds,
  saveCheckpoint,
} from './checkpoint.js';
import { encodeSafetensors, readSafetensors, writeSafetensors } from './safetensors.js';
import { testFixture, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const fixtures = testFixture('models');
const FIXTURE_NAMES = [
  'qwen2-bias-untied',
  'qwen3-qk-norm',
  'llama-rope-llama3',
  'llama-rope-linear-bias',
  'mistral-sharded-f16',
];
const scratch = mkdtempSync(join(tmpdir(), 'checkpoint-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Reference {
  backward: { gradients: Record<string, { shape: number[] }> };
}
const readReference = (folder: string): Reference => JSON.parse(readFileSync(join(folder, 'reference.json'), 'utf8'));
const bytesOf = (data: Float32Array): Buffer => Buffer.from(data.buffer, data.byteOffset, data.byteLength);
/** Bit-for-bit equality (NaN payloads and -0 included); a byte compare, as deep-equal is slow on large arrays. */
const sameBits = (a: Float32Array, b: Float32Array): boolean => a.length === b.length && bytesOf(a).equals(bytesOf(b));

/** Reference gradients are keyed by the names in the file; a tied TinyStories stores lm_head.weight. */
function expectShapesMatchReference(checkpoint: Checkpoint, reference: Reference): void {
  const loaded = new Map([...checkpoint.tensors].map(([name, tensor]) => [name, tensor.shape]));
  const referenced = new Map(Object.entries(reference.backward.gradients).map(([name, g]) => [name, g.shape]));
  if (checkpoint.config.tieWordEmbeddings && referenced.has('lm_head.weight')) {
    referenced.set('model.embed_tokens.weight', referenced.get('lm_head.weight')!);
    referenced.delete('lm_head.weight');
  }
  expect(new Map([...loaded].sort())).toEqual(new Map([...referenced].sort()));
}

describe('loadCheckpoint', () => {
  it('loads TinyStories-656K (tied head stored as lm_head.weight) with the reference shapes', () => {
    const checkpoint = loadCheckpoint(tinyStoriesModel);
    expectShapesMatchReference(checkpoint, readReference(tinyStoriesModel));
    expect(checkpoint.tensors.has('lm_head.weight')).toBe(false);
    expect(checkpoint.tensors.get('model.embed_tokens.weight')!.shape).toEqual([2048, 128]);
    const parameters = [...checkpoint.tensors.values()].reduce((sum, t) => sum + t.data.length, 0);
    expect(parameters).toBe(656_000); // the README: "656,000 float32 parameters"
    expect(checkpoint.generationConfig).toMatchObject({ bos_token_id: 1, eos_token_id: 2 });
    expect(checkpoint.files.map((file) => file.split('/').pop())).toEqual(
      expect.arrayContaining([
        'config.json',
        'model.safetensors',
        'generation_config.json',
        'tokenizer.json',
        'tokenizer_config.json',
      ]),
    );
    // The stored lm_head.weight is the very matrix served as embeddings.
    const raw = readSafetensors(join(tinyStoriesModel, 'model.safetensors'), ['lm_head.weight']).get('lm_head.weight')!;
    expect(sameBits(checkpoint.tensors.get('model.embed_tokens.weight')!.data, raw.data)).toBe(true);
  });

  for (const name of FIXTURE_NAMES) {
    it(`${name}: loads with the reference shapes`, () => {
      const checkpoint = loadCheckpoint(join(fixtures, name));
      expectShapesMatchReference(checkpoint, readReference(join(fixtures, name)));
      for (const tensor of checkpoint.tensors.values()) expect(tensor.data.every(Number.isFinite)).toBe(true);
      expect(checkpoint.generationConfig).toBeNull();
    });
  }

  it('reads a sharded checkpoint from both shards', () => {
    const checkpoint = loadCheckpoint(join(fixtures, 'mistral-sharded-f16'));
    expect(checkpoint.files.filter((file) => file.endsWith('.safetensors'))).toHaveLength(2);
  });

  it('lists the expected tensors per architecture', () => {
    const qwen2 = expectedTensorShapes(loadCheckpoint(join(fixtures, 'qwen2-bias-untied')).config);
    expect(qwen2.get('model.layers.1.self_attn.k_proj.bias')).toEqual([16]);
    expect(qwen2.has('model.layers.1.self_attn.o_proj.bias')).toBe(false);
    expect(qwen2.get('lm_head.weight')).toEqual([96, 32]);
    const qwen3 = expectedTensorShapes(loadCheckpoint(join(fixtures, 'qwen3-qk-norm')).config);
    expect(qwen3.get('model.layers.0.self_attn.q_norm.weight')).toEqual([16]);
    expect(qwen3.get('model.layers.0.self_attn.q_proj.weight')).toEqual([32, 32]);
    expect(qwen3.get('model.layers.0.self_attn.o_proj.weight')).toEqual([32, 32]);
  });
});

describe('resolveStopTokenIds', () => {
  const config = loadCheckpoint(join(fixtures, 'qwen2-bias-untied')).config; // eos_token_id 2

  it('merges generation_config and config ids without duplicates', () => {
    expect(resolveStopTokenIds(config, null)).toEqual([2]);
    expect(resolveStopTokenIds(config, { eos_token_id: 2 })).toEqual([2]);
    expect(resolveStopTokenIds(config, { eos_token_id: [5, 2] })).toEqual([5, 2]);
  });

  it('names an eos id outside the vocabulary', () => {
    expect(() => resolveStopTokenIds(config, { eos_token_id: [96] })).toThrow(
      /generation_config\.json: field "eos_token_id" has 96, not a token id below vocab_size 96/,
    );
  });
});

describe('saveCheckpoint', () => {
  for (const source of [tinyStoriesModel, ...FIXTURE_NAMES.map((name) => join(fixtures, name))]) {
    const name = source.split('/').pop()!;
    it(`${name}: a saved checkpoint loads back bit-identically`, () => {
      const original = loadCheckpoint(source);
      const target = join(scratch, `saved-${name}`);
      saveCheckpoint(target, { ...original, sourceDir: source });
      const back = loadCheckpoint(target);
      expect(back.config).toEqual(original.config);
      expect([...back.tensors.keys()]).toEqual([...original.tensors.keys()]);
      for (const [tensorName, tensor] of original.tensors) {
        expect(back.tensors.get(tensorName)!.shape).toEqual(tensor.shape);
        expect(sameBits(back.tensors.get(tensorName)!.data, tensor.data), tensorName).toBe(true);
      }
      expect(readSafetensors(join(target, 'model.safetensors')).size).toBe(original.tensors.size);
    });
  }

  it('copies tokenizer files and generation_config.json through, and writes format "pt" metadata', () => {
    const target = join(scratch, 'with-tokenizer');
    saveCheckpoint(target, {
      ...loadCheckpoint(tinyStoriesModel),
      generationConfig: null,
      sourceDir: tinyStoriesModel,
    });
    for (const file of [
      'tokenizer.json',
      'tokenizer_config.json',
      'special_tokens_map.json',
      'generation_config.json',
    ]) {
      expect(readFileSync(join(target, file)).equals(readFileSync(join(tinyStoriesModel, file)))).toBe(true);
    }
    const headerLength = Number(readFileSync(join(target, 'model.safetensors')).readBigUInt64LE(0));
    const header = JSON.parse(
      readFileSync(join(target, 'model.safetensors'))
        .subarray(8, 8 + headerLength)
        .toString(),
    );
    expect(header.__metadata__).toEqual({ format: 'pt' });
    expect(JSON.parse(readFileSync(join(target, 'config.json'), 'utf8'))).toMatchObject({
      architectures: ['LlamaForCausalLM'],
      tie_word_embeddings: true,
      torch_dtype: 'float32',
    });
  });

  it('replaces an existing folder whole and leaves no temporary folders behind', () => {
    const target = join(scratch, 'replace', 'model');
    const first = loadCheckpoint(join(fixtures, 'qwen2-bias-untied'));
    saveCheckpoint(target, { ...first, generationConfig: { eos_token_id: 2, note: 'first' } });
    writeFileSync(join(target, 'stale.txt'), 'from the first save');
    const second = loadCheckpoint(join(fixtures, 'qwen3-qk-norm'));
    saveCheckpoint(target, { ...second, generationConfig: { eos_token_id: 2, note: 'second' } });
    expect(existsSync(join(target, 'stale.txt'))).toBe(false);
    expect(loadCheckpoint(target).config.modelType).toBe('qwen3');
    expect(loadCheckpoint(target).generationConfig).toEqual({ eos_token_id: 2, note: 'second' });
    expect(readdirSync(join(scratch, 'replace'))).toEqual(['model']);
  });

  it('refuses tensors that do not fit the config before writing anything', () => {
    const checkpoint = loadCheckpoint(join(fixtures, 'qwen2-bias-untied'));
    const tensors = new Map(checkpoint.tensors);
    tensors.delete('model.norm.weight');
    const target = join(scratch, 'refused');
    expect(() => saveCheckpoint(target, { ...checkpoint, tensors })).toThrow(
      /missing tensor "model\.norm\.weight" \(expected shape \[32\]\)/,
    );
    expect(existsSync(target)).toBe(false);
    expect(() => saveCheckpoint(target, { ...checkpoint, tensors })).toThrow(`saveCheckpoint(${target})`);
    expect(readdirSync(scratch).filter((name) => name.startsWith('.refused'))).toEqual([]); // no temporary folder either
  });
});

describe('bad checkpoint folders', () => {
  /** Copies a fixture into scratch and rewrites its weights. */
  function brokenCopy(
    label: string,
    edit: (tensors: Map<string, { shape: number[]; data: Float32Array }>) => void,
  ): string {
    const folder = join(scratch, `broken-${label}`);
    cpSync(join(fixtures, 'qwen2-bias-untied'), folder, { recursive: true });
    const tensors = readSafetensors(join(folder, 'model.safetensors'));
    edit(tensors);
    writeSafetensors(join(folder, 'model.safetensors'), tensors);
    return folder;
  }

  it('names a missing config.json', () => {
    const folder = join(scratch, 'no-config');
    cpSync(join(fixtures, 'qwen2-bias-untied'), folder, { recursive: true });
    rmSync(join(folder, 'config.json'));
    expect(() => loadCheckpoint(folder)).toThrow(/no-config\/config\.json: missing/);
  });

  it('names a folder without weights', () => {
    const folder = join(scratch, 'no-weights');
    cpSync(join(fixtures, 'qwen2-bias-untied'), folder, { recursive: true });
    rmSync(join(folder, 'model.safetensors'));
    expect(() => loadCheckpoint(folder)).toThrow(
      /no-weights: no model\.safetensors or model\.safetensors\.index\.json/,
    );
  });

  it('names a missing tensor, its expected shape and the file', () => {
    const folder = brokenCopy('missing', (tensors) => tensors.delete('model.layers.1.self_attn.q_proj.bias'));
    expect(() => loadCheckpoint(folder)).toThrow(
      /broken-missing\/model\.safetensors: missing tensor "model\.layers\.1\.self_attn\.q_proj\.bias" \(expected shape \[32\]\)/,
    );
  });

  it('names a tensor with the wrong shape, both shapes and the file', () => {
    const folder = brokenCopy('shape', (tensors) =>
      tensors.set('model.layers.0.mlp.up_proj.weight', { shape: [32, 48], data: new Float32Array(32 * 48) }),
    );
    expect(() => loadCheckpoint(folder)).toThrow(
      /broken-shape\/model\.safetensors: tensor "model\.layers\.0\.mlp\.up_proj\.weight" has shape \[32, 48\], expected \[48, 32\]/,
    );
  });

  it('names tensors the config does not account for', () => {
    const folder = brokenCopy('extra', (tensors) =>
      tensors.set('model.layers.0.mlp.gate_proj.bias', { shape: [48], data: new Float32Array(48) }),
    );
    expect(() => loadCheckpoint(folder)).toThrow(
      /1 tensor\(s\) not used by a qwen2 model with this config: "model\.layers\.0\.mlp\.gate_proj\.bias"/,
    );
  });

  it('names the tensor a truncated weights file cuts off', () => {
    const folder = join(scratch, 'truncated');
    cpSync(join(fixtures, 'qwen2-bias-untied'), folder, { recursive: true });
    const file = join(folder, 'model.safetensors');
    truncateSync(file, readFileSync(file).length - 100);
    expect(() => loadCheckpoint(folder)).toThrow(
      /truncated\/model\.safetensors: tensor "lm_head\.weight" ends at data byte \d+ but the file has only \d+ data bytes/,
    );
  });

  it('names a shard the index points to that is missing', () => {
    const folder = join(scratch, 'missing-shard');
    cpSync(join(fixtures, 'mistral-sharded-f16'), folder, { recursive: true });
    rmSync(join(folder, 'model-00002-of-00002.safetensors'));
    expect(() => loadCheckpoint(folder)).toThrow(
      /model\.safetensors\.index\.json: names shard model-00002-of-00002\.safetensors, which is missing/,
    );
  });

  it('names a config that does not match the weights', () => {
    const folder = join(scratch, 'mismatch');
    cpSync(join(fixtures, 'qwen2-bias-untied'), folder, { recursive: true });
    const config = JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8'));
    writeFileSync(join(folder, 'config.json'), JSON.stringify({ ...config, hidden_size: 64 }));
    expect(() => loadCheckpoint(folder)).toThrow(
      /mismatch\/model\.safetensors: tensor "model\.embed_tokens\.weight" has shape \[96, 32\], expected \[96, 64\]/,
    );
  });

  it('encodes checkpoints that only differ in tensor order identically after saving', () => {
    const checkpoint = loadCheckpoint(join(fixtures, 'qwen3-qk-norm'));
    const reversed = new Map([...checkpoint.tensors].reverse());
    const a = join(scratch, 'order-a');
    const b = join(scratch, 'order-b');
    saveCheckpoint(a, checkpoint);
    saveCheckpoint(b, { ...checkpoint, tensors: reversed });
    expect(readFileSync(join(a, 'model.safetensors')).equals(readFileSync(join(b, 'model.safetensors')))).toBe(true);
    expect(encodeSafetensors(checkpoint.tensors).length).toBe(readFileSync(join(a, 'model.safetensors')).length - 24);
  });
});
