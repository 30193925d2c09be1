/**
 * A checkpoint's model files as bytes, free of Node so that a browser tab can save one: config.json
 * (transformers' names), model.safetensors (F32, metadata format "pt", which transformers requires),
 * generation_config.json and any tokenizer files given as text, exactly as checkpoint.ts writes
 * them into a run folder's checkpoint. Also the name-and-shape check every saved or loaded checkpoint
 * goes through.
 *
 * Is not: reading or writing files (checkpoint.ts), nor the trainer's optimiser state.
 */
import { expectedTensorShapes, type ModelConfig } from './config.js';
import { toHfConfig } from './config-hf.js';
import type { StoredTensor } from './safetensors.js';
import { encodeSafetensorsBytes } from './safetensors-encode.js';

// Buffers some older exports carry that are recomputed from the config, never learned.
const IGNORED_TENSOR_PATTERN = /\.rotary_emb\.inv_freq$/;

/**
 * Checks tensors against the config and returns them in the expected order; `fileOf` names where each
 * tensor came from for the error message. For tied configs the shared matrix is returned as
 * model.embed_tokens.weight whichever name stored it, and a duplicate lm_head.weight is dropped.
 */
export function checkTensors(
  config: ModelConfig,
  tensors: Map<string, StoredTensor>,
  fileOf: (name: string) => string,
): Map<string, StoredTensor> {
  const expected = expectedTensorShapes(config);
  const ordered = new Map<string, StoredTensor>();
  for (const [name, shape] of expected) {
    // A tied matrix may be stored under either name (transformers 4.41 kept lm_head.weight for TinyStories).
    const tiedAlias =
      config.tieWordEmbeddings && name === 'model.embed_tokens.weight' ? tensors.get('lm_head.weight') : undefined;
    const tensor = tensors.get(name) ?? tiedAlias;
    if (!tensor) throw new Error(`${fileOf(name)}: missing tensor "${name}" (expected shape [${shape.join(', ')}])`);
    const same = tensor.shape.length === shape.length && tensor.shape.every((d, i) => d === shape[i]);
    if (!same) {
      throw new Error(
        `${fileOf(name)}: tensor "${name}" has shape [${tensor.shape.join(', ')}], expected [${shape.join(', ')}] from the config`,
      );
    }
    ordered.set(name, tensor);
  }
  const unexpected = [...tensors.keys()].filter(
    (name) =>
      !expected.has(name) &&
      !IGNORED_TENSOR_PATTERN.test(name) &&
      !(config.tieWordEmbeddings && name === 'lm_head.weight'),
  );
  if (unexpected.length > 0) {
    const list = unexpected
      .slice(0, 5)
      .map((name) => `"${name}"`)
      .join(', ');
    throw new Error(
      `${fileOf(unexpected[0])}: ${unexpected.length} tensor(s) not used by a ${config.modelType} model with this config: ${list}${unexpected.length > 5 ? ', ...' : ''} (does config.json match the weights?)`,
    );
  }
  return ordered;
}

/** config.json's text: the config under transformers' names. */
export function hfConfigText(config: ModelConfig): string {
  return `${JSON.stringify(toHfConfig(config), null, 2)}\n`;
}

/** generation_config.json's text when none is given: the config's BOS and EOS ids. */
export function defaultGenerationConfigText(config: ModelConfig): string {
  const eos = config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds;
  const generation = { bos_token_id: config.bosTokenId, eos_token_id: config.eosTokenIds.length === 0 ? null : eos };
  return `${JSON.stringify(generation, null, 2)}\n`;
}

/** model.safetensors' bytes for checked tensors (checkTensors' order), F32 with metadata format "pt". */
export function encodeCheckpointTensors(ordered: Map<string, StoredTensor>): Uint8Array {
  return encodeSafetensorsBytes(ordered, { dtype: 'F32', metadata: { format: 'pt' } });
}

/**
 * The files of a checkpoint folder, name → bytes, as writeCheckpointFiles writes them for a run that
 * has no source folder: config.json, model.safetensors, generation_config.json, then `extraFiles`
 * (e.g. CharTokenizer.toHfFiles()). Tensors are checked against the config first.
 */
export function checkpointFiles(input: {
  config: ModelConfig;
  tensors: Map<string, StoredTensor>;
  extraFiles?: Record<string, string>;
}): Map<string, Uint8Array> {
  const ordered = checkTensors(input.config, input.tensors, () => 'checkpoint');
  const encoder = new TextEncoder();
  const files = new Map<string, Uint8Array>([
    ['config.json', encoder.encode(hfConfigText(input.config))],
    ['model.safetensors', encodeCheckpointTensors(ordered)],
    ['generation_config.json', encoder.encode(defaultGenerationConfigText(input.config))],
  ]);
  for (const [name, text] of Object.entries(input.extraFiles ?? {})) files.set(name, encoder.encode(text));
  return files;
}
