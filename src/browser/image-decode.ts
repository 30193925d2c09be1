/**
 * The page bundle's stand-in for src/model/vision/image-decode.ts, which decodes with sharp (libvips,
 * a native module): the page refuses images with one sentence instead.
 */
import type * as NodeImageDecode from '../model/vision/image-decode.js';

export const loadImage: typeof NodeImageDecode.loadImage = (_source, where) =>
  Promise.reject(new Error(`${where}: decoding images needs sharp, which runs only in Node, not in a browser tab`));
