/**
 * Image decoding for vision-language prompts: a file path, a base64 string, a `data:` URL or raw
 * bytes (PNG, JPEG, WebP, GIF, TIFF, AVIF — what sharp/libvips reads) → 8-bit RGB, row-major.
 *
 * Choices, matching what Hugging Face's Idefics3 pipeline gives the model:
 * - EXIF orientation is applied (transformers' `load_image` calls `ImageOps.exif_transpose`).
 * - Transparency: `data` is composited onto white with Pillow's `alpha_composite` arithmetic
 *   (transformers' `convert_to_rgb`), for anyone who shows or uses the picture as is; the straight
 *   RGBA is kept as `straightRgba`, because the processor resizes RGBA first (premultiplied, as
 *   Pillow does) and composites each frame after, which differs from compositing first by up to a
 *   few units on semi-transparent pixels.
 * - Embedded ICC profiles are ignored (Pillow does not apply them on load), so values are the file's.
 * - The first frame of an animation; greyscale becomes (g, g, g).
 *
 * Is not: resizing or normalising (`image-processor.ts`); sharp only decodes here.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import sharp, { type OutputInfo } from 'sharp';
import type { DecodedImage } from './image-processor.js';
import { compositeOverWhite } from './image-resize.js';

// Leading bytes of the formats worth recognising in a base64 string (PNG, JPEG, GIF, WebP's RIFF, TIFF, ISO-BMFF).
const magicNumbers = [
  [0x89, 0x50, 0x4e, 0x47],
  [0xff, 0xd8, 0xff],
  [0x47, 0x49, 0x46],
  [0x52, 0x49, 0x46, 0x46],
  [0x49, 0x49, 0x2a],
  [0x4d, 0x4d, 0x00, 0x2a],
];

function looksLikeImage(bytes: Uint8Array): boolean {
  const isoMedia = bytes.length > 12 && String.fromCharCode(...bytes.subarray(4, 8)) === 'ftyp';
  return isoMedia || magicNumbers.some((magic) => magic.every((byte, index) => bytes[index] === byte));
}

/** The bytes a source string names: a data: URL, an existing file, or base64 of an image; errors say which was tried. */
function bytesOf(source: string, where: string): Uint8Array {
  if (source.startsWith('data:')) {
    const comma = source.indexOf(',');
    if (comma < 0 || !/;base64$/i.test(source.slice(0, comma)))
      throw new Error(`${where}: a data: URL image must be base64 ("data:image/png;base64,...")`);
    return Buffer.from(source.slice(comma + 1), 'base64');
  }
  if (existsSync(source)) {
    if (!statSync(source).isFile()) throw new Error(`${where}: image path ${source} is not a file`);
    return readFileSync(source);
  }
  const compact = source.replace(/\s+/g, '');
  if (compact.length >= 32 && /^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) {
    const bytes = Buffer.from(compact, 'base64');
    if (looksLikeImage(bytes)) return bytes;
  }
  const shown = source.length > 80 ? `${source.slice(0, 77)}...` : source;
  throw new Error(`${where}: image file not found: ${shown} (nor is it a data: URL or base64 of an image)`);
}

/**
 * Decodes an image to RGB uint8. `source` is a file path, base64, a data: URL, or the bytes;
 * `where` names the row and column in every error ("train.jsonl line 4, column image").
 * @example const image = await loadImage('cat.png', 'row 1'); // { width, height, channels: 3, data }
 */
export async function loadImage(source: string | Uint8Array, where: string): Promise<DecodedImage> {
  if (typeof source !== 'string' && !(source instanceof Uint8Array))
    throw new Error(`${where}: an image must be a path, base64 text, a data: URL or bytes, got ${typeof source}`);
  const bytes = typeof source === 'string' ? bytesOf(source, where) : source;
  let decoded: { data: Buffer; info: OutputInfo };
  try {
    decoded = await sharp(bytes, { ignoreIcc: true, failOn: 'error' })
      .autoOrient()
      .toColourspace('srgb')
      .ensureAlpha()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw new Error(`${where}: the image could not be decoded (${(error as Error).message})`);
  }
  const { width, height, channels } = decoded.info;
  if (channels !== 4 || decoded.data.length !== width * height * 4)
    throw new Error(`${where}: decoding gave ${channels} channels, expected RGBA`);
  const rgba = new Uint8Array(decoded.data.buffer, decoded.data.byteOffset, decoded.data.length);
  let opaque = true;
  for (let i = 3; i < rgba.length && opaque; i += 4) opaque = rgba[i] === 255;
  if (!opaque) return { width, height, channels: 3, data: compositeOverWhite(rgba), straightRgba: rgba };
  const data = new Uint8Array(width * height * 3);
  for (let pixel = 0, to = 0; pixel < rgba.length; pixel += 4, to += 3) {
    data[to] = rgba[pixel];
    data[to + 1] = rgba[pixel + 1];
    data[to + 2] = rgba[pixel + 2];
  }
  return { width, height, channels: 3, data };
}
