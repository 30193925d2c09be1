/**
 * Where an image path in a dataset row points: resolved against the data file's folder, and whether
 * a file is there. Is not: reading the image (model/vision/image-decode.ts). The page bundle of
 * `grpo web` replaces this file by src/browser/image-files.ts, since a browser tab has no file system.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';

/** `value` as a path (absolute, or relative to `baseDirectory`) and whether a file exists there. */
export function imageFile(value: string, baseDirectory: string): { path: string; exists: boolean; relative: boolean } {
  const path = isAbsolute(value) ? value : resolve(baseDirectory, value);
  return { path, exists: existsSync(path), relative: !isAbsolute(value) };
}
