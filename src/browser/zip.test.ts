/*
 * The page's store-only zip: CRC-32 against zlib's, and an archive that Info-ZIP's unzip tests and
 * extracts to the same bytes (names with a folder, an empty file).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32, storeZip } from './zip.js';

const hasUnzip = (() => {
  try {
    execFileSync('unzip', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('storeZip', () => {
  it('computes zlib’s CRC-32', () => {
    for (const text of ['', 'a', 'The quick brown fox', 'ü'.repeat(1000)]) {
      const bytes = new TextEncoder().encode(text);
      expect(crc32(bytes)).toBe(zlibCrc32(bytes));
    }
  });

  it.skipIf(!hasUnzip)('writes an archive that unzip verifies and extracts byte for byte', () => {
    const files = new Map<string, Uint8Array>([
      ['model/config.json', new TextEncoder().encode('{"a": 1}\n')],
      ['model/model.safetensors', Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7919) & 0xff)],
      ['model/empty.txt', new Uint8Array(0)],
    ]);
    const folder = mkdtempSync(join(tmpdir(), 'grpo-zip-'));
    try {
      writeFileSync(join(folder, 'a.zip'), storeZip(files, new Date(2024, 4, 17, 13, 45, 58)));
      expect(execFileSync('unzip', ['-t', join(folder, 'a.zip')], { encoding: 'utf8' })).toMatch(/No errors detected/);
      execFileSync('unzip', ['-q', join(folder, 'a.zip'), '-d', join(folder, 'out')]);
      for (const [name, bytes] of files) expect(new Uint8Array(readFileSync(join(folder, 'out', name)))).toEqual(bytes);
      const listing = execFileSync('unzip', ['-l', join(folder, 'a.zip')], { encoding: 'utf8' });
      expect(listing).toMatch(/2024-05-17 13:45|05-17-2024 13:45/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
