/*
 * Reading a safetensors file held in memory (readSafetensorsBytes, as a browser tab reads a picked
 * model): the same tensors as the file reader gives for the TinyStories fixture, and the same
 * header checks for a truncated or stray-byte file.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readSafetensorsBytes } from './safetensors-decode.js';
import { encodeSafetensors, readSafetensors } from './safetensors.js';

const fixture = fileURLToPath(
  new URL('../../../shared/fixtures/models/tinystories-656k/model.safetensors', import.meta.url),
);

describe('readSafetensorsBytes', () => {
  it('reads the fixture as the file reader does', () => {
    const fromBytes = readSafetensorsBytes(new Uint8Array(readFileSync(fixture)), 'model.safetensors');
    const fromFile = readSafetensors(fixture);
    expect([...fromBytes.keys()]).toEqual([...fromFile.keys()]);
    for (const [name, tensor] of fromFile) expect(fromBytes.get(name)).toEqual(tensor);
  });

  it('refuses a truncated file and stray bytes, naming the file', () => {
    const bytes = new Uint8Array(encodeSafetensors(new Map([['w', { shape: [2], data: new Float32Array([1, 2]) }]])));
    expect(readSafetensorsBytes(bytes, 'x.safetensors').get('w')?.data).toEqual(new Float32Array([1, 2]));
    expect(() => readSafetensorsBytes(bytes.subarray(0, bytes.length - 4), 'x.safetensors')).toThrow(
      /^x\.safetensors: tensor "w" ends at data byte 8 but the file has only 4 data bytes/,
    );
    const longer = new Uint8Array(bytes.length + 4);
    longer.set(bytes);
    expect(() => readSafetensorsBytes(longer, 'x.safetensors')).toThrow(
      /^x\.safetensors: the data section has 12 bytes/,
    );
    expect(() => readSafetensorsBytes(bytes.subarray(0, 5), 'x.safetensors')).toThrow(/too short/);
  });
});
