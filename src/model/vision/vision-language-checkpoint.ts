/**
 * Loading and saving an Idefics3 (SmolVLM) checkpoint folder in the Hugging Face layout: config.json
 * (model_type idefics3), model.safetensors (or sharded) with Idefics3ForConditionalGeneration's names,
 * generation_config.json, and the tokenizer and processor files, copied through untouched. Every
 * tensor is checked by name and shape against the config before any compute.
 *
 * Is not: the model (vision-language.ts) or the text-only checkpoint (checkpoint.ts, whose checks the
 * language model's tensors reuse under their Transformer names).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { TOKENIZER_FILES, checkTensors, publishFolder } from '../checkpoint.js';
import { makeDirectory, syncDirectory, writeFileDurably } from '../durable-files.js';
import { loadIdefics3Config, toHfIdefics3Config, type VisionLanguageConfig } from './idefics3-config.js';
import { readJsonObject } from '../json-file.js';
import { type StoredTensor, encodeSafetensors, readSafetensorsFolder } from '../safetensors.js';
import { VisionLanguageModel, expectedVisionLanguageShapes, hfNameToText, textNameToHf } from './vision-language.js';
import {
  defaultImageProcessorConfig,
  parseImageProcessorConfig,
  type ImageProcessorConfig,
} from './image-processor.js';

/** Processor files a SmolVLM folder carries beside the tokenizer's; saving copies whichever exist. */
export const PROCESSOR_FILES = ['preprocessor_config.json', 'processor_config.json', 'chat_template.json'];

export interface VisionLanguageCheckpoint {
  config: VisionLanguageConfig;
  /** Float32 tensors by HF name, in checkpoint order. */
  tensors: Map<string, StoredTensor>;
  generationConfig: Record<string, unknown> | null;
  /** Absolute paths of the files that were read. */
  files: string[];
}

/**
 * Checks tensors (HF names) against the config, returning them in checkpoint order. The language
 * model's go through checkpoint.ts's checkTensors (tied lm_head aliases included); `fileOf` names a
 * tensor's file in errors.
 */
export function checkVisionLanguageTensors(
  config: VisionLanguageConfig,
  tensors: Map<string, StoredTensor>,
  fileOf: (name: string) => string,
): Map<string, StoredTensor> {
  const text = new Map<string, StoredTensor>();
  for (const [name, stored] of tensors) {
    const textName = hfNameToText(name);
    if (textName) text.set(textName, stored);
  }
  const checkedText = checkTensors(config.text, text, (name) => fileOf(textNameToHf(name)));
  const ordered = new Map<string, StoredTensor>();
  const expected = expectedVisionLanguageShapes(config);
  for (const [name, shape] of expected) {
    const textName = hfNameToText(name);
    const stored = textName ? checkedText.get(textName) : tensors.get(name);
    if (!stored) throw new Error(`${fileOf(name)}: missing tensor "${name}" (expected shape [${shape.join(', ')}])`);
    if (stored.shape.length !== shape.length || stored.shape.some((dim, i) => dim !== shape[i])) {
      throw new Error(
        `${fileOf(name)}: tensor "${name}" has shape [${stored.shape.join(', ')}], expected [${shape.join(', ')}] from the config`,
      );
    }
    ordered.set(name, stored);
  }
  const unexpected = [...tensors.keys()].filter((name) => !expected.has(name) && !hfNameToText(name));
  if (unexpected.length > 0) {
    throw new Error(
      `${fileOf(unexpected[0])}: ${unexpected.length} tensor(s) not used by an idefics3 model with this config: ${unexpected
        .slice(0, 5)
        .map((name) => `"${name}"`)
        .join(', ')} (does config.json match the weights?)`,
    );
  }
  return ordered;
}

/** Loads an idefics3 checkpoint folder, checking every tensor's name and shape against its config.json. */
export function loadVisionLanguageCheckpoint(directory: string): VisionLanguageCheckpoint {
  const root = resolve(directory);
  if (!existsSync(root)) throw new Error(`${root}: checkpoint folder does not exist`);
  const configFile = join(root, 'config.json');
  if (!existsSync(configFile)) throw new Error(`${configFile}: missing (a checkpoint folder needs config.json)`);
  const config = loadIdefics3Config(configFile);
  const { tensors, tensorFiles } = readSafetensorsFolder(root);
  const weightFiles = [...new Set(tensorFiles.values())];
  const fileOf = (name: string): string =>
    tensorFiles.get(name) ?? (weightFiles.length === 1 ? weightFiles[0] : join(root, 'model.safetensors.index.json'));
  const checked = checkVisionLanguageTensors(config, tensors, fileOf);
  const generationFile = join(root, 'generation_config.json');
  const generationConfig = existsSync(generationFile) ? readJsonObject(generationFile) : null;
  const files = [configFile, ...weightFiles, ...(generationConfig ? [generationFile] : [])];
  for (const name of [...TOKENIZER_FILES, ...PROCESSOR_FILES])
    if (existsSync(join(root, name))) files.push(join(root, name));
  return { config, tensors: checked, generationConfig, files };
}

/** The model of an idefics3 checkpoint folder (vision tower frozen). */
export function loadVisionLanguageModel(directory: string): VisionLanguageModel {
  const { config, tensors } = loadVisionLanguageCheckpoint(directory);
  return VisionLanguageModel.fromTensors(config, tensors);
}

export interface SaveVisionLanguageInput {
  config: VisionLanguageConfig;
  /** HF names (VisionLanguageModel.toStoredTensors()). */
  tensors: Map<string, StoredTensor>;
  generationConfig?: Record<string, unknown> | null;
  /** Folder whose tokenizer, processor and generation files are copied through. */
  sourceDir?: string;
  /** Further files to write, name → text; they win over copied ones. */
  extraFiles?: Record<string, string>;
}

/** Writes the checkpoint files into an existing folder, each fsynced, without publishing it. */
export function writeVisionLanguageFiles(folder: string, input: SaveVisionLanguageInput, target = folder): void {
  const ordered = checkVisionLanguageTensors(
    input.config,
    input.tensors,
    () => `saveVisionLanguageCheckpoint(${target})`,
  );
  writeFileDurably(join(folder, 'config.json'), `${JSON.stringify(toHfIdefics3Config(input.config), null, 2)}\n`);
  writeFileDurably(
    join(folder, 'model.safetensors'),
    encodeSafetensors(ordered, { dtype: 'F32', metadata: { format: 'pt' } }),
  );
  const { text } = input.config;
  const eos =
    text.eosTokenIds.length === 0 ? null : text.eosTokenIds.length === 1 ? text.eosTokenIds[0] : text.eosTokenIds;
  const sourceGeneration = input.sourceDir ? join(input.sourceDir, 'generation_config.json') : null;
  if (input.generationConfig)
    writeFileDurably(join(folder, 'generation_config.json'), `${JSON.stringify(input.generationConfig, null, 2)}\n`);
  else if (sourceGeneration && existsSync(sourceGeneration))
    writeFileDurably(join(folder, 'generation_config.json'), readFileSync(sourceGeneration));
  else
    writeFileDurably(
      join(folder, 'generation_config.json'),
      `${JSON.stringify({ bos_token_id: text.bosTokenId, eos_token_id: eos }, null, 2)}\n`,
    );
  if (input.sourceDir) {
    for (const name of [...TOKENIZER_FILES, ...PROCESSOR_FILES]) {
      const source = join(input.sourceDir, name);
      if (existsSync(source)) writeFileDurably(join(folder, name), readFileSync(source));
    }
  }
  for (const [name, content] of Object.entries(input.extraFiles ?? {})) {
    if (name !== basename(name) || name.startsWith('.'))
      throw new Error(
        `saveVisionLanguageCheckpoint: extra file name ${JSON.stringify(name)} must be a plain file name`,
      );
    writeFileDurably(join(folder, name), content);
  }
}

/** Writes a checkpoint folder transformers loads as Idefics3ForConditionalGeneration, atomically (as saveCheckpoint). */
export function saveVisionLanguageCheckpoint(directory: string, input: SaveVisionLanguageInput): void {
  const target = resolve(directory);
  checkVisionLanguageTensors(input.config, input.tensors, () => `saveVisionLanguageCheckpoint(${target})`);
  const stamp = `${process.pid}-${Date.now()}`;
  const temporary = join(dirname(target), `.${basename(target)}.tmp-${stamp}`);
  makeDirectory(temporary);
  try {
    writeVisionLanguageFiles(temporary, input, target);
    syncDirectory(temporary);
    publishFolder(temporary, target, stamp);
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Reads a checkpoint folder's image-processor settings: `preprocessor_config.json`, else
 * `processor_config.json` (its `image_processor` member when it has one); HF defaults without either.
 */
export function readImageProcessorConfig(directory: string): ImageProcessorConfig {
  for (const name of ['preprocessor_config.json', 'processor_config.json']) {
    const file = join(directory, name);
    if (!existsSync(file)) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(`${file}: invalid JSON (${(error as Error).message})`);
    }
    const nested = (raw as Record<string, unknown> | null)?.image_processor;
    if (name === 'processor_config.json' && typeof nested === 'object' && nested !== null)
      return parseImageProcessorConfig(nested, `${file} image_processor`);
    if (name === 'preprocessor_config.json' || 'size' in (raw as object) || 'max_image_size' in (raw as object))
      return parseImageProcessorConfig(raw, file);
  }
  return { ...defaultImageProcessorConfig };
}
