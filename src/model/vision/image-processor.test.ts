/**
 * The Idefics3 image processor against scripts/reference/idefics3_processor_reference.py (PIL +
 * numpy written from transformers' semantics): every float32 pixel value equal (sha256 of the
 * bytes) on a small image (one frame), a wide one (2 × 3 tiles + global; and SmolVLM-256M's 3 × 4
 * tiles of 512), a JPEG with bicubic and ImageNet statistics, and a transparent PNG (resized as RGBA);
 * PIL's resizes bit for bit, the tile grids and the expanded prompt.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadImage } from './image-decode.js';
import { expandPromptImages } from './image-prompt.js';
import {
  defaultImageProcessorConfig,
  longestEdgeSize,
  parseImageProcessorConfig,
  preprocessImage,
  tiledSize,
} from './image-processor.js';
import { readImageProcessorConfig } from './vision-language-checkpoint.js';
import { resizePixels, type ResampleFilterId } from './image-resize.js';
import { testFixture } from '../../../test/helpers/fixtures.js';

const fixtures = testFixture('idefics3-processor');
interface ReferenceCase {
  name: string;
  file: string;
  config: Record<string, unknown>;
  rows: number;
  cols: number;
  imageCount: number;
  size: number;
  decodedSha256: string | null;
  sha256: string;
  sum: number;
  selected: [number, number][];
}
const reference = JSON.parse(readFileSync(join(fixtures, 'reference.json'), 'utf8')) as {
  cases: ReferenceCase[];
  resize: {
    width: number;
    height: number;
    inputBase64: string;
    cases: { outWidth: number; outHeight: number; filter: ResampleFilterId; sha256: string; first: number[] }[];
  };
  prompt: { text: string; layouts: [number, number][]; imageSeqLen: number; expanded: string };
};
const sha256 = (bytes: Uint8Array | Float32Array) =>
  createHash('sha256')
    .update(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    .digest('hex');

async function run(referenceCase: ReferenceCase) {
  const image = await loadImage(join(fixtures, referenceCase.file), referenceCase.file);
  return {
    image,
    processed: preprocessImage(image, parseImageProcessorConfig(referenceCase.config, referenceCase.name)),
  };
}

describe('preprocessImage matches the reference', () => {
  it.each(reference.cases.map((item) => [item.name, item] as const))('%s: every pixel value', async (_name, item) => {
    const { image, processed } = await run(item);
    if (item.decodedSha256) expect(sha256(image.data)).toBe(item.decodedSha256); // same RGB bytes decoded
    expect([processed.rows, processed.cols, processed.imageCount, processed.size]).toEqual([
      item.rows,
      item.cols,
      item.imageCount,
      item.size,
    ]);
    expect(processed.pixelValues.length).toBe(item.imageCount * 3 * item.size * item.size);
    for (const [index, value] of item.selected) expect(processed.pixelValues[index]).toBe(value);
    expect(processed.pixelValues.reduce((total, value) => total + value, 0)).toBeCloseTo(item.sum, 1);
    expect(sha256(processed.pixelValues)).toBe(item.sha256);
  });

  it("PIL's resize bit for bit (lanczos, bicubic, bilinear; up, down, mixed)", () => {
    const { width, height, inputBase64, cases } = reference.resize;
    const input = new Uint8Array(Buffer.from(inputBase64, 'base64'));
    for (const { outWidth, outHeight, filter, sha256: expected, first } of cases) {
      const output = resizePixels(input, width, height, 3, outWidth, outHeight, filter);
      expect([...output.subarray(0, 12)]).toEqual(first);
      expect(sha256(output)).toBe(expected);
    }
  });

  it('the expanded prompt equals the processor’s', () => {
    const { text, layouts, imageSeqLen, expanded } = reference.prompt;
    const ours = expandPromptImages(
      text,
      layouts.map(([rows, cols]) => ({ rows, cols })),
      imageSeqLen,
    );
    expect(ours).toBe(expanded);
  });
});

describe('size rules', () => {
  it('longest edge: the short side is int(longest / aspect), made even; upscaling too; capped at 4096', () => {
    expect(longestEdgeSize(37, 50, 64)).toEqual([48, 64]); // int(47.36) = 47 → 48
    expect(longestEdgeSize(200, 300, 160)).toEqual([106, 160]);
    expect(longestEdgeSize(160, 90, 96)).toEqual([96, 54]);
    expect(longestEdgeSize(10, 9000, 5000)).toEqual([4, 4096]); // 5000×6 then below 4096
  });
  it('tiled size: multiples of the tile side', () => {
    expect(tiledSize(106, 160, 64)).toEqual([128, 192]);
    expect(tiledSize(48, 64, 64)).toEqual([64, 64]);
    expect(tiledSize(1366, 2048, 512)).toEqual([1536, 2048]);
  });
});

describe('configuration', () => {
  it('reads preprocessor_config.json with HF field names, defaults for the rest', () => {
    const directory = mkdtempSync(join(tmpdir(), 'image-processor-'));
    writeFileSync(
      join(directory, 'preprocessor_config.json'),
      JSON.stringify({
        image_processor_type: 'Idefics3ImageProcessor',
        size: { longest_edge: 2048 },
        max_image_size: { longest_edge: 512 },
      }),
    );
    expect(readImageProcessorConfig(directory)).toEqual({
      ...defaultImageProcessorConfig,
      longestEdge: 2048,
      maxImageSize: 512,
    });
    const empty = mkdtempSync(join(tmpdir(), 'image-processor-'));
    expect(readImageProcessorConfig(empty)).toEqual(defaultImageProcessorConfig);
    writeFileSync(
      join(empty, 'processor_config.json'),
      JSON.stringify({ image_seq_len: 64, image_processor: { do_image_splitting: false } }),
    );
    expect(readImageProcessorConfig(empty).doImageSplitting).toBe(false);
  });
  it('names the field of a bad value', () => {
    expect(() => parseImageProcessorConfig({ resample: 0 }, 'p.json')).toThrow(
      /p\.json: "resample" 0 is not supported/,
    );
    expect(() => parseImageProcessorConfig({ size: { height: 5, width: 5 } }, 'p.json')).toThrow(
      /"size" must be \{"longest_edge"/,
    );
    expect(() => parseImageProcessorConfig({ image_mean: [0.5, 0.5] }, 'p.json')).toThrow(
      /"image_mean" must be a number or 3/,
    );
    expect(() => parseImageProcessorConfig({ image_std: 0 }, 'p.json')).toThrow(/"image_std" must not contain 0/);
  });
  it('refuses a buffer that is not width × height × 3', () => {
    expect(() =>
      preprocessImage({ width: 2, height: 2, channels: 3, data: new Uint8Array(11) }, defaultImageProcessorConfig),
    ).toThrow(/11 bytes is not a 2×2 RGB image/);
  });
});
