/**
 * The `TextTokenizer` interface the rest of the library codes against, and its main implementation:
 * a wrapper over @huggingface/tokenizers built from a checkpoint's parsed tokenizer.json +
 * tokenizer_config.json (special tokens, BOS handling, the chat template string). Also the check
 * that a tokenizer fits a model's embedding table. Free of Node, so a browser tab builds the
 * tokenizer of a picked model folder with it.
 *
 * Is not: reading a folder (tokenizer.ts: loadTokenizer, findChatTemplate), rendering chat
 * templates (chat-template.ts), or a tokenizer itself: the BPE/Unigram/WordPiece work is the library's.
 */
import { Tokenizer } from '@huggingface/tokenizers';
import type { ModelConfig } from './config.js';

/** Options for encoding: whether to add the tokenizer's special tokens (e.g. BOS) around the text. */
export interface EncodeOptions {
  addSpecialTokens?: boolean;
}

/** Options for decoding: whether to drop special tokens (BOS, EOS, chat markers) from the text. */
export interface DecodeOptions {
  skipSpecialTokens?: boolean;
}

/** What the library needs from any tokenizer, HF-backed or the built-in character one. */
export interface TextTokenizer {
  /** One more than the largest token id the tokenizer can produce. */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  /** The BOS/EOS strings, as chat templates reference them. */
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  /** Ids of all special tokens (skipped by `decode(..., { skipSpecialTokens: true })`). */
  readonly specialTokenIds: ReadonlySet<number>;
  /** The Jinja chat template, or null when the tokenizer has none. */
  readonly chatTemplate: string | null;
  /** Text to ids; `addSpecialTokens` defaults to true, as in transformers. */
  encode(text: string, options?: EncodeOptions): number[];
  /** Ids to text; `skipSpecialTokens` defaults to false, as in transformers. */
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string;
}

/** tokenizer_config.json fields may be a plain string or an AddedToken-like `{ content }` object. */
function tokenString(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return null;
}

/** A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) behind the TextTokenizer interface. */
export class HfTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly specialTokenIds: ReadonlySet<number>;
  readonly chatTemplate: string | null;
  private readonly tokenizer: Tokenizer;

  /** Builds from the parsed JSON files; `source` names the folder in errors. */
  constructor(
    tokenizerJson: Record<string, unknown>,
    tokenizerConfig: Record<string, unknown>,
    chatTemplate: string | null,
    source: string,
  ) {
    try {
      this.tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    } catch (error) {
      throw new Error(`${source}: @huggingface/tokenizers could not build the tokenizer (${(error as Error).message})`);
    }
    const idOf = (field: string): number | null => {
      const token = tokenString(tokenizerConfig[field]);
      if (token === null) return null;
      const id = this.tokenizer.token_to_id(token);
      if (id === undefined)
        throw new Error(
          `${source}: tokenizer_config.json field "${field}" is ${JSON.stringify(token)}, which is not in the vocabulary`,
        );
      return id;
    };
    this.bosToken = tokenString(tokenizerConfig.bos_token);
    this.eosToken = tokenString(tokenizerConfig.eos_token);
    this.bosTokenId = idOf('bos_token');
    this.eosTokenId = idOf('eos_token');
    this.padTokenId = idOf('pad_token');
    let largest = -1;
    for (const id of this.tokenizer.get_vocab(true).values()) largest = Math.max(largest, id);
    this.vocabSize = largest + 1;
    const special = new Set<number>();
    for (const [id, token] of this.tokenizer.get_added_tokens_decoder()) if (token.special) special.add(id);
    this.specialTokenIds = special;
    this.chatTemplate = chatTemplate;
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    return this.tokenizer.decode(Array.from(ids), { skip_special_tokens: options.skipSpecialTokens ?? false });
  }
}

/** Throws a clear error when the tokenizer can produce ids the model has no embedding row for. */
export function checkTokenizerFitsModel(tokenizer: TextTokenizer, config: ModelConfig, source = 'tokenizer'): void {
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new Error(
      `${source}: the tokenizer has ${tokenizer.vocabSize} tokens (ids up to ${tokenizer.vocabSize - 1}) but the model's config.json vocab_size is ${config.vocabSize}; the tokenizer does not belong to this model`,
    );
  }
}
