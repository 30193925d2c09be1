/** Decoding images from a path, base64, a data: URL or bytes; transparency, greyscale, EXIF orientation; errors name the row. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { loadImage } from './image-decode.js';
import { testFixture } from '../../../test/helpers/fixtures.js';

const fixtures = testFixture('idefics3-processor');
const small = join(fixtures, 'small.png');

describe('loadImage', () => {
  it('a path, base64, a data: URL and bytes give the same RGB pixels', async () => {
    const bytes = readFileSync(small);
    const fromPath = await loadImage(small, 'row 1');
    expect([fromPath.width, fromPath.height, fromPath.channels, fromPath.data.length]).toEqual([
      50,
      37,
      3,
      50 * 37 * 3,
    ]);
    expect(fromPath.straightRgba).toBeUndefined(); // opaque
    for (const source of [
      bytes.toString('base64'),
      `data:image/png;base64,${bytes.toString('base64')}`,
      new Uint8Array(bytes),
    ])
      expect((await loadImage(source, 'row 1')).data).toEqual(fromPath.data);
  });

  it('WebP (lossless) and JPEG decode too; the same pixels as the PNG for a lossless format', async () => {
    const png = await loadImage(small, 'row 1');
    const raw = { raw: { width: png.width, height: png.height, channels: 3 as const } };
    const webp = await sharp(Buffer.from(png.data), raw).webp({ lossless: true }).toBuffer();
    expect((await loadImage(new Uint8Array(webp), 'row 1')).data).toEqual(png.data);
    const jpeg = await loadImage(join(fixtures, 'tall.jpg'), 'row 1');
    expect([jpeg.width, jpeg.height]).toEqual([90, 160]);
  });

  it('composites transparency onto white and keeps the straight RGBA for the processor', async () => {
    // One transparent, one half-transparent black, one opaque red pixel.
    const rgba = Buffer.from([0, 0, 0, 0, 0, 0, 0, 128, 255, 0, 0, 255]);
    const png = await sharp(rgba, { raw: { width: 3, height: 1, channels: 4 } })
      .png()
      .toBuffer();
    const image = await loadImage(png, 'row 2');
    expect([...image.data]).toEqual([255, 255, 255, 127, 127, 127, 255, 0, 0]); // Pillow's alpha_composite rounding
    expect([...image.straightRgba!]).toEqual([...rgba]);
  });

  it('greyscale becomes (g, g, g); EXIF orientation is applied', async () => {
    const grey = await sharp(Buffer.from([10, 200]), { raw: { width: 2, height: 1, channels: 1 } })
      .png()
      .toBuffer();
    expect([...(await loadImage(grey, 'row 3')).data]).toEqual([10, 10, 10, 200, 200, 200]);
    // A 2×1 image stored with orientation 6 (rotate 90° clockwise to view) is 1×2 once oriented.
    const raw = Buffer.from([255, 0, 0, 0, 0, 255]);
    const rotated = await sharp(raw, { raw: { width: 2, height: 1, channels: 3 } })
      .png()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const oriented = await loadImage(rotated, 'row 4');
    expect([oriented.width, oriented.height]).toEqual([1, 2]);
    expect([...oriented.data]).toEqual([255, 0, 0, 0, 0, 255]);
  });

  it('errors name the row: a missing file, an undecodable file, a bad data: URL, a wrong type', async () => {
    await expect(loadImage('images/missing.png', 'train.jsonl line 4, column image')).rejects.toThrow(
      /train\.jsonl line 4, column image: image file not found: images\/missing\.png/,
    );
    const folder = mkdtempSync(join(tmpdir(), 'decode-'));
    const broken = join(folder, 'broken.png');
    writeFileSync(broken, 'this is not a png at all');
    await expect(loadImage(broken, 'train.jsonl line 5, column image')).rejects.toThrow(
      /train\.jsonl line 5, column image: the image could not be decoded/,
    );
    const truncated = readFileSync(small).subarray(0, 60);
    await expect(loadImage(new Uint8Array(truncated), 'row 6')).rejects.toThrow(
      /row 6: the image could not be decoded/,
    );
    await expect(loadImage('data:image/png,abc', 'row 7')).rejects.toThrow(/row 7: a data: URL image must be base64/);
    await expect(loadImage(folder, 'row 8')).rejects.toThrow(/row 8: image path .* is not a file/);
    await expect(loadImage(42 as unknown as string, 'row 9')).rejects.toThrow(/row 9: an image must be a path/);
  });
});
