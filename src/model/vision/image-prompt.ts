/**
 * The prompt side of Idefics3 / SmolVLM images: each `<image>` placeholder in a prompt's text is
 * replaced by the token string the processor writes for that image (transformers'
 * `processing_idefics3.py`, `get_image_prompt_string`):
 *
 * - split into rows × cols tiles: for each row, for each column
 *   `<fake_token_around_image><row_r_col_c>` + `<image>`×N, then "\n" after each row; then
 *   "\n<fake_token_around_image><global-img>" + `<image>`×N + `<fake_token_around_image>`;
 * - not split (rows = cols = 0): `<fake_token_around_image><global-img>` + `<image>`×N +
 *   `<fake_token_around_image>`.
 *
 * N is the tokens per image frame, (image_size/patch_size)² / scale_factor² (64 for SmolVLM-256M).
 * Is not: tokenization (the tokenizer's added tokens cover these strings) or pixel processing.
 */

/** The special strings of the expansion (Idefics3Processor's defaults). */
export interface ImageTokenStrings {
  /** The placeholder and the repeated image token (`<image>`). */
  image: string;
  /** `<fake_token_around_image>`. */
  fakeAround: string;
  /** `<global-img>`. */
  globalImage: string;
}

export const defaultImageTokens: ImageTokenStrings = {
  image: '<image>',
  fakeAround: '<fake_token_around_image>',
  globalImage: '<global-img>',
};

/** An image's tile grid as the processor reports it (0 × 0 = one unsplit frame). */
export interface ImageLayout {
  rows: number;
  cols: number;
}

/** The text that replaces one `<image>` placeholder, for an image of `rows × cols` tiles (0 × 0: not split). */
export function expandImageTokens(
  rows: number,
  cols: number,
  tokensPerImage: number,
  tokens: ImageTokenStrings = defaultImageTokens,
): string {
  if (!Number.isInteger(tokensPerImage) || tokensPerImage < 1)
    throw new Error(`expandImageTokens: tokensPerImage must be a positive integer, got ${tokensPerImage}`);
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 0 || cols < 0 || (rows === 0) !== (cols === 0))
    throw new Error(`expandImageTokens: rows and cols must both be 0 or both positive integers, got ${rows} × ${cols}`);
  const run = tokens.image.repeat(tokensPerImage);
  const global = `${tokens.fakeAround}${tokens.globalImage}${run}${tokens.fakeAround}`;
  if (rows === 0) return global;
  let text = '';
  for (let row = 1; row <= rows; row++) {
    for (let col = 1; col <= cols; col++) text += `${tokens.fakeAround}<row_${row}_col_${col}>${run}`;
    text += '\n';
  }
  return `${text}\n${global}`;
}

/**
 * Replaces each `<image>` placeholder of `text`, in order, by its image's expansion. The number of
 * placeholders must equal the number of layouts; `where` names the row in that error.
 * @example expandPromptImages('<image>How many?', [{ rows: 0, cols: 0 }], 2)
 * // '<fake_token_around_image><global-img><image><image><fake_token_around_image>How many?'
 */
export function expandPromptImages(
  text: string,
  layouts: readonly ImageLayout[],
  tokensPerImage: number,
  where = 'prompt',
  tokens: ImageTokenStrings = defaultImageTokens,
): string {
  const pieces = text.split(tokens.image);
  const placeholders = pieces.length - 1;
  if (placeholders !== layouts.length)
    throw new Error(
      `${where}: the prompt has ${placeholders} ${tokens.image} placeholder(s) but ${layouts.length} image(s); each image needs one placeholder where it goes`,
    );
  let expanded = pieces[0]!;
  layouts.forEach((layout, index) => {
    expanded += expandImageTokens(layout.rows, layout.cols, tokensPerImage, tokens) + pieces[index + 1]!;
  });
  return expanded;
}
