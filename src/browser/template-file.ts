/** The page bundle's stand-in for src/config/template-file.ts: a browser tab reads no template files. */
import type * as NodeTemplateFile from '../config/template-file.js';

export const readTemplateFile: typeof NodeTemplateFile.readTemplateFile = (path) => {
  throw new Error(`model.chatTemplate: ${path} is a file, and a browser tab reads no files; give the template's text`);
};
