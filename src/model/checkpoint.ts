/**
 * Loading and saving a model checkpoint in the Hugging Face folder layout: config.json,
 * model.safetensors (or a sharded model.safetensors.index.json), generation_config.json and the
 * tokenizer files, which are copied through untouched. Every tensor the config implies is checked by
 * name and shape before any compute starts.
 *
 * This module does not build the model or run it; it hands the forward pass a map of named float32
 * arrays with the HF names (model.layers.N.self_attn.q_proj.weight, ...), weights as [out, in].
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { expectedTensorShapes, parseModelConfig, type ModelConfig } from './config.js';
import { makeDirectory, removeTree, renamePath, syncDirectory, writeFileDurably } from './durable-files.js';
import { readJsonObject } from './json-file.js';
import {
  checkTensors,
  defaultGenerationConfigText,
  encodeCheckpointTensors,
  hfConfigText,
} from './checkpoint-files.js';
import { type StoredTensor, readSafetensorsFolder } from './safetensors.js';

/** Re-exported where it was first defined; it lives in config.ts so the model needs no file code. */
export { expectedTensorShapes, checkTensors };

/** A checkpoint in memory: config, named float32 tensors, generation defaults and the files it came from. */
export interface Checkpoint {
  config: ModelConfig;
  tensors: Map<string, StoredTensor>;
  /** The parsed generation_config.json, or null when the folder has none. */
  generationConfig: Record<string, unknown> | null;
  /** Absolute paths of the files that were read. */
  files: string[];
}

/** Tokenizer and chat-template files a checkpoint folder may hold; saving copies whichever exist. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'tokenizer.model',
  'vocab.json',
  'merges.txt',
  'added_tokens.json',
  'chat_template.jinja',
  'chat_template.json',
];

/** Reads and parses a config.json file. */
export function loadModelConfig(file: string): ModelConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(
      `${file}: cannot read the model config (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not valid JSON (${(error as Error).message})`);
  }
  return parseModelConfig(json, file);
}

/** Loads a Hugging Face checkpoint folder, checking every tensor's name and shape against its config.json. */
export function loadCheckpoint(directory: string): Checkpoint {
  const root = resolve(directory);
  if (!existsSync(root)) throw new Error(`${root}: checkpoint folder does not exist`);
  const configFile = join(root, 'config.json');
  if (!existsSync(configFile)) {
    // A LoRA run's checkpoint is an adapter folder: it applies on top of its base model.
    if (existsSync(join(root, 'adapter_config.json')))
      throw new Error(
        `${root} is a LoRA adapter folder (adapter_config.json, no config.json): give its base model as the model and this folder as --adapter (grpo eval, generate, score, serve), or fold it in with grpo merge`,
      );
    throw new Error(`${configFile}: missing (a checkpoint folder needs config.json)`);
  }
  const config = loadModelConfig(configFile);
  const { tensors, tensorFiles } = readSafetensorsFolder(root);
  const weightFiles = [...new Set(tensorFiles.values())];
  const fileOf = (name: string): string =>
    tensorFiles.get(name) ?? (weightFiles.length === 1 ? weightFiles[0] : join(root, 'model.safetensors.index.json'));
  const checked = checkTensors(config, tensors, fileOf);
  const generationFile = join(root, 'generation_config.json');
  const generationConfig = existsSync(generationFile) ? readJsonObject(generationFile) : null;
  const files = [configFile, ...weightFiles, ...(generationConfig ? [generationFile] : [])];
  for (const name of TOKENIZER_FILES) if (existsSync(join(root, name))) files.push(join(root, name));
  return { config, tensors: checked, generationConfig, files };
}

/**
 * The ids that end generation: generation_config.json's eos_token_id (a number or a list, e.g. Llama 3's
 * <|eot_id|> beside <|end_of_text|>) together with config.json's, without duplicates.
 */
export function resolveStopTokenIds(config: ModelConfig, generationConfig: Record<string, unknown> | null): number[] {
  const fromGeneration = generationConfig?.eos_token_id;
  const list = Array.isArray(fromGeneration)
    ? fromGeneration
    : fromGeneration === undefined || fromGeneration === null
      ? []
      : [fromGeneration];
  for (const id of list) {
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= config.vocabSize) {
      throw new Error(
        `generation_config.json: field "eos_token_id" has ${JSON.stringify(id)}, not a token id below vocab_size ${config.vocabSize}`,
      );
    }
  }
  return [...new Set([...(list as number[]), ...config.eosTokenIds])];
}

/** What saveCheckpoint writes: the config, the tensors, optional generation defaults and a folder to copy tokenizer files from. */
export interface SaveCheckpointInput {
  config: ModelConfig;
  tensors: Map<string, StoredTensor>;
  generationConfig?: Record<string, unknown> | null;
  /** Folder whose tokenizer files (and generation_config.json, if none is given) are copied through. */
  sourceDir?: string;
  /** Further files to write, name → text (e.g. CharTokenizer.toHfFiles()); they win over copied ones. */
  extraFiles?: Record<string, string>;
}

/**
 * Writes a checkpoint folder that transformers loads as it is. The folder is built beside the target
 * (`.<name>.tmp-<pid>-<time>`), every file and the folder fsynced, then published by
 * `publishFolder`, so a crash leaves either the old folder or the new one, never half of one.
 */
export function saveCheckpoint(directory: string, input: SaveCheckpointInput): void {
  const target = resolve(directory);
  checkTensors(input.config, input.tensors, () => `saveCheckpoint(${target})`); // refuse before creating anything
  const stamp = `${process.pid}-${Date.now()}`;
  const temporary = join(dirname(target), `.${basename(target)}.tmp-${stamp}`);
  makeDirectory(temporary);
  try {
    writeCheckpointFiles(temporary, input, target);
    syncDirectory(temporary);
    publishFolder(temporary, target, stamp);
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Writes the checkpoint files into an existing folder, each fsynced; it does not publish them.
 * Callers that add files of their own (the trainer's optimiser state) build on this. `target`, the
 * folder's name once published, is what error messages name.
 */
export function writeCheckpointFiles(folder: string, input: SaveCheckpointInput, target = folder): void {
  const ordered = checkTensors(input.config, input.tensors, () => `saveCheckpoint(${target})`);
  writeFileDurably(join(folder, 'config.json'), hfConfigText(input.config));
  // transformers refuses safetensors files whose metadata lacks format "pt".
  writeFileDurably(join(folder, 'model.safetensors'), encodeCheckpointTensors(ordered));
  const sourceGeneration = input.sourceDir ? join(input.sourceDir, 'generation_config.json') : null;
  if (input.generationConfig) {
    writeFileDurably(join(folder, 'generation_config.json'), `${JSON.stringify(input.generationConfig, null, 2)}\n`);
  } else if (sourceGeneration && existsSync(sourceGeneration)) {
    writeFileDurably(join(folder, 'generation_config.json'), readFileSync(sourceGeneration));
  } else {
    writeFileDurably(join(folder, 'generation_config.json'), defaultGenerationConfigText(input.config));
  }
  if (input.sourceDir) {
    for (const name of TOKENIZER_FILES) {
      // Read and rewritten rather than copyFileSync, so the copy is fsynced like everything else.
      const source = join(input.sourceDir, name);
      if (existsSync(source)) writeFileDurably(join(folder, name), readFileSync(source));
    }
  }
  for (const [name, text] of Object.entries(input.extraFiles ?? {})) {
    if (name !== basename(name) || name.startsWith('.'))
      throw new Error(`saveCheckpoint: extra file name ${JSON.stringify(name)} must be a plain file name`);
    writeFileDurably(join(folder, name), text);
  }
}

/**
 * Moves a finished (fsynced) folder onto `target`. rename() cannot replace a non-empty folder, so an
 * existing target is first renamed aside to `.<name>.old-<stamp>`, the new folder renamed in, and
 * the aside one removed; each rename is atomic, and the parent folder is fsynced before the aside
 * copy goes. A kill between the two renames leaves no `<name>` but a complete aside folder, which
 * `RunFolder` renames back when it recovers.
 */
export function publishFolder(finished: string, target: string, stamp = `${process.pid}-${Date.now()}`): void {
  const parent = dirname(target);
  if (!existsSync(target)) {
    renamePath(finished, target);
    syncDirectory(parent);
    return;
  }
  const aside = join(parent, `.${basename(target)}.old-${stamp}`);
  renamePath(target, aside);
  renamePath(finished, target);
  syncDirectory(parent);
  removeTree(aside);
}
