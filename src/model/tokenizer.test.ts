/**
 * Tests for the HF tokenizer wrapper against the TinyStories reference encodings, special tokens,
 * decoding, the vocabulary-size check, chat-template discovery, and the character tokenizer (including
 * its tokenizer.json export loading back through the HF wrapper with identical ids).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CharTokenizer, DEFAULT_ALPHABET } from './char-tokenizer.js';
import { expectedTensorShapes, loadCheckpoint, loadModelConfig, saveCheckpoint } from './checkpoint.js';
import { createSmallConfig } from './config.js';
import { checkTokenizerFitsModel, loadTokenizer } from './tokenizer.js';
import { testFixture, tinyStoriesModel } from '../../test/helpers/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'tokenizer-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Reference {
  tokenizer: { encodings: { text: string; ids: number[] }[] };
  greedy: { output_ids: number[]; text: string };
}
const reference: Reference = JSON.parse(readFileSync(join(tinyStoriesModel, 'reference.json'), 'utf8'));

describe('HfTokenizer on TinyStories-656K', () => {
  const tokenizer = loadTokenizer(tinyStoriesModel);

  for (const { text, ids } of reference.tokenizer.encodings) {
    it(`encodes ${JSON.stringify(text)} exactly as the reference`, () => {
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
      expect(tokenizer.encode(text)).toEqual([1, ...ids]); // add_bos_token: BOS id 1
    });
  }

  it('decodes the reference encodings back to their text', () => {
    for (const { text, ids } of reference.tokenizer.encodings) expect(tokenizer.decode(ids)).toBe(text);
  });

  it('decodes the reference greedy continuation to the reference text', () => {
    const decoded = tokenizer.decode(reference.greedy.output_ids, { skipSpecialTokens: true });
    expect(decoded.trim()).toBe(
      reference.greedy.text.replace('<|start_story|>', '').replace('<|end_story|>', '').trim(),
    );
  });

  it('knows its special tokens and vocabulary size', () => {
    expect([tokenizer.bosTokenId, tokenizer.eosTokenId, tokenizer.padTokenId]).toEqual([1, 2, 0]);
    expect([tokenizer.bosToken, tokenizer.eosToken]).toEqual(['<|start_story|>', '<|end_story|>']);
    expect([...tokenizer.specialTokenIds].sort()).toEqual([0, 1, 2]);
    expect(tokenizer.vocabSize).toBe(2048);
    expect(tokenizer.chatTemplate).toBeNull();
  });

  it('keeps or skips special tokens when decoding', () => {
    const ids = [1, ...reference.tokenizer.encodings[1].ids, 2];
    expect(tokenizer.decode(ids)).toBe(`<|start_story|> ${reference.tokenizer.encodings[1].text}<|end_story|>`);
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(reference.tokenizer.encodings[1].text);
  });

  it('fits its own model and refuses a model with a smaller vocabulary', () => {
    const config = loadModelConfig(join(tinyStoriesModel, 'config.json'));
    expect(() => checkTokenizerFitsModel(tokenizer, config)).not.toThrow();
    expect(() => checkTokenizerFitsModel(tokenizer, { ...config, vocabSize: 1000 }, tinyStoriesModel)).toThrow(
      /tinystories-656k: the tokenizer has 2048 tokens \(ids up to 2047\) but the model's config\.json vocab_size is 1000/,
    );
  });
});

describe('loading tokenizer folders', () => {
  it('names a missing tokenizer.json', () => {
    expect(() => loadTokenizer(testFixture('models/qwen2-bias-untied'))).toThrow(
      /qwen2-bias-untied\/tokenizer\.json: missing/,
    );
  });

  it('names a special token that is not in the vocabulary', () => {
    const folder = join(scratch, 'bad-special');
    cpSync(tinyStoriesModel, folder, { recursive: true });
    const config = JSON.parse(readFileSync(join(folder, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ ...config, eos_token: '<|nope|>' }));
    expect(() => loadTokenizer(folder)).toThrow(
      /bad-special: tokenizer_config\.json field "eos_token" is "<\|nope\|>", which is not in the vocabulary/,
    );
  });

  it('finds a chat template in tokenizer_config.json, a named list, or chat_template.jinja', () => {
    const folder = join(scratch, 'templates');
    cpSync(tinyStoriesModel, folder, { recursive: true });
    const config = JSON.parse(readFileSync(join(folder, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: 'inline' }));
    expect(loadTokenizer(folder).chatTemplate).toBe('inline');
    const named = [
      { name: 'tool_use', template: 'tools' },
      { name: 'default', template: 'plain' },
    ];
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: named }));
    expect(loadTokenizer(folder).chatTemplate).toBe('plain');
    writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify(config));
    writeFileSync(join(folder, 'chat_template.jinja'), 'from a file');
    expect(loadTokenizer(folder).chatTemplate).toBe('from a file');
  });
});

describe('CharTokenizer', () => {
  const tokenizer = new CharTokenizer({ extraSpecialTokens: ['<|user|>', '<|assistant|>'] });

  it('numbers specials first, then the alphabet', () => {
    expect(tokenizer.vocabSize).toBe(4 + 2 + DEFAULT_ALPHABET.length);
    expect(tokenizer.tokens.slice(0, 6)).toEqual(['<pad>', '<bos>', '<eos>', '<unk>', '<|user|>', '<|assistant|>']);
    expect(tokenizer.encode('\n', { addSpecialTokens: false })).toEqual([6]);
    expect(tokenizer.encode(' ', { addSpecialTokens: false })).toEqual([7]);
  });

  it('encodes characters, whole special tokens, unknown characters, and BOS on request', () => {
    expect(tokenizer.encode('12+3', { addSpecialTokens: false })).toEqual(
      ['1', '2', '+', '3'].map((c) => tokenizer.tokens.indexOf(c)),
    );
    expect(tokenizer.encode('<|user|>hi<eos>', { addSpecialTokens: false })).toEqual([
      4,
      tokenizer.tokens.indexOf('h'),
      tokenizer.tokens.indexOf('i'),
      2,
    ]);
    expect(tokenizer.encode('é😀', { addSpecialTokens: false })).toEqual([3, 3]);
    expect(tokenizer.encode('a')[0]).toBe(1);
  });

  it('decodes back, with or without special tokens, and names ids outside the vocabulary', () => {
    const text = '<|user|>What is 12+30?\n<|assistant|>42<eos>';
    const ids = tokenizer.encode(text);
    expect(tokenizer.decode(ids)).toBe(`<bos>${text}`);
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe('What is 12+30?\n42');
    expect(() => tokenizer.decode([5, 999])).toThrow(/id 999 at position 1 is outside the vocabulary/);
  });

  it('refuses a repeated alphabet character or a one-character special token', () => {
    expect(() => new CharTokenizer({ alphabet: 'abca' })).toThrow(/alphabet repeats "a"/);
    expect(() => new CharTokenizer({ extraSpecialTokens: ['#'] })).toThrow(
      /special token "#" must be longer than one character/,
    );
  });

  it('saved as tokenizer.json, loads through the HF wrapper with identical ids and text', () => {
    const folder = join(scratch, 'char-model');
    const config = createSmallConfig({
      vocabSize: tokenizer.vocabSize,
      hiddenSize: 16,
      numHeads: 2,
      numLayers: 1,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    const tensors = new Map(
      [...expectedTensorShapes(config)].map(([name, shape]) => [
        name,
        { shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) },
      ]),
    );
    saveCheckpoint(folder, { config, tensors, extraFiles: tokenizer.toHfFiles() });
    const hf = loadTokenizer(folder);
    checkTokenizerFitsModel(hf, loadCheckpoint(folder).config);
    expect([hf.vocabSize, hf.bosTokenId, hf.eosTokenId, hf.padTokenId]).toEqual([tokenizer.vocabSize, 1, 2, 0]);
    for (const text of [
      'hello world',
      '  two  spaces\nand a newline',
      '<|user|>7*6=?<|assistant|>42<eos>',
      'tab\there é',
    ]) {
      expect(hf.encode(text)).toEqual(tokenizer.encode(text));
      expect(hf.encode(text, { addSpecialTokens: false })).toEqual(tokenizer.encode(text, { addSpecialTokens: false }));
      const ids = tokenizer.encode(text, { addSpecialTokens: false }).filter((id) => id !== tokenizer.unkTokenId);
      expect(hf.decode(ids)).toBe(tokenizer.decode(ids));
      expect(hf.decode(ids, { skipSpecialTokens: true })).toBe(tokenizer.decode(ids, { skipSpecialTokens: true }));
    }
  });
});
