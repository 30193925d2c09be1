/**
 * `model.vision`: the vision side of a vision-language model trained from scratch (a SigLIP tower
 * and the Idefics3 connector around the from-scratch language model of `model.hiddenSize` …).
 * null = a text-only model. A checkpoint whose config.json says `model_type: idefics3` brings its
 * own vision config, so this section is for from-scratch models only.
 *
 * Is not: the model (model/vision-language.ts) or the image processor's rules; from scratch, the
 * processor resizes each image to `imageSize`, does not split it, and normalises to [−1, 1].
 */
import { z } from 'zod';

export const visionSchema = z
  .object({
    imageSize: z.number().int().min(2).max(1024).default(32).describe('Side of the image the tower sees.'),
    patchSize: z.number().int().min(1).max(64).default(8).describe('Side of a patch (divides imageSize).'),
    scaleFactor: z
      .number()
      .int()
      .min(1)
      .max(8)
      .default(2)
      .describe("The connector's pixel shuffle: scaleFactor² patches become one image token."),
    hiddenSize: z.number().int().min(1).max(4096).default(32).describe('Width of the vision tower.'),
    numLayers: z.number().int().min(1).max(64).default(1).describe('Encoder layers of the vision tower.'),
    numHeads: z.number().int().min(1).max(64).default(2).describe('Attention heads of the vision tower.'),
    intermediateSize: z
      .number()
      .int()
      .min(1)
      .max(16384)
      .optional()
      .describe("Width of the tower's MLP; default 4 × hiddenSize."),
  })
  .strict();

export type VisionSettings = z.infer<typeof visionSchema>;

/** `model.imageProcessor`: overrides of a checkpoint's preprocessor_config.json (e.g. smaller images on a CPU). */
export const imageProcessorOverridesSchema = z
  .object({
    longestEdge: z
      .number()
      .int()
      .min(1)
      .max(8192)
      .optional()
      .describe("Resize each image so its longest edge is this (HF `size.longest_edge`; SmolVLM's is 2048)."),
    doImageSplitting: z
      .boolean()
      .optional()
      .describe('Split into tiles of the tower size plus a global image (HF `do_image_splitting`).'),
  })
  .strict();

/** Cross-field checks of `model.vision`, one sentence each naming the field. */
export function visionProblems(vision: VisionSettings | null, checkpoint: string | undefined): string[] {
  if (!vision) return [];
  const problems: string[] = [];
  if (checkpoint)
    problems.push(
      '- model.vision: sizes a from-scratch vision-language model; with model.checkpoint the checkpoint config.json decides (leave model.vision null)',
    );
  if (vision.imageSize % vision.patchSize !== 0)
    problems.push(
      `- model.vision.patchSize: ${vision.patchSize} does not divide model.vision.imageSize ${vision.imageSize}`,
    );
  else if ((vision.imageSize / vision.patchSize) % vision.scaleFactor !== 0)
    problems.push(
      `- model.vision.scaleFactor: ${vision.scaleFactor} does not divide the ${vision.imageSize / vision.patchSize} patches per side`,
    );
  if (vision.hiddenSize % vision.numHeads !== 0)
    problems.push(
      `- model.vision.hiddenSize: ${vision.hiddenSize} is not a multiple of model.vision.numHeads ${vision.numHeads}`,
    );
  return problems;
}

/** The `model` fields of vision-language runs, spread into the model section of the config schema. */
export const visionModelFields = {
  vision: visionSchema
    .nullable()
    .default(null)
    .describe('A from-scratch vision-language model: SigLIP tower and connector (docs/vision.md); null = text only.'),
  imageProcessor: imageProcessorOverridesSchema
    .default({})
    .describe("Overrides of a vision-language checkpoint's image-processor settings."),
};
