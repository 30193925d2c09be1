/** The Idefics3 prompt expansion: the exact strings for split and unsplit images, and placeholder/image count errors. */
import { describe, expect, it } from 'vitest';
import { expandImageTokens, expandPromptImages } from './image-prompt.js';

const F = '<fake_token_around_image>';
const G = '<global-img>';
const I = '<image>';

describe('expandImageTokens', () => {
  it('an unsplit image: fake, global, N image tokens, fake', () => {
    expect(expandImageTokens(0, 0, 3)).toBe(`${F}${G}${I}${I}${I}${F}`);
  });
  it('a 2 × 3 grid: rows of tiles each ending in a newline, a blank line, then the global image', () => {
    const tile = (row: number, col: number) => `${F}<row_${row}_col_${col}>${I}${I}`;
    const expected =
      `${tile(1, 1)}${tile(1, 2)}${tile(1, 3)}\n` +
      `${tile(2, 1)}${tile(2, 2)}${tile(2, 3)}\n` +
      `\n${F}${G}${I}${I}${F}`;
    expect(expandImageTokens(2, 3, 2)).toBe(expected);
  });
  it('refuses a half-empty grid and a non-positive token count', () => {
    expect(() => expandImageTokens(0, 2, 4)).toThrow(/both be 0/);
    expect(() => expandImageTokens(1, 1, 0)).toThrow(/tokensPerImage/);
  });
  it('takes other token strings', () => {
    expect(expandImageTokens(0, 0, 1, { image: '<im>', fakeAround: '<f>', globalImage: '<g>' })).toBe('<f><g><im><f>');
  });
});

describe('expandPromptImages', () => {
  it('replaces each placeholder in order by its own layout', () => {
    const text = `User:${I}and${I}?`;
    const expanded = expandPromptImages(
      text,
      [
        { rows: 0, cols: 0 },
        { rows: 1, cols: 2 },
      ],
      1,
    );
    expect(expanded).toBe(`User:${expandImageTokens(0, 0, 1)}and${expandImageTokens(1, 2, 1)}?`);
    expect(expanded.split(I).length - 1).toBe(1 + 3);
  });
  it('a text without images is unchanged', () => expect(expandPromptImages('hello', [], 64)).toBe('hello'));
  it('names the row when placeholders and images disagree', () => {
    expect(() => expandPromptImages(`${I}${I}`, [{ rows: 0, cols: 0 }], 4, 'train.jsonl line 3')).toThrow(
      /train\.jsonl line 3: the prompt has 2 <image> placeholder\(s\) but 1 image\(s\)/,
    );
    expect(() => expandPromptImages('no placeholder', [{ rows: 0, cols: 0 }], 4)).toThrow(/0 <image> placeholder/);
  });
});
