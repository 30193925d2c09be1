/**
 * Reads a chat template named by a path (`model.chatTemplate`, `--chat-template`). Its own file so the
 * page bundle of `grpo web` can replace it (src/browser/template-file.ts): a browser tab has no files.
 */
import { existsSync, readFileSync } from 'node:fs';

/** The template text of a .jinja/.j2/.txt file; a missing file names the setting. */
export function readTemplateFile(path: string): string {
  if (!existsSync(path)) throw new Error(`model.chatTemplate (--chat-template): ${path} does not exist`);
  return readFileSync(path, 'utf8');
}
