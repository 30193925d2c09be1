/**
 * Builds and saves the model of a vision-language run: an Idefics3 checkpoint folder (config.json
 * `model_type: idefics3`, its tokenizer and image-processor settings), or a small one from scratch
 * (`model.vision` + the `model.*` sizes of the language model, a character tokenizer with the
 * image-expansion tokens); and writes the run's checkpoints in the same Hugging Face layout, so a
 * run's `checkpoints/step-N` loads again as a `model.checkpoint`.
 *
 * Is not: the model (model/vision-language.ts), the prompt rendering with images (vision-run.ts).
 */
import { CharTokenizer } from '../model/char-tokenizer.js';
import { resolveStopTokenIds } from '../model/checkpoint.js';
import { createSmallConfig } from '../model/config.js';
import { createSmallVisionLanguageConfig } from '../model/vision/idefics3-config.js';
import { defaultImageProcessorConfig, type ImageProcessorConfig } from '../model/vision/image-processor.js';
import { checkTokenizerFitsModel, loadTokenizer, type TextTokenizer } from '../model/tokenizer.js';
import {
  loadVisionLanguageCheckpoint,
  readImageProcessorConfig,
  writeVisionLanguageFiles,
} from '../model/vision/vision-language-checkpoint.js';
import { VisionLanguageModel } from '../model/vision/vision-language.js';
import type { TrainerConfig } from '../config/config.js';
import type { VisionRun } from './vision-run.js';

/** The tokens the processor's expansion writes when images are not split (a from-scratch model's specials). */
export const SCRATCH_IMAGE_TOKENS = ['<image>', '<fake_token_around_image>', '<global-img>'];

export interface VisionModelParts {
  vision: VisionRun;
  tokenizer: TextTokenizer;
  tokenizerFiles: Record<string, string>;
  stopTokenIds: number[];
}

/** An Idefics3 checkpoint folder: the model, its tokenizer, its image processor (with `overrides`), its stop ids. */
export function loadVisionModel(
  directory: string,
  overrides: TrainerConfig['model']['imageProcessor'],
): VisionModelParts {
  const checkpoint = loadVisionLanguageCheckpoint(directory);
  const tokenizer = loadTokenizer(directory);
  checkTokenizerFitsModel(tokenizer, checkpoint.config.text, directory);
  const model = VisionLanguageModel.fromTensors(checkpoint.config, checkpoint.tensors);
  return {
    vision: { model, processor: { ...readImageProcessorConfig(directory), ...overrides } },
    tokenizer,
    tokenizerFiles: {},
    stopTokenIds: resolveStopTokenIds(checkpoint.config.text, checkpoint.generationConfig),
  };
}

/** A small vision-language model from scratch: `model.vision` around the `model.*` language model. */
export function createVisionModel(config: TrainerConfig, alphabet: string): VisionModelParts {
  const settings = config.model.vision!;
  const tokenizer = new CharTokenizer({ alphabet, extraSpecialTokens: SCRATCH_IMAGE_TOKENS });
  const text = createSmallConfig({
    vocabSize: tokenizer.vocabSize,
    hiddenSize: config.model.hiddenSize,
    numLayers: config.model.numLayers,
    numHeads: config.model.numHeads,
    numKeyValueHeads: config.model.numKeyValueHeads,
    intermediateSize: config.model.intermediateSize,
    bosTokenId: tokenizer.bosTokenId,
    eosTokenIds: [tokenizer.eosTokenId],
  });
  const modelConfig = createSmallVisionLanguageConfig({
    text,
    imageTokenId: tokenizer.encode('<image>', { addSpecialTokens: false })[0],
    hiddenSize: settings.hiddenSize,
    numLayers: settings.numLayers,
    numHeads: settings.numHeads,
    intermediateSize: settings.intermediateSize,
    imageSize: settings.imageSize,
    patchSize: settings.patchSize,
    scaleFactor: settings.scaleFactor,
  });
  const processor: ImageProcessorConfig = {
    ...defaultImageProcessorConfig,
    longestEdge: settings.imageSize,
    maxImageSize: settings.imageSize,
    doImageSplitting: false,
  };
  return {
    vision: { model: VisionLanguageModel.random(modelConfig, config.model.initSeed), processor },
    tokenizer,
    tokenizerFiles: tokenizer.toHfFiles(),
    stopTokenIds: [tokenizer.eosTokenId],
  };
}

/** The processor settings as HF's preprocessor_config.json writes them. */
function toHfImageProcessorConfig(processor: ImageProcessorConfig): Record<string, unknown> {
  return {
    image_processor_type: 'Idefics3ImageProcessor',
    processor_class: 'Idefics3Processor',
    do_resize: processor.doResize,
    size: { longest_edge: processor.longestEdge },
    resample: processor.resample,
    do_image_splitting: processor.doImageSplitting,
    max_image_size: { longest_edge: processor.maxImageSize },
    do_rescale: processor.doRescale,
    rescale_factor: processor.rescaleFactor,
    do_normalize: processor.doNormalize,
    image_mean: processor.imageMean,
    image_std: processor.imageStd,
  };
}

/**
 * Writes the model files of a checkpoint into `folder` (each fsynced; the run folder publishes it)
 * in the Idefics3 layout, with the run's processor settings as preprocessor_config.json (a
 * from-scratch model's, or the checkpoint's with `model.imageProcessor` applied) and its tokenizer.
 */
export function writeVisionModelFiles(
  folder: string,
  vision: VisionRun,
  extraFiles: Record<string, string>,
  sourceDirectory?: string,
): void {
  const processor = `${JSON.stringify(toHfImageProcessorConfig(vision.processor), null, 2)}\n`;
  writeVisionLanguageFiles(folder, {
    config: vision.model.config,
    tensors: vision.model.toStoredTensors(),
    sourceDir: sourceDirectory,
    extraFiles: { ...extraFiles, 'preprocessor_config.json': processor },
  });
}
