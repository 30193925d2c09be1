/**
 * Hostile dataset files (issue 36), read as `grpo train --data` reads them (`loadExamples`): a row
 * or a gzip bomb past the byte limits, empty and header-only files, files that are not what their
 * name says or are cut short, invalid UTF-8, nulls and numbers where a prompt should be. Each must
 * be refused with the file, the line or row and (where it has one) the column, never by running
 * out of memory or decoding bytes into replacement characters.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadExamples } from './dataset-task.js';
import { readRowList } from './readers.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-hostile-data-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const write = (name: string, content: string | Buffer): string => {
  const path = join(directory, name);
  writeFileSync(path, content);
  return path;
};
const fixture = (name: string) => testFixture('datasets', name);
const row = (index: number) => JSON.stringify({ prompt: `What is ${index} + 1?`, answer: String(index + 1) });
const validRows = (count: number) => Array.from({ length: count }, (_, index) => row(index));

describe('byte limits', () => {
  it('a row past the default 1 MiB among valid rows is refused with its file and line', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(2 * 1024 * 1024), answer: '1' });
    const path = write('big-row.jsonl', [...validRows(20), big, ...validRows(20)].join('\n'));
    await expect(loadExamples(path)).rejects.toThrow(
      'big-row.jsonl line 21: longer than 1048576 bytes (maxRowBytes); raise taskOptions.maxRowBytes',
    );
    // The limit is an option: the same file reads whole under a higher one.
    expect(await loadExamples(path, { maxRowBytes: 4 * 1024 * 1024 })).toHaveLength(41);
  });

  it('a gzip that expands to one 2 GiB line is refused after the first MiB, not held as a string', async () => {
    // 128 concatenated gzip members of 16 MiB of "a" each: valid gzip, 2 GiB of text, no line break.
    const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, 'a'));
    const path = write('bomb.jsonl.gz', Buffer.concat(Array.from({ length: 128 }, () => member)));
    await expect(loadExamples(path)).rejects.toThrow(/^bomb\.jsonl\.gz line 1: longer than 1048576 bytes/);
  });

  it('the total limit stops a file of many small rows, naming the line it reached', async () => {
    const path = write('many.jsonl', validRows(1000).join('\n'));
    await expect(loadExamples(path, { maxTotalBytes: 10_000 })).rejects.toThrow(
      /^many\.jsonl: more than 10000 bytes of text by line \d+ \(maxTotalBytes\)/,
    );
  });

  it('CSV records, JSON rows and Parquet rows have the same limits', async () => {
    const csv = write('long.csv', `prompt,answer\nshort,1\n"${'y'.repeat(5000)}",2\n`);
    await expect(readRowList(csv, { maxRowBytes: 1000 })).rejects.toThrow(/^long\.csv line 3: longer than 1000 bytes/);
    // A quoted line break spreads a record over lines; csv-parse bounds the record itself.
    const spread = write('spread.csv', `prompt,answer\n"${'z\n'.repeat(800)}",2\n`);
    await expect(readRowList(spread, { maxRowBytes: 1000 })).rejects.toThrow(/^spread\.csv: .*1000/);
    const json = write('long.json', JSON.stringify([{ prompt: 'a' }, { prompt: 'b'.repeat(5000) }]));
    await expect(readRowList(json, { maxRowBytes: 1000 })).rejects.toThrow(
      /^long\.json row 2: \d+ bytes, longer than 1000/,
    );
    await expect(readRowList(json, { maxTotalBytes: 1000 })).rejects.toThrow(/^long\.json: more than 1000 bytes/);
    const jsonBomb = write('bomb.json.gz', gzipSync(`[${'{"prompt":"a"},'.repeat(100_000)}{}]`));
    await expect(readRowList(jsonBomb, { maxTotalBytes: 100_000 })).rejects.toThrow(
      /^bomb\.json\.gz: more than 100000 bytes/,
    );
    await expect(readRowList(fixture('tiny.parquet'), { maxRowBytes: 10 })).rejects.toThrow(
      /^tiny\.parquet row 1: \d+ bytes, longer than 10 \(maxRowBytes\)/,
    );
    await expect(readRowList(fixture('tiny.parquet'), { maxTotalBytes: 10 })).rejects.toThrow(
      /^tiny\.parquet: \d+ bytes uncompressed, more than 10 \(maxTotalBytes\)/,
    );
  });
});

describe('files that are not what they say', () => {
  it('an empty file and a header-only file name the file', async () => {
    await expect(loadExamples(write('empty.jsonl', ''))).rejects.toThrow('empty.jsonl: no rows (the file is empty');
    await expect(loadExamples(write('header.csv', 'prompt,answer\n'))).rejects.toThrow(
      'header.csv: no rows (the file is empty, or holds only a header)',
    );
  });

  it('a .gz that is not gzip, and a gzip cut short, name the file (and the line reached)', async () => {
    await expect(loadExamples(write('plain.jsonl.gz', validRows(3).join('\n')))).rejects.toThrow(
      /^plain\.jsonl\.gz: not gzip data \(incorrect header check\)/,
    );
    const whole = gzipSync(validRows(2000).join('\n'));
    await expect(loadExamples(write('cut.jsonl.gz', whole.subarray(0, whole.length - 200)))).rejects.toThrow(
      /^cut\.jsonl\.gz: the gzip data is cut short or damaged after line \d+ \(unexpected end of file\)/,
    );
    await expect(loadExamples(write('cut.csv.gz', gzipSync('prompt\na\nb\n').subarray(0, 15)))).rejects.toThrow(
      /^cut\.csv\.gz: the gzip data is cut short/,
    );
    await expect(loadExamples(write('plain.json.gz', '[{"prompt":"a"}]'))).rejects.toThrow(
      /^plain\.json\.gz: not gzip/,
    );
  });

  it('a Parquet file cut at the head, or with its pages damaged, names the file and the rows', async () => {
    const tiny = readFileSync(fixture('tiny.parquet'));
    await expect(loadExamples(write('headless.parquet', tiny.subarray(100)))).rejects.toThrow(
      'headless.parquet: cannot read as Parquet (it does not start with "PAR1"; cut off at the head?)',
    );
    const damaged = Buffer.from(tiny);
    damaged.fill(0, 4, 120); // the magic stays; the first pages are gone
    await expect(loadExamples(write('damaged.parquet', damaged))).rejects.toThrow(
      /^damaged\.parquet rows 1-2 \(row group 1\): cannot read as Parquet/,
    );
  });

  it('a Parquet file whose damage makes the decoder spin is stopped by the time limit, naming the file', async () => {
    // Found by readers-fuzz.test.ts: three bytes in a run-length header ask hyparquet for ~2^31
    // repeats, minutes of decoding for a 713-byte file. The decoder runs in a worker that is stopped.
    const spinning = Buffer.from(readFileSync(fixture('tiny.parquet')));
    spinning.set([0x15, 0xe3, 0x15], 104);
    await expect(loadExamples(write('spinning.parquet', spinning), { parquetTimeoutMs: 2000 })).rejects.toThrow(
      /^spinning\.parquet.*: cannot read as Parquet \(decoding took over 2\.0 s; the file is damaged or hostile\)/,
    );
  }, 30_000);
});

describe('cells that are not text', () => {
  it('invalid UTF-8 is refused with file, line and column, in every text format', async () => {
    const bad = Buffer.concat([
      Buffer.from('{"prompt":"ok"}\n{"prompt":"bad '),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(' bytes"}\n'),
    ]);
    await expect(loadExamples(write('bad.jsonl', bad))).rejects.toThrow(
      'bad.jsonl line 2 column 16: invalid UTF-8 (byte 0xff)',
    );
    await expect(loadExamples(write('bad.jsonl.gz', gzipSync(bad)))).rejects.toThrow('bad.jsonl.gz line 2 column 16');
    const csv = Buffer.concat([
      Buffer.from('prompt,answer\nh\u00e9llo,1\nbad '),
      Buffer.from([0xc3, 0x28]),
      Buffer.from(',2\n'),
    ]);
    await expect(loadExamples(write('bad.csv', csv))).rejects.toThrow(
      'bad.csv line 3 column 5: invalid UTF-8 (byte 0xc3)',
    );
    const json = Buffer.concat([
      Buffer.from('[\n{"prompt": "\u00e9'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('"}]'),
    ]);
    await expect(loadExamples(write('bad.json', json))).rejects.toThrow(
      'bad.json line 2 column 14: invalid UTF-8 (byte 0xed)',
    );
  });

  it('a null prompt says so (the column exists); a numeric prompt is refused unless converting is asked for', async () => {
    await expect(loadExamples(fixture('nulls.parquet'), { promptColumn: 'question' })).rejects.toThrow(
      'nulls.parquet row 2: column "question" is empty (null); no prompt',
    );
    const numbers = write('numbers.jsonl', '{"prompt": 12, "answer": 13}\n{"prompt": true}\n');
    await expect(loadExamples(numbers)).rejects.toThrow(
      `numbers.jsonl line 1: column "prompt" holds number 12, not text; set nonTextPrompts: 'convert' to use it as text`,
    );
    const converted = await loadExamples(numbers, { nonTextPrompts: 'convert' });
    expect(converted.map((example) => [example.prompt, example.answer])).toEqual([
      ['12', '13'], // an answer that is a number was always taken as its text
      ['true', undefined],
    ]);
    await expect(
      loadExamples(write('object.jsonl', '{"prompt": {"a": 1}}\n'), { nonTextPrompts: 'convert' }),
    ).rejects.toThrow('object.jsonl line 1: column "prompt" holds object, not text');
  });
});
