/** Dataset rows with images: an image column, content parts, placeholders, paths relative to the data file, and errors naming the row. */
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDatasetTask, loadExamples } from './dataset-task.js';
import { toExample } from './examples.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const row = (fields: Record<string, unknown>, source = 'data.jsonl line 3') => ({ fields, source });
const fixtureImage = testFixture('idefics3-processor/small.png');
const base64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function dataFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'image-rows-'));
  mkdirSync(join(folder, 'pictures'));
  copyFileSync(fixtureImage, join(folder, 'pictures', 'a.png'));
  return folder;
}

describe('rows with images', () => {
  it('an image column of a relative path: resolved against the data folder, a placeholder prepended to a text prompt', () => {
    const folder = dataFolder();
    const example = toExample(row({ prompt: 'How many shapes?', image: 'pictures/a.png', answer: 4 }), {}, folder);
    expect(example.prompt).toBe('<image>How many shapes?');
    expect(example.images).toEqual([join(folder, 'pictures', 'a.png')]);
    expect(example.imageOrigin).toBe('data.jsonl line 3');
    expect('image' in example).toBe(false); // the raw column is replaced by `images`
  });

  it('conversational content parts become placeholders where the parts were; base64 cells are kept as they are', () => {
    const example = toExample(
      row({
        prompt: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare ' },
              { type: 'image' },
              { type: 'text', text: ' and ' },
              { type: 'image' },
            ],
          },
        ],
        images: [base64, `data:image/png;base64,${base64}`],
      }),
    );
    expect(example.prompt).toEqual([{ role: 'user', content: 'Compare <image> and <image>' }]);
    expect(example.images).toEqual([base64, `data:image/png;base64,${base64}`]);
  });

  it('a conversation without image parts gets its images at the start of the first user turn; inline part images are read', () => {
    const folder = dataFolder();
    const plain = toExample(
      row({
        prompt: [
          { role: 'system', content: 'Count.' },
          { role: 'user', content: 'How many?' },
        ],
        images: ['pictures/a.png'],
      }),
      {},
      folder,
    );
    expect(plain.prompt).toEqual([
      { role: 'system', content: 'Count.' },
      { role: 'user', content: '<image>How many?' },
    ]);
    const inline = toExample(
      row({ prompt: [{ role: 'user', content: [{ type: 'image', image: 'pictures/a.png' }] }] }),
      {},
      folder,
    );
    expect(inline.images).toEqual([join(folder, 'pictures', 'a.png')]);
    expect(
      toExample(row({ prompt: 'x', img: { bytes: new Uint8Array([1, 2]), path: null } }), { imageColumn: 'img' })
        .images,
    ).toEqual([new Uint8Array([1, 2])]);
  });

  it('an existing file wins over base64-looking text (a long path without an extension)', () => {
    const folder = dataFolder();
    const name = 'A'.repeat(70);
    copyFileSync(fixtureImage, join(folder, name));
    expect(toExample(row({ prompt: 'x', image: name }), {}, folder).images).toEqual([join(folder, name)]);
    expect(toExample(row({ prompt: 'x', image: 'B'.repeat(70) }), {}, folder).images).toEqual(['B'.repeat(70)]);
  });

  it('rows without images are unchanged', () => {
    expect(toExample(row({ prompt: 'Hi', image: null }))).toEqual({ prompt: 'Hi' });
    expect(toExample(row({ prompt: 'Hi' })).images).toBeUndefined();
  });

  it('errors name the row: a missing file, placeholders and images that disagree, bad parts, a missing column', () => {
    const folder = dataFolder();
    expect(() => toExample(row({ prompt: 'x', image: 'pictures/missing.png' }), {}, folder)).toThrow(
      /data\.jsonl line 3, column "image": image file not found: pictures\/missing\.png \(relative to/,
    );
    expect(() => toExample(row({ prompt: '<image><image>Which?', images: ['pictures/a.png'] }), {}, folder)).toThrow(
      /data\.jsonl line 3: the prompt has 2 <image> placeholder\(s\) \(image parts\) but the row has 1 image\(s\)/,
    );
    expect(() => toExample(row({ prompt: [{ role: 'user', content: [{ type: 'image' }] }] }))).toThrow(
      /data\.jsonl line 3: the prompt has 1 <image> placeholder\(s\) \(image parts\) but the row has 0 image\(s\)/,
    );
    expect(() => toExample(row({ prompt: [{ role: 'user', content: [{ type: 'audio' }] }] }))).toThrow(
      /data\.jsonl line 3: column "prompt" message 1 part 1: a content part must be/,
    );
    expect(() => toExample(row({ prompt: 'x' }), { imageColumn: 'picture' })).toThrow(
      /data\.jsonl line 3: no image column "picture"/,
    );
    expect(() => toExample(row({ prompt: 'x', image: 42 }))).toThrow(/column "image": an image must be a file path/);
  });

  it('a dataset task reads images relative to its data file, and a missing one fails at load naming the line', async () => {
    const folder = dataFolder();
    const lines = [1, 2, 3].map((count) =>
      JSON.stringify({ prompt: 'How many?', image: 'pictures/a.png', answer: count }),
    );
    writeFileSync(join(folder, 'train.jsonl'), `${lines.join('\n')}\n`);
    const examples = await loadExamples(join(folder, 'train.jsonl'));
    expect(examples.map((example) => example.images)).toEqual(lines.map(() => [join(folder, 'pictures', 'a.png')]));
    writeFileSync(
      join(folder, 'broken.jsonl'),
      `${lines[0]}\n${JSON.stringify({ prompt: 'x', image: 'nope.png', answer: 1 })}\n`,
    );
    await expect(
      loadDatasetTask({ trainFile: join(folder, 'broken.jsonl'), rewards: [{ name: 'count-answer' }] }),
    ).rejects.toThrow(/broken\.jsonl line 2, column "image": image file not found: nope\.png/);
  });
});
