/**
 * Tests for the safetensors reader/writer: exact half/bfloat16 conversion against torch's own
 * conversion (fixtures from scripts/reference/make_fixtures.py), byte-exact writing, alignment, and
 * clear errors on truncated or foreign files. Not a test of checkpoint layout (checkpoint.test.ts).
 */
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type StoredTensor,
  encodeSafetensors,
  float16BitsToNumber,
  numberToFloat16Bits,
  readSafetensors,
  readSafetensorsHeader,
  writeSafetensors,
} from './safetensors.js';
import { testFixture } from '../../test/helpers/fixtures.js';

const dtypeFixtures = testFixture('safetensors');
const scratch = mkdtempSync(join(tmpdir(), 'safetensors-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const bitsOf = (data: Float32Array): number[] => Array.from(new Uint32Array(data.buffer, data.byteOffset, data.length));

describe('float16 conversion', () => {
  it('decodes landmark bit patterns exactly', () => {
    expect(float16BitsToNumber(0x0000)).toBe(0);
    expect(Object.is(float16BitsToNumber(0x8000), -0)).toBe(true);
    expect(float16BitsToNumber(0x0001)).toBe(2 ** -24); // smallest subnormal
    expect(float16BitsToNumber(0x03ff)).toBe(1023 * 2 ** -24); // largest subnormal
    expect(float16BitsToNumber(0x0400)).toBe(2 ** -14); // smallest normal
    expect(float16BitsToNumber(0x3c00)).toBe(1);
    expect(float16BitsToNumber(0xc000)).toBe(-2);
    expect(float16BitsToNumber(0x3555)).toBe(0.333251953125);
    expect(float16BitsToNumber(0x7bff)).toBe(65504);
    expect(float16BitsToNumber(0x7c00)).toBe(Infinity);
    expect(float16BitsToNumber(0xfc00)).toBe(-Infinity);
    expect(float16BitsToNumber(0x7e00)).toBeNaN();
    expect(float16BitsToNumber(0x7c01)).toBeNaN();
  });

  it('encodes every finite and infinite half back to its own bits', () => {
    const mismatches: number[] = [];
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = float16BitsToNumber(bits);
      if (Number.isNaN(value)) continue;
      if (numberToFloat16Bits(value) !== bits) mismatches.push(bits);
    }
    expect(mismatches).toEqual([]);
  });

  it('rounds to nearest even, overflows to infinity, and keeps tiny values subnormal', () => {
    expect(numberToFloat16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie → even mantissa 0
    expect(numberToFloat16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even mantissa 2
    expect(numberToFloat16Bits(65519)).toBe(0x7bff);
    expect(numberToFloat16Bits(65520)).toBe(0x7c00);
    expect(numberToFloat16Bits(2 ** -25)).toBe(0x0000); // tie between 0 and the smallest subnormal → 0
    expect(numberToFloat16Bits(3 * 2 ** -25)).toBe(0x0002);
    expect(numberToFloat16Bits(Number.NaN) & 0x7c00).toBe(0x7c00);
  });
});

describe('reading F32 / F16 / BF16 files written by torch', () => {
  const expected = JSON.parse(readFileSync(join(dtypeFixtures, 'values.json'), 'utf8')) as {
    shape: number[];
    input: (number | string)[];
    bits: Record<string, number[]>;
  };
  const input = Float32Array.from(
    expected.input.map((value) => (typeof value === 'number' ? value : Number(value.replace('inf', 'Infinity')))),
  );

  for (const dtype of ['f32', 'f16', 'bf16']) {
    it(`${dtype}: loads to the same float32 bits as torch's conversion`, () => {
      const tensor = readSafetensors(join(dtypeFixtures, `values-${dtype}.safetensors`)).get('values')!;
      expect(tensor.shape).toEqual(expected.shape);
      expect(bitsOf(tensor.data)).toEqual(expected.bits[dtype]);
    });

    it(`${dtype}: encoding the float32 input gives torch's file byte for byte (any NaN code for NaN)`, () => {
      const torchFile = readFileSync(join(dtypeFixtures, `values-${dtype}.safetensors`));
      const ours = encodeSafetensors(new Map([['values', { shape: expected.shape, data: input }]]), {
        dtype: dtype.toUpperCase() as 'F32' | 'F16' | 'BF16',
        metadata: { format: 'pt' },
      });
      expect(ours.length).toBe(torchFile.length);
      const width = dtype === 'f32' ? 4 : 2;
      const dataStart = ours.length - input.length * width;
      expect(ours.subarray(0, dataStart).equals(torchFile.subarray(0, dataStart))).toBe(true);
      // torch writes bfloat16 NaN as 0xffff and we write the canonical 0x7fc0; both are NaN.
      const code = (bytes: Buffer, i: number): number =>
        width === 4 ? bytes.readUInt32LE(dataStart + 4 * i) : bytes.readUInt16LE(dataStart + 2 * i);
      for (let i = 0; i < input.length; i++) {
        if (Number.isNaN(input[i])) continue;
        expect([i, code(ours, i)]).toEqual([i, code(torchFile, i)]);
      }
      expect(input.some(Number.isNaN)).toBe(true);
    });
  }
});

describe('writing', () => {
  const tensors = new Map<string, StoredTensor>([
    ['a', { shape: [2, 3], data: Float32Array.from([1, -2, 3.5, 1e-40, Infinity, -0]) }],
    ['b.weight', { shape: [1], data: Float32Array.from([Math.PI]) }],
    ['empty', { shape: [0, 4], data: new Float32Array(0) }],
  ]);

  it('round-trips F32 bit-exactly, NaN payloads included', () => {
    const withNaN = new Float32Array(4);
    new Uint32Array(withNaN.buffer).set([0x7fc00001, 0xffc12345, 0x7f800000, 0x00000001]);
    const all = new Map(tensors).set('nan', { shape: [4], data: withNaN });
    const file = join(scratch, 'roundtrip.safetensors');
    writeSafetensors(file, all);
    const back = readSafetensors(file);
    expect([...back.keys()]).toEqual([...all.keys()]);
    for (const [name, tensor] of all) {
      expect(back.get(name)!.shape).toEqual(tensor.shape);
      expect(bitsOf(back.get(name)!.data)).toEqual(bitsOf(tensor.data));
    }
  });

  it('pads the header with spaces so the data starts 8-byte aligned', () => {
    const bytes = encodeSafetensors(tensors, { metadata: { format: 'pt' } });
    const headerLength = Number(bytes.readBigUInt64LE(0));
    expect((8 + headerLength) % 8).toBe(0);
    const header = bytes.subarray(8, 8 + headerLength).toString('utf8');
    expect(header.trimEnd().endsWith('}')).toBe(true);
    expect(header.slice(header.trimEnd().length)).toMatch(/^ *$/);
    expect(JSON.parse(header).__metadata__).toEqual({ format: 'pt' });
  });

  it('refuses data that does not fit its shape', () => {
    const bad = new Map([['w', { shape: [2, 2], data: new Float32Array(3) }]]);
    expect(() => encodeSafetensors(bad)).toThrow(/tensor "w".*\[2,2\] needs 4 values, data has 3/);
  });
});

describe('bad files', () => {
  const tensors = new Map<string, StoredTensor>([
    ['first', { shape: [4], data: new Float32Array(4).fill(1) }],
    ['second', { shape: [8], data: new Float32Array(8).fill(2) }],
  ]);

  it('names the file and the tensor that a truncated file cuts off', () => {
    const file = join(scratch, 'truncated.safetensors');
    writeSafetensors(file, tensors);
    truncateSync(file, readFileSync(file).length - 4);
    expect(() => readSafetensors(file)).toThrow(
      /truncated\.safetensors: tensor "second" ends at data byte 48 but the file has only 44/,
    );
  });

  it('names a file whose header runs past its end', () => {
    const file = join(scratch, 'short-header.safetensors');
    const bytes = Buffer.alloc(16);
    bytes.writeBigUInt64LE(1000n, 0);
    writeFileSync(file, bytes);
    expect(() => readSafetensorsHeader(file)).toThrow(
      /short-header\.safetensors: header of 1000 bytes runs past the end/,
    );
  });

  it('names an unsupported dtype', () => {
    const file = join(scratch, 'int.safetensors');
    const header = Buffer.from(
      JSON.stringify({ ids: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }).padEnd(56, ' '),
    );
    const bytes = Buffer.alloc(8 + header.length + 8);
    bytes.writeBigUInt64LE(BigInt(header.length), 0);
    header.copy(bytes, 8);
    writeFileSync(file, bytes);
    expect(() => readSafetensors(file)).toThrow(
      /int\.safetensors: tensor "ids" has dtype I64; supported dtypes are F32, F16, BF16/,
    );
  });

  it('names offsets that disagree with the shape', () => {
    const file = join(scratch, 'offsets.safetensors');
    const header = Buffer.from(
      JSON.stringify({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }).padEnd(56, ' '),
    );
    const bytes = Buffer.alloc(8 + header.length + 8);
    bytes.writeBigUInt64LE(BigInt(header.length), 0);
    header.copy(bytes, 8);
    writeFileSync(file, bytes);
    expect(() => readSafetensors(file)).toThrow(
      /offsets\.safetensors: tensor "w" \(F32 \[3\]\) should take 12 bytes, its offsets give 8/,
    );
  });

  /** A file with this header (padded to 8 bytes) and `dataBytes` bytes of data after it. */
  const rawFile = (name: string, header: Record<string, unknown>, dataBytes: number): string => {
    const file = join(scratch, name);
    const text = JSON.stringify(header);
    const headerBytes = Buffer.from(text.padEnd(Math.ceil(text.length / 8) * 8, ' '));
    const bytes = Buffer.alloc(8 + headerBytes.length + dataBytes);
    bytes.writeBigUInt64LE(BigInt(headerBytes.length), 0);
    headerBytes.copy(bytes, 8);
    writeFileSync(file, bytes);
    return file;
  };

  it.each([
    // [case, header entries as { name: [shape, begin, end] }, data bytes, error]
    [
      'overlap',
      { a: [[4], 0, 16], b: [[4], 8, 24] },
      24,
      /overlap\.safetensors: tensor "b" \(data bytes 8\.\.24\) overlaps tensor "a", which ends at byte 16/,
    ],
    [
      'alias',
      { a: [[4], 0, 16], b: [[4], 0, 16] },
      16,
      /alias\.safetensors: tensor "b" \(data bytes 0\.\.16\) overlaps tensor "a"/,
    ], // two names, one range
    [
      'gap',
      { a: [[4], 0, 16], b: [[4], 20, 36] },
      36,
      /gap\.safetensors: 4 unused data bytes between tensor "a" \(ends at byte 16\) and tensor "b"/,
    ],
    [
      'late-start',
      { a: [[4], 8, 24] },
      24,
      /late-start\.safetensors: 8 unused data bytes between the start of the data section and tensor "a"/,
    ],
    [
      'trailing',
      { a: [[4], 0, 16] },
      20,
      /trailing\.safetensors: the data section has 20 bytes but the last tensor "a" ends at byte 16/,
    ],
    [
      'int-size',
      { a: [[4], 0, 16], ids: [[1], 16, 20, 'I64'] },
      20,
      /int-size\.safetensors: tensor "ids" \(I64 \[1\]\) should take 8 bytes, its offsets give 4/,
    ],
  ] as const)(
    'refuses a layout with %s, naming the file and tensors (as the reference validate does)',
    (name, layout, dataBytes, error) => {
      const header = Object.fromEntries(
        Object.entries(layout).map(([tensor, [shape, begin, end, dtype]]) => [
          tensor,
          { dtype: dtype ?? 'F32', shape, data_offsets: [begin, end] },
        ]),
      );
      const file = rawFile(`${name}.safetensors`, header, dataBytes);
      expect(() => readSafetensorsHeader(file)).toThrow(error);
      expect(() => readSafetensors(file, ['a'])).toThrow(error);
    },
  );

  it('accepts tensors listed out of order, and empty tensors, when they tile the data', () => {
    const file = rawFile(
      'unordered.safetensors',
      {
        b: { dtype: 'F32', shape: [2], data_offsets: [16, 24] },
        empty: { dtype: 'F32', shape: [0], data_offsets: [16, 16] },
        a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
      },
      24,
    );
    expect([...readSafetensors(file).keys()].sort()).toEqual(['a', 'b', 'empty']);
  });

  it('reads only the requested tensors and names a missing one', () => {
    const file = join(scratch, 'subset.safetensors');
    writeSafetensors(file, tensors);
    expect([...readSafetensors(file, ['second']).keys()]).toEqual(['second']);
    expect(() => readSafetensors(file, ['third'])).toThrow(/subset\.safetensors: has no tensor "third"/);
  });
});
