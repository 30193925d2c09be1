/**
 * A tiny character tokenizer for models trained from scratch on the built-in tasks: special tokens
 * first (ids 0..S-1: <pad>, <bos>, <eos>, <unk>, then any extras such as chat markers), then one id
 * per character of a fixed alphabet. Implements the same `TextTokenizer` interface as the HF wrapper,
 * and can write itself as tokenizer.json + tokenizer_config.json (a BPE model with no merges) so a
 * checkpoint trained with it loads in transformers and in `loadTokenizer`.
 *
 * It is not a general-purpose tokenizer: characters outside the alphabet become <unk>.
 */
import type { DecodeOptions, EncodeOptions, TextTokenizer } from './tokenizer.js';

/** Newline plus printable ASCII (space to tilde): enough for arithmetic, reversal and short text tasks. */
export const DEFAULT_ALPHABET = `\n${Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('')}`;

/** The alphabet and the special tokens beyond the four built-in ones. */
export interface CharTokenizerOptions {
  alphabet?: string;
  /** Extra special tokens (e.g. '<|user|>'), matched whole in the text and given ids after <unk>. */
  extraSpecialTokens?: string[];
  chatTemplate?: string | null;
}

const BUILT_IN_SPECIALS = ['<pad>', '<bos>', '<eos>', '<unk>'];

/** A fixed-alphabet character tokenizer with the TextTokenizer interface. */
export class CharTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly padTokenId = 0;
  readonly bosTokenId = 1;
  readonly eosTokenId = 2;
  readonly unkTokenId = 3;
  readonly bosToken = '<bos>';
  readonly eosToken = '<eos>';
  readonly specialTokenIds: ReadonlySet<number>;
  readonly chatTemplate: string | null;
  /** Every token string in id order: specials, then the alphabet's characters. */
  readonly tokens: readonly string[];
  private readonly specials: string[];
  private readonly idOfCharacter = new Map<string, number>();

  constructor(options: CharTokenizerOptions = {}) {
    const characters = Array.from(options.alphabet ?? DEFAULT_ALPHABET);
    this.specials = [...BUILT_IN_SPECIALS, ...(options.extraSpecialTokens ?? [])];
    if (new Set(this.specials).size !== this.specials.length)
      throw new Error(`char tokenizer: special tokens must be distinct, got ${JSON.stringify(this.specials)}`);
    for (const special of this.specials) {
      if (special.length < 2)
        throw new Error(`char tokenizer: special token ${JSON.stringify(special)} must be longer than one character`);
    }
    characters.forEach((character, index) => {
      if (this.idOfCharacter.has(character))
        throw new Error(`char tokenizer: alphabet repeats ${JSON.stringify(character)}`);
      this.idOfCharacter.set(character, this.specials.length + index);
    });
    this.tokens = [...this.specials, ...characters];
    this.vocabSize = this.tokens.length;
    this.specialTokenIds = new Set(this.specials.map((_, id) => id));
    this.chatTemplate = options.chatTemplate ?? null;
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids: number[] = (options.addSpecialTokens ?? true) ? [this.bosTokenId] : [];
    // Longest special first, so '<|user|>' wins over a hypothetical '<|u'.
    const specials = [...this.specials.entries()].sort((a, b) => b[1].length - a[1].length);
    let position = 0;
    while (position < text.length) {
      const special = specials.find(([, token]) => text.startsWith(token, position));
      if (special) {
        ids.push(special[0]);
        position += special[1].length;
        continue;
      }
      const character = String.fromCodePoint(text.codePointAt(position)!);
      ids.push(this.idOfCharacter.get(character) ?? this.unkTokenId);
      position += character.length;
    }
    return ids;
  }

  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    let text = '';
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      const token = this.tokens[id];
      if (token === undefined)
        throw new Error(`char tokenizer: id ${id} at position ${i} is outside the vocabulary (size ${this.vocabSize})`);
      if (options.skipSpecialTokens && this.specialTokenIds.has(id)) continue;
      text += token;
    }
    return text;
  }

  /** The tokenizer as Hugging Face files (file name → JSON text) for saveCheckpoint's `extraFiles`. */
  toHfFiles(): Record<string, string> {
    const added = this.specials.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    }));
    const tokenizerJson = {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: null,
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<bos>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [
          { SpecialToken: { id: '<bos>', type_id: 0 } },
          { Sequence: { id: 'A', type_id: 0 } },
          { Sequence: { id: 'B', type_id: 1 } },
        ],
        special_tokens: { '<bos>': { id: '<bos>', ids: [this.bosTokenId], tokens: ['<bos>'] } },
      },
      decoder: { type: 'Fuse' },
      // A BPE model without merges splits text into single characters, which is exactly this tokenizer.
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: '<unk>',
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab: Object.fromEntries(this.tokens.map((token, id) => [token, id])),
        merges: [],
      },
    };
    const tokenizerConfig: Record<string, unknown> = {
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: '<bos>',
      eos_token: '<eos>',
      pad_token: '<pad>',
      unk_token: '<unk>',
      clean_up_tokenization_spaces: false,
      model_max_length: 1_000_000,
    };
    if (this.chatTemplate !== null) tokenizerConfig.chat_template = this.chatTemplate;
    return {
      'tokenizer.json': `${JSON.stringify(tokenizerJson, null, 2)}\n`,
      'tokenizer_config.json': `${JSON.stringify(tokenizerConfig, null, 2)}\n`,
    };
  }
}
