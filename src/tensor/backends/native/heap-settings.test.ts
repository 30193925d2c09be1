/**
 * The native backend's malloc settings (heap-addon.c), in child processes so that the process-wide setting
 * and the forced garbage collection stay out of the other tests: a 64 MiB array allocated, written and freed
 * again faults its pages in once with the settings, and every time with GRPO_NATIVE_RETAIN_FREED=0
 * (glibc's default: a fresh mmap each time). Linux and glibc only (minor page faults are counted there).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeAddonStatus } from './native-backend.js';

const here = (file: string) => JSON.stringify(fileURLToPath(new URL(file, import.meta.url)));
const child = `
import { loadNativeBackend } from ${here('./native-backend.ts')};
import { uninitializedFloats } from ${here('../../uninitialized.ts')};
loadNativeBackend();
const faults = [];
for (let i = 0; i < 6; i++) {
  const before = process.resourceUsage().minorPageFault;
  let array = uninitializedFloats(16 << 20);
  array.fill(1);
  array = null;
  globalThis.gc();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20); // V8 may free the memory on another thread
  faults.push(process.resourceUsage().minorPageFault - before);
}
console.log(JSON.stringify(faults));
`;

const folder = mkdtempSync(join(tmpdir(), 'grpo-heap-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Page faults of each of the child's six allocate-write-free rounds. */
function faultsPerRound(retain: '0' | undefined): number[] {
  const script = join(folder, 'child.mts');
  writeFileSync(script, child);
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
    encoding: 'utf8',
    env: { ...process.env, GRPO_NATIVE_RETAIN_FREED: retain, GRPO_QUIET: '1' },
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as number[];
}

const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
const measurable = nativeAddonStatus().available && Boolean(report?.header?.glibcVersionRuntime);
if (!measurable) {
  describe('native backend malloc settings', () => {
    it('are only measured with the addon on glibc (set GRPO_REQUIRE_NATIVE=1 to require the addon)', () => {
      expect(process.env.GRPO_REQUIRE_NATIVE === '1' && nativeAddonStatus().available).toBe(false);
    });
  });
} else {
  describe('native backend malloc settings', () => {
    it('a freed 64 MiB array is reused without page faults, unless GRPO_NATIVE_RETAIN_FREED=0', () => {
      const pages = (16 << 22) / 4096;
      const retained = faultsPerRound(undefined);
      // The least of the later rounds: on a busy machine a free can still land after the next allocation.
      expect(Math.min(...retained.slice(1))).toBeLessThan(pages / 10);
      const released = faultsPerRound('0');
      expect(Math.min(...released.slice(1))).toBeGreaterThan(pages / 2);
    });
  });
}
