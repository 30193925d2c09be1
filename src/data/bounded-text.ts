/**
 * Bounded reading of a dataset file's text: its bytes split into lines with a per-line and a
 * total byte limit, each line checked to be UTF-8 before it becomes a string, and gzip failures
 * named. Every error names the file, and where it can the line and the column.
 *
 * Why bytes first: node's `readline` builds a whole line as a string before anyone can look at
 * it, so one 2 GB line (a gzip bomb) ends in `RangeError: Invalid string length` or a heap out of
 * memory. Here a line is refused as soon as it passes the limit, while still in pieces; and a
 * string decoded with replacement characters would hide invalid bytes, so they are refused.
 *
 * Is not: a parser of any format (readers.ts), or a bound on what the rows become (examples.ts).
 */
import { isUtf8 } from 'node:buffer';

/** How much of a dataset file is read before it is refused. */
export interface ReadLimits {
  /** Bytes of one line (JSONL), record (CSV/TSV) or row (JSON, Parquet). */
  maxRowBytes: number;
  /** Bytes of text in all (after gunzip), or the uncompressed size of a Parquet file's row groups. */
  maxTotalBytes: number;
}

/** 1 MiB a row: a quarter of a million tokens, far past any context this library trains on. */
export const DEFAULT_MAX_ROW_BYTES = 1024 * 1024;
/** 1 GiB in all: the rows are then held in memory as strings, which takes about as much again. */
export const DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024;

/** The index of the first byte of `bytes[start, end)` that is not part of valid UTF-8, or -1 (WHATWG rules: no overlongs, surrogates or code points past U+10FFFF; a sequence cut off by `end` is invalid). */
export function firstInvalidUtf8(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let index = start;
  while (index < end) {
    const lead = bytes[index]!;
    if (lead < 0x80) {
      index++;
      continue;
    }
    let following: number;
    let lower = 0x80;
    let upper = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) following = 1;
    else if (lead >= 0xe0 && lead <= 0xef) {
      following = 2;
      if (lead === 0xe0) lower = 0xa0; // overlong
      if (lead === 0xed) upper = 0x9f; // UTF-16 surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      following = 3;
      if (lead === 0xf0) lower = 0x90; // overlong
      if (lead === 0xf4) upper = 0x8f; // past U+10FFFF
    } else return index;
    if (index + following >= end) return index;
    for (let offset = 1; offset <= following; offset++) {
      const byte = bytes[index + offset]!;
      if (byte < (offset === 1 ? lower : 0x80) || byte > (offset === 1 ? upper : 0xbf)) return index;
    }
    index += following + 1;
  }
  return -1;
}

/** The text of `bytes` if it is all UTF-8; otherwise an error naming `name`, the line and column of the first bad byte. */
export function decodeUtf8(bytes: Buffer, name: string): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const offset = firstInvalidUtf8(bytes);
  const before = offset === 0 ? -1 : bytes.lastIndexOf(10, offset - 1);
  const line = 1 + (before === -1 ? 0 : countByte(bytes, 10, 0, before + 1));
  throw invalidUtf8(name, line, countCharacters(bytes, before + 1, offset) + 1, bytes[offset]!);
}

function invalidUtf8(name: string, line: number, column: number, byte: number): Error {
  return new Error(
    `${name} line ${line} column ${column}: invalid UTF-8 (byte 0x${byte.toString(16).padStart(2, '0')}); a dataset file must be UTF-8 text`,
  );
}

/** The error of a failed gunzip, named: "not gzip data" before any line came out, "cut short or damaged" after. */
export function gzipError(error: Error, name: string, linesRead: number): Error {
  // zlib's errors carry Z_* codes (Z_DATA_ERROR: not gzip or damaged; Z_BUF_ERROR: cut short).
  if (!((error as NodeJS.ErrnoException).code ?? '').startsWith('Z_')) return error;
  return new Error(
    linesRead === 0 && /header/i.test(error.message)
      ? `${name}: not gzip data (${error.message}); a .gz name needs a gzip file`
      : `${name}: the gzip data is cut short or damaged after line ${linesRead} (${error.message})`,
  );
}

/** Bytes at the end of `bytes` that start a UTF-8 sequence the next chunk must finish (0 to 3). */
function unfinishedTail(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if (byte < 0x80) return 0; // ASCII: nothing open
    if (byte >= 0xc0) {
      const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
      return length > back ? back : 0;
    }
  }
  return 0;
}

/**
 * The bytes of a stream, passed on only once checked: at most `maxTotalBytes` in all, no line
 * longer than `maxRowBytes`, all of it UTF-8 (a sequence split between two chunks is held back
 * until the next one finishes it). A limit is enforced on arrival, so the memory held never
 * exceeds one chunk; every error names `name`, the line and, for bad bytes, the column.
 */
export async function* checkedChunks(
  chunks: AsyncIterable<Buffer>,
  name: string,
  limits: ReadLimits,
): AsyncGenerator<Buffer> {
  let line = 1; // the line the next byte belongs to
  let lineBytes = 0; // bytes of that line before the next byte
  let lineCharacters = 0; // its characters, for the column of a bad byte
  let total = 0;
  let carry: Buffer = Buffer.alloc(0);
  const tooLong = (): Error =>
    new Error(
      `${name} line ${line}: longer than ${limits.maxRowBytes} bytes (maxRowBytes); raise taskOptions.maxRowBytes to read it`,
    );
  const invalid = (bytes: Buffer, offset: number): Error => {
    const before = offset === 0 ? -1 : bytes.lastIndexOf(10, offset - 1);
    const lines = before === -1 ? 0 : countByte(bytes, 10, 0, before + 1);
    const column = (lines === 0 ? lineCharacters : 0) + countCharacters(bytes, before + 1, offset) + 1;
    return invalidUtf8(name, line + lines, column, bytes[offset]!);
  };
  try {
    for await (const chunk of chunks) {
      total += chunk.length;
      if (total > limits.maxTotalBytes)
        throw new Error(
          `${name}: more than ${limits.maxTotalBytes} bytes of text by line ${line} (maxTotalBytes); read fewer rows (maxRows) or raise taskOptions.maxTotalBytes`,
        );
      const bytes = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
      const end = bytes.length - unfinishedTail(bytes);
      const checked = bytes.subarray(0, end);
      // Of a bad byte and a line past the limit, the one first in the file is reported, so the
      // error is the same whatever the chunk boundaries (file reads and gunzip cut differently).
      const bad = isUtf8(checked) ? -1 : firstInvalidUtf8(bytes, 0, end);
      const badByte = bad === -1 ? null : invalid(bytes, bad); // before the line counters move on
      const scanned = bad === -1 ? end : bad;
      for (let start = 0; ;) {
        const found = checked.indexOf(10, start);
        const next = found !== -1 && found < scanned ? found : -1;
        lineBytes += (next === -1 ? scanned : next) - start;
        if (lineBytes > limits.maxRowBytes) throw tooLong();
        if (next === -1) {
          if (badByte) throw badByte;
          lineCharacters += countCharacters(checked, start, end);
          break;
        }
        line++;
        lineBytes = 0;
        lineCharacters = 0;
        start = next + 1;
      }
      carry = Buffer.from(bytes.subarray(end));
      if (checked.length > 0) yield checked;
    }
  } catch (error) {
    throw gzipError(error as Error, name, line - 1);
  }
  if (carry.length > 0) throw invalid(carry, 0);
}

function countByte(bytes: Uint8Array, value: number, start: number, end: number): number {
  let count = 0;
  for (let index = bytes.indexOf(value, start); index !== -1 && index < end; index = bytes.indexOf(value, index + 1))
    count++;
  return count;
}

/** Characters of valid UTF-8 `bytes[start, end)`: every byte but the continuation bytes starts one. */
function countCharacters(bytes: Uint8Array, start: number, end: number): number {
  let count = 0;
  for (let index = start; index < end; index++) if ((bytes[index]! & 0xc0) !== 0x80) count++;
  return count;
}

/** One line of text and its 1-based number; `text` has no line break but keeps a '\r' before it. */
export interface TextLine {
  text: string;
  line: number;
}

/** The lines of a byte stream, checked and bounded by {@link checkedChunks}. */
export async function* boundedLines(
  chunks: AsyncIterable<Buffer>,
  name: string,
  limits: ReadLimits,
): AsyncGenerator<TextLine> {
  let pieces: Buffer[] = [];
  let line = 1;
  const finish = (): TextLine => {
    const text = Buffer.concat(pieces).toString('utf8');
    pieces = [];
    return { text, line: line++ };
  };
  for await (const chunk of checkedChunks(chunks, name, limits)) {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      pieces.push(chunk.subarray(start, end));
      yield finish();
      start = end + 1;
    }
    if (start < chunk.length) pieces.push(chunk.subarray(start));
  }
  if (pieces.length > 0) yield finish();
}
