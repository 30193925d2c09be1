/**
 * The page bundle's stand-in for src/data/image-files.ts: a browser tab has no file system, so an
 * image path in a row names no file (base64 and data: URLs still work).
 */
import type * as NodeImageFiles from '../data/image-files.js';

export const imageFile: typeof NodeImageFiles.imageFile = (value) => ({ path: value, exists: false, relative: false });
