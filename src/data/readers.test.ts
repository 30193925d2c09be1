/** Tests of the dataset readers: each format (and gzip) reads the same rows; bad rows name file, line and problem. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { datasetFormatOf, readRowList, readRows } from './readers.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const directory = mkdtempSync(join(tmpdir(), 'grpo-readers-'));
const write = (name: string, text: string | Buffer): string => {
  const path = join(directory, name);
  writeFileSync(path, text);
  return path;
};
const rows = [
  { question: 'What is 2+3?', answer: '5' },
  { question: 'Say "hi", then stop', answer: 'hi' },
  { question: 'Tab\there', answer: '6' },
];
const fieldsOf = async (path: string, options = {}) => (await readRowList(path, options)).map((row) => row.fields);

describe('readRows', () => {
  const jsonl = rows.map((row) => JSON.stringify(row)).join('\n') + '\n';
  const csv = 'question,answer\n"What is 2+3?",5\n"Say ""hi"", then stop",hi\n"Tab\there",6\n';
  const tsv = 'question\tanswer\nWhat is 2+3?\t5\n"Say ""hi"", then stop"\thi\n"Tab\there"\t6\n';

  it.each([
    ['rows.jsonl', jsonl],
    ['rows.jsonl.gz', gzipSync(jsonl)],
    ['bom.jsonl', '\uFEFF' + jsonl.replace(/\n/g, '\r\n')],
    ['rows.json', JSON.stringify(rows)],
    ['rows.json.gz', gzipSync(JSON.stringify(rows))],
    ['rows.csv', csv],
    ['rows.csv.gz', gzipSync(csv)],
    ['rows.tsv', tsv],
    ['rows.tsv.gz', gzipSync(tsv)],
  ])('%s reads every row in order', async (name, text) => {
    expect(await fieldsOf(write(name, text))).toEqual(rows);
  });

  it('a Parquet file is read row group by row group (the fixture has groups of 2 and 1 rows); INT64 becomes a number', async () => {
    const path = testFixture('datasets/tiny.parquet');
    const read = await readRowList(path);
    expect(read.map((row) => row.fields)).toEqual([
      { question: 'What is 2+3?', answer: '5', id: 1 },
      { question: 'What is 7*6?', answer: '42', id: 2 },
      { question: 'What is 10-4?', answer: '6', id: 3 },
    ]);
    expect(read[2]!.source).toBe('tiny.parquet row 3');
    expect((await readRowList(path, { count: 1 })).length).toBe(1);
  });

  it('sources name the file and the line or row; blank JSONL lines are skipped but counted', async () => {
    const read = await readRowList(write('blank.jsonl', '{"a":1}\n\n{"a":2}\n'));
    expect(read.map((row) => row.source)).toEqual(['blank.jsonl line 1', 'blank.jsonl line 3']);
    const csvRows = await readRowList(write('sources.csv', 'a,b\n1,"two\nlines"\n3,4\n'));
    expect(csvRows.map((row) => row.source)).toEqual(['sources.csv row 1 (line 3)', 'sources.csv row 2 (line 4)']);
  });

  it('reads only the first rows when asked, and stops early', async () => {
    // A bad line after the first row is never reached when one row is asked for.
    const path = write('early.jsonl', '{"a":1}\nnot json\n');
    expect(await fieldsOf(path, { count: 1 })).toEqual([{ a: 1 }]);
    await expect(fieldsOf(path)).rejects.toThrow('early.jsonl line 2: invalid JSON');
    // CSV is parsed a chunk (64 KiB) at a time: a bad record 400 KB in is not reached by the first rows.
    const csvPath = write('early.csv.gz', gzipSync(`a,b\n${'1,2\n'.repeat(100_000)}3\n`));
    expect(await fieldsOf(csvPath, { count: 2 })).toEqual([
      { a: '1', b: '2' },
      { a: '1', b: '2' },
    ]);
    await expect(fieldsOf(csvPath)).rejects.toThrow(/^early\.csv\.gz: .*line 100002/);
  });

  it('bad rows name the file, the line or row, and what is wrong', async () => {
    await expect(fieldsOf(write('bad.jsonl', '{"a":1}\n{"a":\n'))).rejects.toThrow(/^bad\.jsonl line 2: invalid JSON/);
    await expect(fieldsOf(write('array.jsonl', '{"a":1}\n[1,2]\n'))).rejects.toThrow(
      'array.jsonl line 2: a row must be an object of columns, got an array',
    );
    await expect(fieldsOf(write('number.json', '[{"a":1}, 7]'))).rejects.toThrow(
      'number.json row 2: a row must be an object of columns, got number',
    );
    await expect(fieldsOf(write('object.json', '{"a":1}'))).rejects.toThrow(
      'object.json: a .json dataset must be an array of rows, got object',
    );
    await expect(fieldsOf(write('short.csv', 'a,b\n1,2\n3\n'))).rejects.toThrow(/^short\.csv: .*line 3/);
    await expect(fieldsOf(write('broken.parquet', 'not parquet'))).rejects.toThrow(
      /^broken\.parquet: cannot read as Parquet/,
    );
    await expect(fieldsOf(join(directory, 'missing.jsonl.gz'))).rejects.toThrow(/ENOENT/);
  });
});

describe('datasetFormatOf', () => {
  it('chooses the format by extension, gzip by .gz, and takes overrides', () => {
    expect(datasetFormatOf('a/b.JSONL.gz')).toEqual({ format: 'jsonl', gzip: true });
    expect(datasetFormatOf('b.tsv')).toEqual({ format: 'tsv', gzip: false });
    expect(datasetFormatOf('b.txt', { format: 'csv' })).toEqual({ format: 'csv', gzip: false });
    expect(() => datasetFormatOf('b.txt')).toThrow('b.txt: unknown dataset format ".txt"');
    expect(() => datasetFormatOf('b.parquet.gz')).toThrow(/gzipped Parquet/);
  });

  it('an override reads a file whatever its name', async () => {
    const path = write('rows.data', 'x;y\n1;2\n');
    await expect(fieldsOf(path)).rejects.toThrow(/unknown dataset format/);
    expect(await fieldsOf(write('rows.txt', '{"x":1}\n'), { format: 'jsonl' })).toEqual([{ x: 1 }]);
    expect(await readRows(write('rows2.txt', 'x\ty\n1\t2\n'), { format: 'tsv' }).next()).toMatchObject({
      value: { fields: { x: '1', y: '2' } },
    });
  });
});
