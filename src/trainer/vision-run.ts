/**
 * What a vision-language run adds to the text trainer, in one place: the model (an Idefics3
 * checkpoint, or a small one from scratch per `model.vision`), its image processor settings, the
 * refusal of what does not combine with images yet, and a row's prompt rendered with its images —
 * decoded, processed (resize, tiles, normalise), run once through the frozen vision tower, and the
 * prompt's `<image>` placeholders expanded by the processor's rules.
 *
 * Is not: the model (model/vision-language.ts), the processor's rules (model/image-processor.ts,
 * model/image-prompt.ts) or the loops; those take a `SequenceImages` and know nothing else of images.
 */
import type { Example } from '../data/task.js';
import { loadImage } from '../model/vision/image-decode.js';
import { preprocessImage, type DecodedImage, type ImageProcessorConfig } from '../model/vision/image-processor.js';
import { expandPromptImages } from '../model/vision/image-prompt.js';
import type { VisionLanguageModel } from '../model/vision/vision-language.js';
import type { BoundAlgorithm } from '../config/algorithm.js';
import type { TrainerConfig } from '../config/config.js';
import { renderDemonstration, renderPrompt, type PromptFormat } from '../config/prompt-format.js';
import type { SequenceImages } from '../rollout/rollout.js';
import type { TokenSequence } from './completion-logprobs.js';

/** The vision side of a run: the model and how its images are processed. */
export interface VisionRun {
  model: VisionLanguageModel;
  processor: ImageProcessorConfig;
}

/** A prompt as the model sees it, with its images' tower outputs and the decoded images (for samples.jsonl). */
export interface RenderedPrompt {
  text: string;
  ids: number[];
  images?: SequenceImages;
  pictures?: DecodedImage[];
}

/**
 * Settings that do not combine with images yet, each refused before compute with one sentence
 * naming the field (docs/vision.md says why).
 */
export function refuseWithImages(
  config: TrainerConfig,
  bound: BoundAlgorithm,
  recipe: { environment?: unknown },
): void {
  const problems: string[] = [];
  if (config.agent || recipe.environment)
    problems.push('- agent: multi-turn episodes with images are not supported yet; train single-turn');
  if (config.rollout.engine === 'openai')
    problems.push("- rollout.engine: the 'openai' engine is text-only here; use 'local' with a vision-language model");
  if (config.lora)
    problems.push('- lora: LoRA is not wired to the vision-language model yet; set lora to null (full fine-tuning)');
  if (bound.tracker)
    problems.push(
      `- algorithm.advantage: ${config.algorithm.advantage} keeps a value tracker, which does not keep images yet; choose another estimator`,
    );
  if (config.sft.packLength > 0)
    problems.push('- sft.packLength: packing is not supported with images yet; set it to 0');
  if (config.algorithm.referenceSync)
    problems.push(
      '- algorithm.referenceSync: moving the reference is not built for a vision-language model yet; set it to null',
    );
  if (problems.length > 0)
    throw new Error(`invalid config (a vision-language model is being trained):\n${problems.join('\n')}`);
}

/** Whether a value is an in-memory RGB image (a task's own, e.g. shape-counting), not a source to decode. */
function isDecoded(value: unknown): value is DecodedImage {
  const image = value as DecodedImage;
  return typeof value === 'object' && value !== null && image.data instanceof Uint8Array && image.channels === 3;
}

/** The row's `images` decoded: in-memory images as they are, sources (paths, base64, data: URLs, bytes) through loadImage. */
export async function exampleImages(example: Example, where: string): Promise<DecodedImage[]> {
  const list = example.images ?? [];
  if (typeof example.imageOrigin === 'string') where = `${where} (${example.imageOrigin})`;
  return Promise.all(
    list.map((value, k) => {
      if (isDecoded(value)) {
        if (value.data.length !== value.width * value.height * 3)
          throw new Error(
            `${where}, image ${k}: ${value.data.length} bytes for a ${value.width}×${value.height} RGB image`,
          );
        return value;
      }
      return loadImage(value as string | Uint8Array, `${where}, image ${k}`);
    }),
  );
}

/**
 * Decodes every image the run will read, before any compute: a missing or undecodable image stops
 * the run at its start, naming its phase, example and source row, instead of some steps into it.
 */
export async function checkRunImages(sets: readonly [phase: string, examples: readonly Example[]][]): Promise<void> {
  for (const [phase, examples] of sets)
    for (let i = 0; i < examples.length; i++) await exampleImages(examples[i], `${phase} example ${i}`);
}

/**
 * The row's images processed and run through the frozen tower once (bound to the policy's
 * connector), and the function that expands the prompt's placeholders to match them. Null when
 * the row has no images.
 */
async function prepareImages(
  vision: VisionRun,
  example: Example,
  where: string,
): Promise<{ images: SequenceImages; expand: (text: string) => string; pictures: DecodedImage[] } | null> {
  const pictures = await exampleImages(example, where);
  if (pictures.length === 0) return null;
  const processed = pictures.map((picture) => preprocessImage(picture, vision.processor));
  const imageCount = processed.reduce((total, p) => total + p.imageCount, 0);
  const pixelValues = new Float32Array(processed.reduce((total, p) => total + p.pixelValues.length, 0));
  processed.reduce((offset, p) => (pixelValues.set(p.pixelValues, offset), offset + p.pixelValues.length), 0);
  const { model } = vision;
  const layouts = processed.map(({ rows, cols }) => ({ rows, cols }));
  const expand = (text: string): string => {
    try {
      return expandPromptImages(text, layouts, model.config.tokensPerImage);
    } catch (error) {
      throw new Error(`${where}: ${(error as Error).message}`);
    }
  };
  const images: SequenceImages = {
    tokenId: model.config.imageTokenId,
    visionOutputs: model.visionOutputs(pixelValues, imageCount),
    connect: (outputs) => model.connect(outputs),
  };
  return { images, expand, pictures };
}

/** The row's prompt as in `renderPrompt`, with its images (a text-only run or row: as renderPrompt). */
export async function renderRunPrompt(
  format: PromptFormat,
  vision: VisionRun | null,
  example: Example,
  where: string,
): Promise<RenderedPrompt> {
  const prepared = vision ? await prepareImages(vision, example, where) : null;
  if (!prepared) {
    if (!vision && (example.images?.length ?? 0) > 0)
      throw new Error(
        `${where} carries images but the model is text-only; train a vision-language model (an idefics3 checkpoint, or model.vision for one from scratch)`,
      );
    return renderPrompt(format, example);
  }
  return { ...renderPrompt(format, example, prepared.expand), images: prepared.images, pictures: prepared.pictures };
}

/** An SFT pair as in `renderDemonstration`, with the row's images. */
export async function renderRunDemonstration(
  format: PromptFormat,
  vision: VisionRun | null,
  example: Example,
  completion: string,
  endTokenId: number,
  where: string,
): Promise<TokenSequence> {
  const prepared = vision ? await prepareImages(vision, example, where) : null;
  if (!prepared) return renderDemonstration(format, example, completion, endTokenId);
  return { ...renderDemonstration(format, example, completion, endTokenId, prepared.expand), images: prepared.images };
}

/** The rows with their images read through `model`'s connector (the KL reference's), each distinct SequenceImages rebound once. */
export function withConnector<S extends TokenSequence>(rows: readonly S[], model: VisionLanguageModel): S[] {
  const rebound = new Map<SequenceImages, SequenceImages>();
  return rows.map((row) => {
    if (!row.images) return row;
    if (!rebound.has(row.images))
      rebound.set(row.images, { ...row.images, connect: (outputs) => model.connect(outputs) });
    return { ...row, images: rebound.get(row.images) };
  });
}
