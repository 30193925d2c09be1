/**
 * The Idefics3 / SmolVLM image processor's rules (transformers' `Idefics3ImageProcessor`, the PIL
 * path), from a decoded RGB image to the vision tower's pixel values:
 *
 * 1. `do_resize`: the longest edge becomes `size.longest_edge` (up or down); the other edge is
 *    `int(longest / aspect)`, made even by adding 1, at least 1, then both capped at 4096.
 * 2. `do_image_splitting`: both edges are rounded up to multiples of the tile side
 *    `max_image_size.longest_edge` S (width first when width ≥ height: `ceil(w/S)·S`, then the height
 *    `ceil(int(w'/aspect)/S)·S`), and the image is resized to that. If it is larger than S×S it is cut
 *    into rows × cols tiles of S×S (row-major) and a global image (the whole, resized to S×S) is
 *    appended; otherwise it is one S×S image with rows = cols = 0. Without splitting the image is
 *    resized to S×S (rows = cols = 0).
 * 3. `convert_to_rgb`: an image with transparency goes through the steps above as RGBA (Pillow
 *    resizes RGBA premultiplied) and each frame is composited onto white only now, as HF does.
 * 4. `do_rescale` (float32 of value·rescale_factor), `do_normalize` ((x − mean)/std in float32).
 * Every resize is Pillow's (`image-resize.ts`), LANCZOS unless `resample` says otherwise, so the
 * values equal HF's bit for bit for the same RGB input (scripts/reference/idefics3_processor_reference.py).
 *
 * Is not: decoding (`image-decode.ts`) or the prompt's image tokens (`image-prompt.ts`). `do_pad`
 * is not needed: every frame is S×S, and images are processed one at a time.
 */
import {
  compositeOverWhite,
  resampleFilters,
  resizePixels,
  resizeRgba,
  type ResampleFilterId,
} from './image-resize.js';

/** A decoded image: 8-bit RGB, row-major (`data[(y·width + x)·3 + channel]`). */
export interface DecodedImage {
  width: number;
  height: number;
  channels: 3;
  /** RGB; a transparent image composited onto white. */
  data: Uint8Array;
  /**
   * Only for an image with transparency: its straight RGBA, which {@link preprocessImage} resizes
   * as HF does (Pillow's premultiplied RGBA resize) and composites onto white per frame after.
   */
  straightRgba?: Uint8Array;
}

/** The image processor's settings (HF `preprocessor_config.json` field in each comment). */
export interface ImageProcessorConfig {
  /** `do_resize`: resize so the longest edge is `longestEdge` first. */
  doResize: boolean;
  /** `size.longest_edge` (HF default 4·364; SmolVLM 2048). */
  longestEdge: number;
  /** `resample`: Pillow's filter id (1 LANCZOS, the default; 2 BILINEAR; 3 BICUBIC; 4 BOX; 5 HAMMING). */
  resample: ResampleFilterId;
  /** `do_image_splitting`: tiles of `maxImageSize` plus a global image. */
  doImageSplitting: boolean;
  /** `max_image_size.longest_edge`: the tile side S, the vision tower's image size (HF default 364; SmolVLM 512). */
  maxImageSize: number;
  /** `do_rescale` and `rescale_factor` (default 1/255). */
  doRescale: boolean;
  rescaleFactor: number;
  /** `do_normalize`, `image_mean`, `image_std` (default 0.5 each: values in [−1, 1]). */
  doNormalize: boolean;
  imageMean: number[];
  imageStd: number[];
}

/** The processor's output for one image: its frames channel-first, and the tile grid (0×0 = no split). */
export interface ProcessedImage {
  /** [imageCount, 3, S, S] float32: the tiles row by row, then the global image. */
  pixelValues: Float32Array;
  imageCount: number;
  rows: number;
  cols: number;
  /** The frame side S. */
  size: number;
}

/** Transformers' Idefics3ImageProcessor defaults. */
export const defaultImageProcessorConfig: ImageProcessorConfig = {
  doResize: true,
  longestEdge: 4 * 364,
  resample: 1,
  doImageSplitting: true,
  maxImageSize: 364,
  doRescale: true,
  rescaleFactor: 1 / 255,
  doNormalize: true,
  imageMean: [0.5, 0.5, 0.5],
  imageStd: [0.5, 0.5, 0.5],
};

const maxImageSide = 4096; // MAX_IMAGE_SIZE in image_processing_idefics3.py

function fail(source: string, field: string, problem: string): never {
  throw new Error(`${source}: "${field}" ${problem}`);
}

function edgeOf(raw: Record<string, unknown>, field: string, fallback: number, source: string): number {
  const value = raw[field];
  if (value === undefined || value === null) return fallback;
  const edge = (value as Record<string, unknown>).longest_edge;
  if (typeof value !== 'object' || typeof edge !== 'number' || !Number.isInteger(edge) || edge < 1)
    fail(source, field, `must be {"longest_edge": positive integer}, got ${JSON.stringify(value)}`);
  return edge;
}

function triple(raw: Record<string, unknown>, field: string, fallback: number[], source: string): number[] {
  const value = raw[field];
  if (value === undefined || value === null) return fallback;
  const list = typeof value === 'number' ? [value, value, value] : value;
  if (!Array.isArray(list) || list.length !== 3 || !list.every((item) => typeof item === 'number' && isFinite(item)))
    fail(source, field, `must be a number or 3 numbers (R, G, B), got ${JSON.stringify(value)}`);
  return list as number[];
}

function flag(raw: Record<string, unknown>, field: string, fallback: boolean, source: string): boolean {
  const value = raw[field];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') fail(source, field, `must be true or false, got ${JSON.stringify(value)}`);
  return value;
}

/** Parses an HF image-processor JSON object (snake_case fields; missing ones take HF's defaults). */
export function parseImageProcessorConfig(raw: unknown, source: string): ImageProcessorConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${source}: must be a JSON object`);
  const fields = raw as Record<string, unknown>;
  const defaults = defaultImageProcessorConfig;
  const resample = fields.resample ?? defaults.resample;
  if (typeof resample !== 'number' || !(resample in resampleFilters))
    fail(
      source,
      'resample',
      `${JSON.stringify(resample)} is not supported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING)`,
    );
  const rescaleFactor = fields.rescale_factor ?? defaults.rescaleFactor;
  if (typeof rescaleFactor !== 'number' || !(rescaleFactor > 0))
    fail(source, 'rescale_factor', 'must be a positive number');
  const imageStd = triple(fields, 'image_std', defaults.imageStd, source);
  if (imageStd.some((value) => value === 0)) fail(source, 'image_std', 'must not contain 0');
  const config: ImageProcessorConfig = {
    doResize: flag(fields, 'do_resize', defaults.doResize, source),
    longestEdge: edgeOf(fields, 'size', defaults.longestEdge, source),
    resample: resample as ResampleFilterId,
    doImageSplitting: flag(fields, 'do_image_splitting', defaults.doImageSplitting, source),
    maxImageSize: edgeOf(fields, 'max_image_size', defaults.maxImageSize, source),
    doRescale: flag(fields, 'do_rescale', defaults.doRescale, source),
    rescaleFactor,
    doNormalize: flag(fields, 'do_normalize', defaults.doNormalize, source),
    imageMean: triple(fields, 'image_mean', defaults.imageMean, source),
    imageStd,
  };
  if (config.longestEdge > maxImageSide)
    fail(source, 'size', `longest_edge ${config.longestEdge} exceeds ${maxImageSide}`);
  return config;
}

/** Step 1's output size [height, width] for a longest edge (upscaling included), as HF computes it. */
export function longestEdgeSize(height: number, width: number, longestEdge: number): [number, number] {
  const aspect = width / height;
  let [h, w] = [height, width];
  if (width >= height) {
    w = longestEdge;
    h = Math.trunc(w / aspect);
    if (h % 2 !== 0) h += 1;
  } else {
    h = longestEdge;
    w = Math.trunc(h * aspect);
    if (w % 2 !== 0) w += 1;
  }
  [h, w] = [Math.max(h, 1), Math.max(w, 1)];
  // _resize_output_size_scale_below_upper_bound: the aspect of the new size, not the original's.
  const capped = w / h;
  if (w >= h && w > maxImageSide) [w, h] = [maxImageSide, Math.trunc(maxImageSide / capped)];
  else if (h > w && h > maxImageSide) [h, w] = [maxImageSide, Math.trunc(maxImageSide * capped)];
  return [Math.max(h, 1), Math.max(w, 1)];
}

/** Step 2's size [height, width]: both edges rounded up to multiples of the tile side. */
export function tiledSize(height: number, width: number, tile: number): [number, number] {
  const aspect = width / height;
  if (width >= height) {
    const w = Math.ceil(width / tile) * tile;
    return [Math.ceil(Math.trunc(w / aspect) / tile) * tile, w];
  }
  const h = Math.ceil(height / tile) * tile;
  return [h, Math.ceil(Math.trunc(h * aspect) / tile) * tile];
}

/** An image on its way through the rules: 3 channels (RGB) or 4 (straight RGBA, composited at the end). */
interface Frame {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 3 | 4;
}

function resized(frame: Frame, height: number, width: number, filter: ResampleFilterId): Frame {
  if (height < 1 || width < 1)
    throw new Error(`image processor: a ${frame.width}×${frame.height} image would be resized to ${width}×${height}`);
  const data =
    frame.channels === 4
      ? resizeRgba(frame.data, frame.width, frame.height, width, height, filter)
      : resizePixels(frame.data, frame.width, frame.height, 3, width, height, filter);
  return { data, width, height, channels: frame.channels };
}

function crop(frame: Frame, left: number, top: number, side: number): Frame {
  const { channels } = frame;
  const data = new Uint8Array(side * side * channels);
  for (let y = 0; y < side; y++) {
    const from = ((top + y) * frame.width + left) * channels;
    data.set(frame.data.subarray(from, from + side * channels), y * side * channels);
  }
  return { data, width: side, height: side, channels };
}

/**
 * Applies the processor's rules to one decoded image: frames of S×S (tiles row-major, then the
 * global image), rescaled and normalised, channel-first, with the tile grid for the prompt.
 * @example const { pixelValues, rows, cols } = preprocessImage(await loadImage('a.png', 'row 1'), config);
 */
export function preprocessImage(image: DecodedImage, config: ImageProcessorConfig): ProcessedImage {
  const { width, height, data, straightRgba } = image;
  if (
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width < 1 ||
    height < 1 ||
    data.length !== width * height * 3
  )
    throw new Error(`image processor: ${data.length} bytes is not a ${width}×${height} RGB image`);
  if (straightRgba && straightRgba.length !== width * height * 4)
    throw new Error(`image processor: straightRgba has ${straightRgba.length} bytes, not ${width}×${height}×4`);
  const side = config.maxImageSize;
  const filter = config.resample;
  let frame: Frame = straightRgba
    ? { data: straightRgba, width, height, channels: 4 }
    : { data, width, height, channels: 3 };
  if (config.doResize) frame = resized(frame, ...longestEdgeSize(height, width, config.longestEdge), filter);
  let frames: Frame[];
  let rows = 0;
  let cols = 0;
  if (config.doImageSplitting) {
    frame = resized(frame, ...tiledSize(frame.height, frame.width, side), filter);
    if (frame.height > side || frame.width > side) {
      rows = frame.height / side;
      cols = frame.width / side;
      frames = [];
      for (let row = 0; row < rows; row++)
        for (let col = 0; col < cols; col++) frames.push(crop(frame, col * side, row * side, side));
      frames.push(resized(frame, side, side, filter));
    } else {
      frames = [frame];
    }
  } else {
    frames = [resized(frame, side, side, filter)];
  }
  return { pixelValues: normalisedFrames(frames, side, config), imageCount: frames.length, rows, cols, size: side };
}

/** Rescale and normalise in float32 as numpy does (value·factor in float64 → float32; (x − mean)/std in float32). */
function normalisedFrames(frames: Frame[], side: number, config: ImageProcessorConfig): Float32Array {
  const plane = side * side;
  const out = new Float32Array(frames.length * 3 * plane);
  const mean = config.imageMean.map(Math.fround);
  const std = config.imageStd.map(Math.fround);
  frames.forEach((frame, index) => {
    const rgb = frame.channels === 4 ? compositeOverWhite(frame.data) : frame.data; // convert_to_rgb
    for (let channel = 0; channel < 3; channel++) {
      const base = (index * 3 + channel) * plane;
      for (let pixel = 0; pixel < plane; pixel++) {
        let value = rgb[pixel * 3 + channel];
        if (config.doRescale) value = Math.fround(value * config.rescaleFactor);
        if (config.doNormalize) value = Math.fround(Math.fround(value - mean[channel]) / std[channel]);
        out[base + pixel] = value;
      }
    }
  });
  return out;
}
