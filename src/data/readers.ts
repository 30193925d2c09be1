/**
 * Dataset file readers: JSONL, JSON (an array of rows), CSV, TSV and Parquet, the text formats also
 * gzipped (`.gz`). Each yields rows as plain objects with where they came from ("data.jsonl line
 * 17"), so every later error can name the file and the row.
 *
 * Why streaming: a 1 GB JSONL or CSV file is read line by line / record by record (node streams,
 * `csv-parse`), and Parquet one row group at a time (`hyparquet`), so reading the first rows never
 * needs the whole file as strings. A JSON array is one document and is parsed whole. CSV is parsed
 * a chunk (64 KiB) at a time, so a malformed record in the same chunk as the rows asked for still
 * fails the read.
 *
 * Is not: the mapping of columns to prompts and answers (`examples.ts`) or a network client.
 */
import { createReadStream, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip, gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';

/** File formats the readers understand; `.gz` is accepted on top of the text ones. */
export const datasetFormats = ['jsonl', 'json', 'csv', 'tsv', 'parquet'] as const;
export type DatasetFormat = (typeof datasetFormats)[number];

/** One row of a dataset file and where it came from (for error messages). */
export interface DatasetRow {
  fields: Record<string, unknown>;
  /** "file.jsonl line 17", "file.csv row 3 (line 4)", "file.parquet row 12" (1-based). */
  source: string;
}

/** Options of {@link readRows}. */
export interface ReadOptions {
  /** Overrides the format the extension implies (`.jsonl`, `.json`, `.csv`, `.tsv`, `.parquet`). */
  format?: DatasetFormat;
  /** Overrides gzip detection (default: the name ends in `.gz`). */
  gzip?: boolean;
}

/** The format and compression a path implies, or the overrides; throws for an unknown extension. */
export function datasetFormatOf(path: string, options: ReadOptions = {}): { format: DatasetFormat; gzip: boolean } {
  const gzip = options.gzip ?? path.toLowerCase().endsWith('.gz');
  const name = path.toLowerCase().replace(/\.gz$/, '');
  const extension = name.slice(name.lastIndexOf('.') + 1);
  const format = options.format ?? datasetFormats.find((known) => known === extension);
  if (!format)
    throw new Error(
      `${path}: unknown dataset format ".${extension}"; use ${datasetFormats.map((known) => `.${known}`).join(', ')} (optionally .gz), or set the format`,
    );
  if (format === 'parquet' && gzip)
    throw new Error(`${path}: a gzipped Parquet file is not supported (Parquet compresses its own pages)`);
  return { format, gzip };
}

/** Streams the rows of a dataset file in order; errors name the file, line or row, and the problem. */
export async function* readRows(path: string, options: ReadOptions = {}): AsyncGenerator<DatasetRow> {
  const { format, gzip } = datasetFormatOf(path, options);
  const name = basename(path);
  if (format === 'jsonl') yield* readJsonLines(path, name, gzip);
  else if (format === 'json') yield* readJsonArray(path, name, gzip);
  else if (format === 'parquet') yield* readParquet(path, name);
  else yield* readDelimited(path, name, gzip, format === 'tsv' ? '\t' : ',');
}

/** The first `count` rows (stops reading there), or every row when `count` is omitted. */
export async function readRowList(path: string, options: ReadOptions & { count?: number } = {}): Promise<DatasetRow[]> {
  const rows: DatasetRow[] = [];
  if (options.count !== undefined && options.count <= 0) return rows;
  for await (const row of readRows(path, options)) {
    rows.push(row);
    if (rows.length === options.count) break;
  }
  return rows;
}

function openText(path: string, gzip: boolean): Readable {
  const file = createReadStream(path);
  if (!gzip) return file;
  const gunzip = createGunzip();
  // A missing file must surface as the reader's error, not as an unhandled stream error.
  file.on('error', (error) => gunzip.destroy(error));
  return file.pipe(gunzip);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}

function asObject(value: unknown, source: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${source}: a row must be an object of columns, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

async function* readJsonLines(path: string, name: string, gzip: boolean): AsyncGenerator<DatasetRow> {
  const stream = openText(path, gzip);
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let lineNumber = 0;
  try {
    for await (const read of lines) {
      lineNumber++;
      // A byte-order mark (files saved by some Windows editors) is not part of the JSON.
      const line = lineNumber === 1 && read.startsWith('\uFEFF') ? read.slice(1) : read;
      if (line.trim() === '') continue;
      const source = `${name} line ${lineNumber}`;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new Error(`${source}: invalid JSON (${(error as Error).message})`);
      }
      yield { fields: asObject(value, source), source };
    }
  } finally {
    lines.close();
    stream.destroy();
  }
}

async function* readJsonArray(path: string, name: string, gzip: boolean): AsyncGenerator<DatasetRow> {
  const bytes = readFileSync(path);
  let value: unknown;
  try {
    value = JSON.parse((gzip ? gunzipSync(bytes) : bytes).toString('utf8'));
  } catch (error) {
    throw new Error(`${name}: invalid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value))
    throw new Error(
      `${name}: a .json dataset must be an array of rows, got ${describe(value)} (use .jsonl for one row per line)`,
    );
  for (let index = 0; index < value.length; index++) {
    const source = `${name} row ${index + 1}`;
    yield { fields: asObject(value[index], source), source };
  }
}

async function* readDelimited(
  path: string,
  name: string,
  gzip: boolean,
  delimiter: string,
): AsyncGenerator<DatasetRow> {
  const stream = openText(path, gzip);
  // The header names the columns; values stay strings (a CSV cell has no type).
  const parser = stream.pipe(parseCsv({ delimiter, columns: true, bom: true, skip_empty_lines: true, info: true }));
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: Record<string, string>;
      info: { records: number; lines: number };
    }>) {
      yield { fields: record, source: `${name} row ${info.records} (line ${info.lines})` };
    }
  } catch (error) {
    throw new Error(`${name}: ${(error as Error).message}`);
  } finally {
    parser.destroy();
    stream.destroy();
  }
}

/** Parquet INT64 arrives as bigint; rows should be plain JSON-like values for rewards and logs. */
function plainValue(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(plainValue);
  if (value !== null && typeof value === 'object' && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, plainValue(inner)]));
  }
  return value;
}

async function* readParquet(path: string, name: string): AsyncGenerator<DatasetRow> {
  let file;
  let metadata;
  try {
    file = await asyncBufferFromFile(path);
    metadata = await parquetMetadataAsync(file);
  } catch (error) {
    throw new Error(`${name}: cannot read as Parquet (${(error as Error).message})`);
  }
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    // utf8: false — columns annotated as strings stay strings; plain binary (a Hugging Face Image
    // feature's `bytes`) stays bytes instead of being decoded as (lossy) UTF-8 text.
    const rows = await parquetReadObjects({ file, metadata, rowStart, rowEnd, utf8: false });
    for (let offset = 0; offset < rows.length; offset++) {
      yield {
        fields: plainValue(rows[offset]) as Record<string, unknown>,
        source: `${name} row ${rowStart + offset + 1}`,
      };
    }
    rowStart = rowEnd;
  }
}
