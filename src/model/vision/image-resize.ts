/**
 * Resizing 8-bit RGB and RGBA images exactly as Pillow's `Image.resize` does (Resample.c): a separable
 * convolution, horizontal pass then vertical, whose filter support widens by the downscale factor
 * (antialiasing), with coefficients normalised to sum 1 and then fixed to 22-bit integers, and each
 * pass rounding and clipping to uint8. Hugging Face's Idefics3 image processor resizes with PIL's
 * LANCZOS, so this reproduces its pixels bit for bit rather than approximately (sharp's lanczos3
 * differs: other coefficients, no integer rounding between passes).
 *
 * Is: the resampling arithmetic on a row-major interleaved buffer. Is not: decoding (`image-decode.ts`)
 * or the processor's size rules (`image-processor.ts`).
 */

/** Pillow's resampling filters by its enum value (PIL.Image.Resampling), nearest excluded. */
export const resampleFilters = {
  1: { name: 'lanczos', support: 3, weight: lanczos },
  2: { name: 'bilinear', support: 1, weight: bilinear },
  3: { name: 'bicubic', support: 2, weight: bicubic },
  4: { name: 'box', support: 0.5, weight: box },
  5: { name: 'hamming', support: 1, weight: hamming },
} as const;

/** A Pillow filter id this module implements (1 LANCZOS, 2 BILINEAR, 3 BICUBIC, 4 BOX, 5 HAMMING). */
export type ResampleFilterId = keyof typeof resampleFilters;

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

function lanczos(x: number): number {
  return x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0;
}

function bilinear(x: number): number {
  const a = Math.abs(x);
  return a < 1 ? 1 - a : 0;
}

function bicubic(x: number): number {
  const a = -0.5; // Pillow's choice (Keys' a = −0.5), not −0.75
  const t = Math.abs(x);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
  return 0;
}

function box(x: number): number {
  return x > -0.5 && x <= 0.5 ? 1 : 0;
}

function hamming(x: number): number {
  const t = Math.abs(x);
  if (t === 0) return 1;
  if (t >= 1) return 0;
  const px = t * Math.PI;
  return (Math.sin(px) / px) * (0.54 + 0.46 * Math.cos(px));
}

const precisionBits = 32 - 8 - 2; // Pillow's PRECISION_BITS for 8-bit images
const fixedOne = 2 ** precisionBits;

/** Per output index: the first input index, the count of taps, and the integer weights (ksize each). */
interface Coefficients {
  first: Int32Array;
  count: Int32Array;
  weights: Int32Array;
  ksize: number;
}

/** Pillow's `precompute_coeffs` followed by `normalize_coeffs_8bpc`, for a full-image box. */
function coefficients(inSize: number, outSize: number, filterId: ResampleFilterId): Coefficients {
  const filter = resampleFilters[filterId];
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * ksize);
  const raw = new Float64Array(ksize);
  for (let out = 0; out < outSize; out++) {
    const center = (out + 0.5) * scale;
    const inverseScale = 1 / filterScale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let total = 0;
    for (let x = 0; x < xmax; x++) {
      raw[x] = filter.weight((x + xmin - center + 0.5) * inverseScale);
      total += raw[x];
    }
    for (let x = 0; x < xmax; x++) {
      const w = total !== 0 ? raw[x] / total : raw[x];
      // C's (int) truncates toward zero after adding ±0.5: round half away from zero.
      weights[out * ksize + x] = Math.trunc(w < 0 ? -0.5 + w * fixedOne : 0.5 + w * fixedOne);
    }
    first[out] = xmin;
    count[out] = xmax;
  }
  return { first, count, weights, ksize };
}

/**
 * Pillow's clip8: the accumulator shifted right by PRECISION_BITS (arithmetic: floor), clamped to
 * 0..255. Accumulators stay inside int32 as in Pillow (|taps| sum to < 1.5·2^22, times 255), so `>>` is exact.
 */
function clip8(accumulator: number): number {
  const value = accumulator >> precisionBits;
  return value < 0 ? 0 : value > 255 ? 255 : value;
}

const half = 1 << (precisionBits - 1); // Pillow starts each sum here: rounding to nearest

/** The horizontal pass over `height` rows of 3 (RGB) or 4 (RGBa) interleaved channels. */
function horizontal(
  input: Uint8Array,
  inWidth: number,
  height: number,
  channels: number,
  taps: Coefficients,
): Uint8Array {
  const { first, count, weights, ksize } = taps;
  const outWidth = first.length;
  const output = new Uint8Array(outWidth * height * channels);
  const four = channels === 4;
  for (let y = 0; y < height; y++) {
    const rowStart = y * inWidth * channels;
    for (let x = 0; x < outWidth; x++) {
      let red = half;
      let green = half;
      let blue = half;
      let alpha = half;
      const base = x * ksize;
      let at = rowStart + first[x] * channels;
      for (let k = 0, n = count[x]; k < n; k++, at += channels) {
        const w = weights[base + k];
        red += input[at] * w;
        green += input[at + 1] * w;
        blue += input[at + 2] * w;
        if (four) alpha += input[at + 3] * w;
      }
      const to = (y * outWidth + x) * channels;
      output[to] = clip8(red);
      output[to + 1] = clip8(green);
      output[to + 2] = clip8(blue);
      if (four) output[to + 3] = clip8(alpha);
    }
  }
  return output;
}

/** The vertical pass: one output row at a time, each value summed over its taps' rows (a few cached rows). */
function vertical(input: Uint8Array, width: number, channels: number, taps: Coefficients): Uint8Array {
  const { first, count, weights, ksize } = taps;
  const outHeight = first.length;
  const rowLength = width * channels;
  const output = new Uint8Array(outHeight * rowLength);
  for (let y = 0; y < outHeight; y++) {
    const n = count[y];
    const base = y * ksize;
    const start = first[y] * rowLength;
    const to = y * rowLength;
    for (let i = 0; i < rowLength; i++) {
      let sum = half;
      for (let k = 0, at = start + i; k < n; k++, at += rowLength) sum += input[at] * weights[base + k];
      output[to + i] = clip8(sum);
    }
  }
  return output;
}

/**
 * Resizes a row-major uint8 image of `channels` interleaved channels (3: RGB; 4: premultiplied
 * RGBa, see {@link resizeRgba}) to `outWidth × outHeight` as Pillow's `Image.resize(size,
 * resample=filterId)` does; the same size returns a copy (Pillow does the same).
 */
export function resizePixels(
  data: Uint8Array,
  width: number,
  height: number,
  channels: number,
  outWidth: number,
  outHeight: number,
  filterId: ResampleFilterId = 1,
): Uint8Array {
  if (data.length !== width * height * channels)
    throw new Error(`resize: ${data.length} bytes is not ${width}×${height}×${channels}`);
  if (!Number.isInteger(outWidth) || !Number.isInteger(outHeight) || outWidth < 1 || outHeight < 1)
    throw new Error(`resize: target size ${outWidth}×${outHeight} must be positive integers`);
  if (!(filterId in resampleFilters))
    throw new Error(`resize: unknown filter ${filterId} (known: 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming)`);
  let current = data;
  if (outWidth !== width)
    current = horizontal(current, width, height, channels, coefficients(width, outWidth, filterId));
  if (outHeight !== height) current = vertical(current, outWidth, channels, coefficients(height, outHeight, filterId));
  return current === data ? data.slice() : current;
}

/** Pillow's MULDIV255(a, b): a·b/255 rounded, in its integer form. */
function multiplyDivide255(a: number, b: number): number {
  const t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

/**
 * Resizes straight (non-premultiplied) RGBA as Pillow does for mode RGBA: converted to RGBa
 * (premultiplied, MULDIV255), resized, converted back (255·c / a, clipped; a = 0 or 255 kept).
 */
export function resizeRgba(
  data: Uint8Array,
  width: number,
  height: number,
  outWidth: number,
  outHeight: number,
  filterId: ResampleFilterId = 1,
): Uint8Array {
  if (outWidth === width && outHeight === height) return data.slice();
  const premultiplied = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i += 4) {
    const alpha = data[i + 3];
    for (let c = 0; c < 3; c++) premultiplied[i + c] = multiplyDivide255(data[i + c], alpha);
    premultiplied[i + 3] = alpha;
  }
  const resized = resizePixels(premultiplied, width, height, 4, outWidth, outHeight, filterId);
  for (let i = 0; i < resized.length; i += 4) {
    const alpha = resized[i + 3];
    if (alpha === 0 || alpha === 255) continue;
    for (let c = 0; c < 3; c++) resized[i + c] = Math.min(255, Math.floor((255 * resized[i + c]) / alpha));
  }
  return resized;
}

/**
 * Straight RGBA → RGB over opaque white with Pillow's `alpha_composite` integer arithmetic (what
 * transformers' `convert_to_rgb` does): c·a and 255·(255 − a) blended in 7-bit fixed point.
 */
export function compositeOverWhite(rgba: Uint8Array): Uint8Array {
  const rgb = new Uint8Array((rgba.length / 4) * 3);
  for (let pixel = 0, to = 0; pixel < rgba.length; pixel += 4, to += 3) {
    const alpha = rgba[pixel + 3];
    for (let c = 0; c < 3; c++) {
      const sum = rgba[pixel + c] * alpha * 128 + 255 * (255 - alpha) * 128 + (0x80 << 7);
      rgb[to + c] = (((sum >> 8) + sum) >> 8) >> 7;
    }
  }
  return rgb;
}
