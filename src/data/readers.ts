/**
 * Dataset file readers: JSONL, JSON (an array of rows), CSV, TSV and Parquet, the text formats also
 * gzipped (`.gz`). Each yields rows as plain objects with where they came from ("data.jsonl line
 * 17"), so every later error can name the file and the row.
 *
 * Why streaming: a 1 GB JSONL or CSV file is read line by line / record by record (node streams,
 * `csv-parse`), and Parquet one row group at a time (`hyparquet`, in a worker with a time limit:
 * parquet-worker.ts), so reading the first rows never
 * needs the whole file as strings. A JSON array is one document and is parsed whole. CSV is parsed
 * a chunk (64 KiB) at a time, so a malformed record in the same chunk as the rows asked for still
 * fails the read.
 *
 * Bounds (`ReadLimits`, bounded-text.ts): a row longer than `maxRowBytes` or a file with more than
 * `maxTotalBytes` of text is refused as soon as the limit is passed, naming the file and line;
 * text must be UTF-8 (an invalid byte is refused with its line and column, never replaced).
 *
 * Is not: the mapping of columns to prompts and answers (`examples.ts`) or a network client.
 */
import { closeSync, createReadStream, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip, gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse';
import {
  boundedLines,
  checkedChunks,
  decodeUtf8,
  DEFAULT_MAX_ROW_BYTES,
  DEFAULT_MAX_TOTAL_BYTES,
  gzipError,
  type ReadLimits,
} from './bounded-text.js';
import { ParquetWorker } from './parquet-worker.js';
import { datasetFormats, type DatasetFormat } from './examples.js';

/** File formats the readers understand; `.gz` is accepted on top of the text ones. */

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
  /** Longest row in bytes (default 1 MiB): a JSONL line, a CSV/TSV record, a JSON or Parquet row. */
  maxRowBytes?: number;
  /** Most bytes of text read from the file, after gunzip (default 1 GiB); for Parquet, its uncompressed size. */
  maxTotalBytes?: number;
  /** Parquet: time allowed to decode a row group, before 1 s per MiB is added (default 10 000 ms). */
  parquetTimeoutMs?: number;
}

/** A .json file is one string before it is parsed; V8 strings stop at about 512 MiB. */
const MAX_JSON_DOCUMENT_BYTES = 512 * 1024 * 1024;

function limitsOf(options: ReadOptions): ReadLimits {
  return {
    maxRowBytes: options.maxRowBytes ?? DEFAULT_MAX_ROW_BYTES,
    maxTotalBytes: options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES,
  };
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
  const limits = limitsOf(options);
  if (format === 'jsonl') yield* readJsonLines(path, name, gzip, limits);
  else if (format === 'json') yield* readJsonArray(path, name, gzip, limits);
  else if (format === 'parquet') yield* readParquet(path, name, limits, options.parquetTimeoutMs);
  else yield* readDelimited(path, name, gzip, format === 'tsv' ? '\t' : ',', limits);
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

async function* readJsonLines(
  path: string,
  name: string,
  gzip: boolean,
  limits: ReadLimits,
): AsyncGenerator<DatasetRow> {
  const stream = openText(path, gzip);
  try {
    for await (const { text, line: lineNumber } of boundedLines(stream, name, limits)) {
      // A byte-order mark (files saved by some Windows editors) is not part of the JSON.
      const line = lineNumber === 1 && text.startsWith('\uFEFF') ? text.slice(1) : text;
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
    stream.destroy();
  }
}

/** The whole file's bytes, gunzipped, refused past the total limit (and past what one string can hold). */
function readWhole(path: string, name: string, gzip: boolean, limits: ReadLimits): Buffer {
  const limit = Math.min(limits.maxTotalBytes, MAX_JSON_DOCUMENT_BYTES);
  const tooBig = () =>
    new Error(
      `${name}: more than ${limit} bytes of text (${limit === limits.maxTotalBytes ? 'maxTotalBytes' : 'a .json file is parsed whole; use .jsonl for bigger files'})`,
    );
  if (!gzip && statSync(path).size > limit) throw tooBig();
  const bytes = readFileSync(path);
  if (!gzip) return bytes;
  try {
    return gunzipSync(bytes, { maxOutputLength: limit });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooBig();
    throw gzipError(error as Error, name, 0);
  }
}

async function* readJsonArray(
  path: string,
  name: string,
  gzip: boolean,
  limits: ReadLimits,
): AsyncGenerator<DatasetRow> {
  const text = decodeUtf8(readWhole(path, name, gzip, limits), name);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${name}: invalid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value))
    throw new Error(
      `${name}: a .json dataset must be an array of rows, got ${describe(value)} (use .jsonl for one row per line)`,
    );
  for (let index = 0; index < value.length; index++) {
    const source = `${name} row ${index + 1}`;
    const fields = asObject(value[index], source);
    const bytes = Buffer.byteLength(JSON.stringify(fields));
    if (bytes > limits.maxRowBytes)
      throw new Error(`${source}: ${bytes} bytes, longer than ${limits.maxRowBytes} (maxRowBytes)`);
    yield { fields, source };
  }
}

async function* readDelimited(
  path: string,
  name: string,
  gzip: boolean,
  delimiter: string,
  limits: ReadLimits,
): AsyncGenerator<DatasetRow> {
  const stream = openText(path, gzip);
  // Bytes are bounded and checked for UTF-8 first, then parsed; a record spread over several
  // lines (a quoted line break) is bounded by csv-parse's own record limit.
  const checked = Readable.from(checkedChunks(stream, name, limits));
  // The header names the columns; values stay strings (a CSV cell has no type).
  const parser = checked.pipe(
    parseCsv({
      delimiter,
      columns: true,
      bom: true,
      skip_empty_lines: true,
      info: true,
      max_record_size: limits.maxRowBytes,
    }),
  );
  checked.on('error', (error) => parser.destroy(error)); // a bounds error must reach the reader
  try {
    for await (const { record, info } of parser as AsyncIterable<{
      record: Record<string, string>;
      info: { records: number; lines: number };
    }>) {
      yield { fields: record, source: `${name} row ${info.records} (line ${info.lines})` };
    }
  } catch (error) {
    const message = (error as Error).message;
    throw new Error(message.startsWith(name) ? message : `${name}: ${message}`);
  } finally {
    parser.destroy();
    checked.destroy();
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

/** Bytes of a row's text and binary values, the measure of `maxRowBytes` for a Parquet row. */
function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (value instanceof Uint8Array) return value.length;
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + valueBytes(item), 0);
  if (value !== null && typeof value === 'object' && !(value instanceof Date))
    return Object.entries(value).reduce((sum, [key, item]) => sum + key.length + valueBytes(item), 0);
  return 8;
}

/** Refuses a file that does not start with Parquet's magic bytes (its footer may still read: a file cut at the head). */
function checkParquetHead(path: string, name: string): void {
  const head = Buffer.alloc(4);
  const descriptor = openSync(path, 'r');
  try {
    readSync(descriptor, head, 0, 4, 0);
  } finally {
    closeSync(descriptor);
  }
  if (head.toString('latin1') !== 'PAR1')
    throw new Error(`${name}: cannot read as Parquet (it does not start with "PAR1"; cut off at the head?)`);
}

async function* readParquet(
  path: string,
  name: string,
  limits: ReadLimits,
  timeoutMs: number | undefined,
): AsyncGenerator<DatasetRow> {
  checkParquetHead(path, name);
  // Decoded in a worker with a time limit: hyparquet trusts the counts a damaged file states.
  const worker = new ParquetWorker(path, timeoutMs);
  try {
    let layout;
    try {
      layout = await worker.layout();
    } catch (error) {
      throw new Error(`${name}: cannot read as Parquet (${(error as Error).message})`);
    }
    const total = layout.rowGroups.reduce((sum, group) => sum + group.bytes, 0);
    if (total > limits.maxTotalBytes)
      throw new Error(
        `${name}: ${total} bytes uncompressed, more than ${limits.maxTotalBytes} (maxTotalBytes); raise taskOptions.maxTotalBytes`,
      );
    let rowStart = 0;
    for (const [index, group] of layout.rowGroups.entries()) {
      const rowEnd = rowStart + group.rows;
      let rows;
      try {
        rows = await worker.rows(rowStart, rowEnd, group.bytes);
      } catch (error) {
        throw new Error(
          `${name} rows ${rowStart + 1}-${rowEnd} (row group ${index + 1}): cannot read as Parquet (${(error as Error).message})`,
        );
      }
      for (let offset = 0; offset < rows.length; offset++) {
        const source = `${name} row ${rowStart + offset + 1}`;
        const bytes = valueBytes(rows[offset]);
        if (bytes > limits.maxRowBytes)
          throw new Error(`${source}: ${bytes} bytes, longer than ${limits.maxRowBytes} (maxRowBytes)`);
        yield { fields: plainValue(rows[offset]) as Record<string, unknown>, source };
      }
      rowStart = rowEnd;
    }
  } finally {
    void worker.close();
  }
}
