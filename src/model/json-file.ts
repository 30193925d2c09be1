/**
 * Reading the JSON files of a checkpoint folder (generation_config.json, tokenizer_config.json, …)
 * with errors that name the file. Is not: config validation (config.ts checks fields).
 */
import { readFileSync } from 'node:fs';

/** The JSON object in `file`; a missing file, bad JSON or a non-object is an error naming the file. */
export function readJsonObject(file: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: cannot read as JSON (${(error as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error(`${file}: must contain a JSON object`);
  return json as Record<string, unknown>;
}
